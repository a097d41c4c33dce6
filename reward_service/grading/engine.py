"""The scoring engine: worker processes, deadlines, screening, fallbacks.

Grading runs in worker processes (driven by `grading.pool`, running
`grading.worker`), never on the event loop nor in threads, so math_verify
keeps its signal-based timeouts and nothing it does can stall the server.
Each grading has a hard deadline (`grading.deadlines`); a worker that
overruns is killed and replaced and the request gets the fallback reward
with status `timeout`. A worker that dies (OOM, SIGKILL) has its task
retried once on a fresh worker.

Scorer options reach a sample from three places; per option, the first that
sets it wins: the sample's label object, the request's URL query (checked by
the app against the route's scorer), the deployment's `scorer_options`
(checked here at start-up). A sample whose label object picks another scorer
than the route's takes only the URL options that scorer accepts, value
included: a URL set up for one scorer must not turn samples of another into
errors, and options are per scorer, so one scorer's meaning of a name is no
other's.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import multiprocessing
import threading
import time
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Literal

from reward_service.errors import (
    DeadlineExceeded,
    InvalidSetting,
    Overloaded,
    PoolClosed,
    ScorerLoadError,
    TaskFailed,
    WorkerDied,
)
from reward_service.grading import worker
from reward_service.grading.deadlines import resolve_deadlines
from reward_service.grading.pool import WorkerPool
from reward_service.grading.sample import Sample
from reward_service.logs import request_id
from reward_service.scorers import GradingLimits, Score, ScorerRegistry, Status
from reward_service.scorers.base import (
    JSON,
    NO_OPTIONS,
    AsyncScorer,
    ScorerSettings,
    ScoringInput,
    StartupCheck,
    echo,
)
from reward_service.scorers.composite import read_composites
from reward_service.settings import Settings

log = logging.getLogger("reward_service.grading.engine")

UNKNOWN_SCORER = "unknown"
"""`Graded.scorer` of a sample whose label names no registered scorer."""


MAX_GROUP_TASK = 64
"""Most answers of one group graded in one worker task (`grade_many(together=True)`)."""


@dataclass(frozen=True)
class Graded:
    """A finished grading, as the app reports it."""

    score: Score
    scorer: str
    """A registered scorer's name, or `UNKNOWN_SCORER`: never a client's string (metrics)."""
    elapsed_ms: float

    @property
    def reward(self) -> float:
        return self.score.reward

    def detail(self) -> dict[str, JSON]:
        """The detailed answer object (`?detail=1`)."""
        return {
            **self.score.details,
            "reward": self.score.reward,
            "status": self.score.status.value,
            "scorer": self.scorer,
            "elapsed_ms": round(self.elapsed_ms, 3),
            "loss_multiplier": self.score.status.loss_multiplier,
        }


class ScoringEngine:
    """Grades samples in worker processes under a hard deadline each."""

    def __init__(
        self,
        settings: Settings,
        *,
        registry: ScorerRegistry | None = None,
        on_graded: Callable[[Graded], None] | None = None,
        on_restart: Callable[[str], None] | None = None,
        on_spare: Callable[[str], None] | None = None,
        only: Collection[str] | None = None,
        start_method: Literal["forkserver", "fork"] = "forkserver",
    ) -> None:
        """`only`: serve just these scorers (and the default one), checking, importing and
        opening nothing else.

        `start_method`: how a worker process starts. `forkserver` (the service): forked
        from a clean process that preloaded `grading.worker` and the scorers' modules, so a
        worker holds nothing of the server. `fork` (a one-shot command, `reward-service
        score`): forked from this process, which has imported the worker's room already,
        sparing a fresh interpreter and its imports; the start-up checks then run before
        any worker starts, on this thread, since a forked process must inherit no thread;
        and its worker is not warmed (`Scorer.warm`): it grades one answer, which would pay
        the same first-use costs the warm-up does.
        """
        self.settings = settings
        self._on_graded = on_graded or (lambda graded: None)
        self._on_restart = on_restart or (lambda cause: None)
        self._on_spare = on_spare or (lambda event: None)
        self.limits = GradingLimits(
            timeout_s=settings.grader_timeout_s,
            cache_size=settings.gold_cache_size,
            worker_memory_mb=settings.worker_memory_mb,
        )
        self.registry = registry or ScorerRegistry.discover(
            self.limits, settings.extra_scorers, composites=read_composites(settings.composites)
        )
        self._only = None if only is None else sorted({*only, settings.default_scorer})
        self._start_method = start_method
        if self._only is not None:
            self.registry = self.registry.only(self._only)
        self._check_composites()
        self._check_scorer_options()
        self.checks: dict[str, StartupCheck] = {}
        """Each scorer's start-up check that ran, by name (`GET /scorers`)."""
        self._pool: WorkerPool | None = None
        self._opened: list[AsyncScorer] = []
        self._bounds: dict[str, asyncio.Semaphore] = {}
        self._draining = False
        self.in_flight = 0

    @property
    def ready(self) -> bool:
        """True while every worker is up and new work is taken."""
        return not self._draining and self._pool is not None and self._pool.alive > 0

    @property
    def pool(self) -> WorkerPool | None:
        return self._pool

    async def start(self) -> None:
        """Read every scorer's settings, run its start-up check, start the workers (each
        opens its CPU-bound scorers) and open the I/O-bound ones.

        Raises `InvalidSetting` for a scorer setting it refuses, and whatever a
        required start-up check raises (`SandboxUnavailable`): start-up stops.
        """
        self.registry.require(self.settings.default_scorer)
        scorer_settings = self._scorer_settings()
        deadlines = resolve_deadlines(self.settings, self.registry)
        self.limits = replace(self.limits, deadlines=deadlines)
        self.registry = self.registry.configured(self.limits, scorer_settings)
        if self._start_method == "fork":
            self._run_checks(scorer_settings)  # here, before any fork: no thread for it
            checks = asyncio.ensure_future(asyncio.sleep(0))
        else:
            # The checks (a sandbox probe, toolchains' versions, checker data) take a second
            # or two of waiting on other processes, as does the pool's start: side by side,
            # in a thread beside the loop. A required check that fails still stops start-up.
            checks = asyncio.ensure_future(asyncio.to_thread(self._run_checks, scorer_settings))
        pool = self._new_pool(scorer_settings)
        starting = asyncio.ensure_future(pool.start())
        try:
            await asyncio.wait({checks, starting}, return_when=asyncio.FIRST_EXCEPTION)
            if checks.done():
                checks.result()
            await starting
            await checks
        except BaseException:
            starting.cancel()
            await asyncio.gather(starting, checks, return_exceptions=True)
            await pool.close()
            raise
        self._pool = pool
        for scorer in self.registry.build(AsyncScorer):
            assert isinstance(scorer, AsyncScorer)
            scorer.use_workers(self._grade_in_worker)
            await scorer.open()
            self._opened.append(scorer)
            self._bounds[scorer.name] = asyncio.Semaphore(scorer.concurrency)
        log.info("grading pool ready", extra={"workers": self.settings.workers})

    def _new_pool(self, scorer_settings: dict[str, ScorerSettings]) -> WorkerPool:
        """The worker pool, not yet started, its workers set up as `grading.worker` says."""
        context = multiprocessing.get_context(self._start_method)
        if self._start_method == "forkserver":
            context.set_forkserver_preload([worker.__name__, *self.registry.modules()])
        elif threading.active_count() > 1:
            raise RuntimeError("workers cannot fork from a process running other threads")
        config = worker.WorkerConfig(
            limits=self.limits,
            memory_mb=self.settings.worker_memory_mb,
            nice=self.settings.worker_nice,
            extra_scorers=self.settings.extra_scorers,
            composites=self.registry.composites(),
            scorer_settings=scorer_settings,
            only=self._only,
            warm=self._start_method == "forkserver",
        )
        return WorkerPool(
            self.settings.workers,
            functools.partial(worker.set_up, config=config),
            spare=self.settings.spare_workers,
            max_tasks=self.settings.worker_max_tasks,
            context=context,
            on_restart=self._on_restart,
            on_spare=self._on_spare,
        )

    def _scorer_settings(self) -> dict[str, ScorerSettings]:
        """Each scorer's own settings, read and validated (`InvalidSetting` if refused)."""
        found = {}
        for name in self.registry.targets():
            model = self.registry.scorer_class(name).settings_model
            if model is not None:
                owner = self.registry.scorer_class(name).settings_name or name
                found[name] = self.settings.scorer_settings(owner, model)
                if owner != name:
                    self._refuse_own_settings(name, owner)
        return found

    def _refuse_own_settings(self, name: str, owner: str) -> None:
        """A scorer reading `owner`'s settings has none of its own: setting any is refused,
        never silently ignored."""
        try:
            self.settings.scorer_settings(name, ScorerSettings)
        except InvalidSetting:
            raise InvalidSetting(
                f"scorer {name!r} reads the settings of {owner!r}: set "
                f"REWARD_{owner.upper()}__<FIELD>, not REWARD_{name.upper()}__<FIELD>"
            ) from None

    def _run_checks(self, scorer_settings: Mapping[str, ScorerSettings]) -> None:
        """Each scorer's start-up check, logged; a required one that fails raises."""
        for name in self.registry.targets():
            check = self.registry.scorer_class(name).startup_check(
                scorer_settings.get(name), self.limits
            )
            if check is None:
                continue
            self.checks[name] = check
            extra = {"scorer": name, "check": check.report()}
            outcome = "failed" if check.configured else "not configured"
            said = "start-up check" if check.ok else f"start-up check {outcome}"
            level = logging.getLevelNamesMapping()[check.level.upper()]
            log.log(level, "%s %s: %s", name, said, check.summary, extra=extra)

    def _check_composites(self) -> None:
        """Stop start-up when a composite names what no worker can grade (`InvalidSetting`)."""
        try:
            self.registry.check_composites()
        except ScorerLoadError as exc:
            raise InvalidSetting(f"REWARD_COMPOSITES: {exc}") from None

    def _check_scorer_options(self) -> None:
        """Stop start-up when `scorer_options` names an unknown scorer, option or value."""
        for name, options in self.settings.scorer_options.items():
            if name not in self.registry:
                known = ", ".join(self.registry.names())
                raise InvalidSetting(
                    f"REWARD_SCORER_OPTIONS names unknown scorer {name!r}; known scorers: {known}"
                )
            cls = self.registry.scorer_class(name)
            for option, value in options.items():
                problem = cls.option_problem(option, value)
                if problem is not None:
                    raise InvalidSetting(f"REWARD_SCORER_OPTIONS: {problem}")

    def drain(self) -> None:
        """Stop reporting ready; work already accepted still completes."""
        self._draining = True

    async def close(self) -> None:
        """Stop the workers once their current gradings finish, then close the I/O-bound
        scorers."""
        self._draining = True
        pool, self._pool = self._pool, None
        if pool is not None:
            await pool.close()
        opened, self._opened = self._opened, []
        for scorer in opened:
            try:
                await scorer.close()
            except Exception:  # one scorer's failed close must not keep the others open
                log.exception("scorer close failed", extra={"scorer": scorer.name})

    async def grade(
        self, sample: Sample, scorer: str | None = None, options: Mapping[str, JSON] = NO_OPTIONS
    ) -> Graded:
        """Grade one sample with `sample.scorer`, else `scorer`, else the default.

        `options` are the request's (URL) options, valid for `scorer`.
        """
        if self.in_flight >= self.settings.max_queue:
            raise Overloaded("grading queue is full", retry_after_s=1)
        [graded] = await self._grade_all([sample], scorer, options)
        return graded

    async def grade_many(
        self,
        samples: Sequence[Sample | None],
        scorer: str | None = None,
        options: Mapping[str, JSON] = NO_OPTIONS,
        *,
        together: bool = False,
    ) -> list[Graded]:
        """Grade a batch in input order; a None item is graded as an error.

        The whole batch is admitted or refused (503) at once, so a client
        never gets half a batch. With `together` (one prompt's group), the answers of
        a scorer that `grades_groups_together` go to one worker in one task, under one
        answer's deadline, so its caches grade each distinct final answer once; if that
        task fails (deadline, a worker's death), each answer is graded again alone.
        """
        if samples and self.in_flight + len(samples) > self.settings.max_queue:
            raise Overloaded(
                f"batch of {len(samples)} does not fit the grading queue", retry_after_s=1
            )
        return await self._grade_all(samples, scorer, options, together)

    def options_for(self, name: str, request: Mapping[str, JSON]) -> Mapping[str, JSON]:
        """The options scorer `name` takes before a sample's own: settings, then `request`'s.

        Of the request's options only those `name` accepts apply (see the module docstring).
        """
        if name not in self.registry:
            return NO_OPTIONS
        defaults = self.settings.scorer_options.get(name)
        if not request:
            return defaults or NO_OPTIONS
        scorer = self.registry.scorer_class(name)
        accepted = {k: v for k, v in request.items() if scorer.option_problem(k, v) is None}
        return {**defaults, **accepted} if defaults else accepted

    async def _grade_all(
        self,
        samples: Sequence[Sample | None],
        scorer: str | None,
        options: Mapping[str, JSON],
        together: bool = False,
    ) -> list[Graded]:
        """Precheck each sample, dispatch the rest in chunks per scorer, keep order."""
        started = time.perf_counter()
        default = scorer or self.settings.default_scorer
        names = [(s.scorer or default) if s is not None else default for s in samples]
        if options or self.settings.scorer_options:
            shared = {name: self.options_for(name, options) for name in set(names)}
            samples = [
                _with_options(s, shared[name]) if s is not None else None
                for s, name in zip(samples, names, strict=True)
            ]
        scores: list[Score | None] = [
            self._precheck(s, name) if s is not None else Score.error("item is not an object")
            for s, name in zip(samples, names, strict=True)
        ]
        pending: dict[str, list[int]] = {}
        to_grade: dict[int, Sample] = {}
        for index, (sample, score) in enumerate(zip(samples, scores, strict=True)):
            if sample is not None and score is None:
                pending.setdefault(names[index], []).append(index)
                to_grade[index] = sample
        chunks = [
            (name, indexes[i : i + size])
            for name, indexes in pending.items()
            for size in [self._chunk_size(name, len(indexes), together)]
            for i in range(0, len(indexes), size)
        ]
        results = await asyncio.gather(
            *(
                self._run(name, [to_grade[i] for i in chunk], alone_on_failure=together)
                for name, chunk in chunks
            )
        )
        for (_, chunk), chunk_scores in zip(chunks, results, strict=True):
            for index, score in zip(chunk, chunk_scores, strict=True):
                scores[index] = score
        elapsed_ms = (time.perf_counter() - started) * 1000
        graded = [
            Graded(
                score=self._with_fallback(score),
                scorer=name if name in self.registry else UNKNOWN_SCORER,
                elapsed_ms=elapsed_ms,
            )
            for score, name in zip(scores, names, strict=True)
            if score is not None
        ]
        for item in graded:
            self._on_graded(item)
        return graded

    def _chunk_size(self, name: str, count: int, together: bool = False) -> int:
        """Answers per task: the scorer's batch size in a worker (a group's answers, up to
        `MAX_GROUP_TASK`, when `together` and the scorer gains from it); all of them on
        the event loop, where each still has its own deadline."""
        cls = self.registry.scorer_class(name)
        if issubclass(cls, AsyncScorer):
            return count
        if together and cls.grades_groups_together:
            return max(cls.batch_size, min(count, MAX_GROUP_TASK))
        return cls.batch_size

    def _with_fallback(self, score: Score) -> Score:
        if score.status in (Status.TIMEOUT, Status.ERROR, Status.JUDGE_FAILED):
            return Score(self.settings.fallback_reward, score.status, score.details)
        return score

    def _precheck(self, sample: Sample, name: str) -> Score | None:
        """Answers settled without a worker: unknown scorer, oversized, hazardous."""
        if name not in self.registry:
            known = ", ".join(self.registry.names())
            return Score.error(f"unknown scorer {echo(name)}; known scorers: {known}")
        if len(sample.response) > self.settings.max_answer_chars:
            return Score.no_answer(f"response longer than {self.settings.max_answer_chars} chars")
        try:
            return self.registry.scorer_class(name).screen(
                sample.response, sample.label, sample.options
            )
        except Exception:  # a scorer's bug in screen: the worker grades the answer instead
            log.exception("scorer screen failed; grading in a worker", extra={"scorer": name})
            return None

    async def _run(
        self, name: str, samples: list[Sample], *, alone_on_failure: bool = False
    ) -> list[Score]:
        """Grade samples of one scorer in one worker task, under one deadline; with
        `alone_on_failure`, a task of several that fails is graded again answer by answer."""
        if self._pool is None:
            raise Overloaded("service is shutting down", retry_after_s=5)
        if issubclass(self.registry.scorer_class(name), AsyncScorer):
            return await self._run_async(name, samples)
        items = [(s.prompt, s.response, s.label, dict(s.options)) for s in samples]
        deadline_s = self.limits.deadlines[name]
        self.in_flight += len(samples)
        try:
            affinity = _affinity(name, samples[0].label)
            context = {
                "request_id": request_id.get(),
                "scorer": name,
                "answer_excerpt": excerpt(samples[0].response),
            }
            result: list[Score] = await self._pool.run(
                worker.grade, (name, items), deadline_s, affinity=affinity, context=context
            )
            return result
        except PoolClosed:
            raise Overloaded("service is shutting down", retry_after_s=5) from None
        except DeadlineExceeded:
            failure = Score.timeout(deadline_s)
            event = "grading deadline passed; worker killed and replaced"
        except WorkerDied as exc:
            failure = Score.error(f"worker died ({exc})")
            event = "grading worker died on this answer twice"
        except TaskFailed as exc:
            failure = Score.error(str(exc))
            event = "grading failed"
        finally:
            self.in_flight -= len(samples)
        if alone_on_failure and len(samples) > 1:
            log.info(
                "a group's grading task failed; grading its answers alone",
                extra={"scorer": name, "answers": len(samples), "status": failure.status.value},
            )
            alone = await asyncio.gather(*(self._run(name, [sample]) for sample in samples))
            return [score for scores in alone for score in scores]
        log.warning(
            event,
            extra={
                "scorer": name,
                "answers": len(samples),
                "answer_excerpt": excerpt(samples[0].response),
            },
        )
        return [failure] * len(samples)

    async def _run_async(self, name: str, samples: list[Sample]) -> list[Score]:
        """Grade samples of an I/O-bound scorer on the event loop, each under its deadline
        and within the scorer's concurrency bound (`boxed_<name>` shares `<name>`'s)."""
        scorer = self.registry.get(name)
        assert isinstance(scorer, AsyncScorer)
        bound = self._bounds[self.registry.base_of(name)]
        deadline_s = self.limits.deadlines[name]

        async def one(sample: Sample) -> Score:
            async with bound:
                return await scorer.score(
                    sample.prompt, sample.response, sample.label, dict(sample.options)
                )

        async def timed(sample: Sample) -> Score:
            try:
                return await asyncio.wait_for(one(sample), deadline_s)
            except Overloaded:  # the scorer asks the client to come back later (503)
                raise
            except TimeoutError:
                return Score.timeout(deadline_s)
            except Exception as exc:  # a scorer bug costs its answer, never the service
                log.warning(
                    "async scorer raised", extra={"scorer": name, "error": type(exc).__name__}
                )
                return Score.error(f"scorer raised {type(exc).__name__}")

        self.in_flight += len(samples)
        try:
            return list(await asyncio.gather(*(timed(sample) for sample in samples)))
        finally:
            self.in_flight -= len(samples)

    async def _grade_in_worker(self, name: str, item: ScoringInput) -> Score:
        """An async scorer's request for CPU-bound scorer `name`'s grade of `item`
        (`AsyncScorer.grade_in_worker`): screened and run in the pool as any answer."""
        if name not in self.registry or issubclass(self.registry.scorer_class(name), AsyncScorer):
            return Score.error(f"{echo(name)} is not a CPU-bound scorer")
        prompt, response, label, options = item
        sample = Sample(response, label, prompt=prompt, scorer=name, options=options)
        settled = self._precheck(sample, name)
        if settled is not None:
            return settled
        [score] = await self._run(name, [sample])
        return score


def _affinity(name: str, label: JSON) -> int | None:
    """Which worker the answers to `label` prefer (its caches hold the label), or None for
    a label nested too deep to print: it cannot be sent to a worker either, and fails there
    as `TaskFailed`."""
    try:
        return hash((name, repr(label)))
    except RecursionError:
        return None


def _with_options(sample: Sample, options: Mapping[str, JSON]) -> Sample:
    """`sample` with `options` under its own (a label object's keys win)."""
    return replace(sample, options={**options, **sample.options}) if options else sample


def excerpt(text: str, limit: int = 160) -> str:
    """A short, log-safe view of an answer: its tail, control characters escaped."""
    tail = text[-limit:]
    return ("..." if len(text) > limit else "") + tail.encode("unicode_escape").decode("ascii")
