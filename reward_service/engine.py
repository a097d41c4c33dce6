"""The scoring engine: worker processes, deadlines, screening, fallbacks.

Grading runs in a pebble process pool, never on the event loop nor in
threads, so math_verify keeps its signal-based timeouts and nothing it does
can stall the server. Each grading has a hard deadline; a worker that
overruns is killed and replaced and the request gets the fallback reward
with status `timeout`. A worker that dies (OOM, SIGKILL) has its task
retried once on a fresh worker.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import multiprocessing
import resource
import time
from dataclasses import dataclass
from typing import Any

import pebble

from reward_service.errors import Overloaded
from reward_service.samples import Sample
from reward_service.scorers import GradingLimits, Score, ScorerRegistry, Status
from reward_service.scorers.base import JSON
from reward_service.settings import Settings

log = logging.getLogger("reward_service.engine")

_registry: ScorerRegistry | None = None


def _worker_init(limits: GradingLimits, memory_mb: int) -> None:
    """Runs once in each worker: cap its memory, build and warm the scorers."""
    global _registry
    cap = memory_mb * 1024 * 1024
    resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
    _registry = ScorerRegistry.discover(limits)
    _registry.load_all()


def _grade(
    scorer: str, prompt: JSON, response: str, label: JSON, options: dict[str, JSON]
) -> Score:
    """Runs in a worker: one grading, every failure turned into a status."""
    assert _registry is not None, "worker not initialised"
    try:
        return _registry.get(scorer).score(prompt, response, label, options)
    except MemoryError:
        return Score.error("worker memory cap reached")
    except Exception as exc:  # a scorer bug must cost one answer, not the worker
        return Score.error(f"scorer raised {type(exc).__name__}")


def _ping() -> bool:
    time.sleep(0.05)
    return True


@dataclass(frozen=True)
class Graded:
    """A finished grading, as the app reports it."""

    score: Score
    scorer: str
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
        }


class ScoringEngine:
    """Grades samples in worker processes under a hard deadline each."""

    def __init__(self, settings: Settings, registry: ScorerRegistry | None = None) -> None:
        self.settings = settings
        self.limits = GradingLimits(settings.grader_timeout_s, settings.gold_cache_size)
        self.registry = registry or ScorerRegistry.discover(self.limits)
        self._pool: pebble.ProcessPool | None = None
        self._warm = False
        self._draining = False
        self.in_flight = 0

    @property
    def ready(self) -> bool:
        """True once every worker is warm, while the pool runs and takes work."""
        return self._warm and not self._draining and self._pool is not None and self._pool.active

    async def start(self) -> None:
        """Start the workers and wait until each has loaded its scorers."""
        self.registry.require(self.settings.default_scorer)
        for name in self.registry.names():
            self.registry.scorer_class(name)
        context = multiprocessing.get_context("forkserver")
        context.set_forkserver_preload(["reward_service.engine", *self.registry.modules()])
        self._pool = pebble.ProcessPool(
            max_workers=self.settings.workers,
            max_tasks=self.settings.worker_max_tasks,
            initializer=_worker_init,
            initargs=(self.limits, self.settings.worker_memory_mb),
            context=context,
        )
        warmups = [self._submit(_ping, (), None) for _ in range(self.settings.workers)]
        await asyncio.gather(*warmups)
        self._warm = True
        log.info("grading pool ready", extra={"workers": self.settings.workers})

    def drain(self) -> None:
        """Stop reporting ready; work already accepted still completes."""
        self._draining = True

    async def close(self) -> None:
        """Stop the workers (after in-flight work, when drained first)."""
        self._draining = True
        pool, self._pool = self._pool, None
        if pool is not None:
            pool.close()  # type: ignore[no-untyped-call]  # pebble leaves it unannotated
            await asyncio.to_thread(pool.join, 5)
            if pool.active:
                pool.stop()  # type: ignore[no-untyped-call]
                await asyncio.to_thread(pool.join)

    def _submit(self, fn: Any, args: tuple[Any, ...], timeout: float | None) -> asyncio.Future[Any]:
        """Schedule on the pool; the asyncio future never cancels the task.

        `asyncio.wrap_future` would forward a client disconnect as a cancel,
        and pebble cancels a running task by killing its worker.
        """
        if self._pool is None:
            raise Overloaded("service is shutting down", retry_after_s=5)
        loop = asyncio.get_running_loop()
        waiter: asyncio.Future[Any] = loop.create_future()

        def _relay(done: concurrent.futures.Future[Any]) -> None:
            loop.call_soon_threadsafe(_settle, waiter, done)

        self._pool.schedule(fn, args=args, timeout=timeout).add_done_callback(_relay)
        return waiter

    async def grade(self, sample: Sample, scorer: str | None = None) -> Graded:
        """Grade one sample with `sample.scorer`, else `scorer`, else the default."""
        started = time.perf_counter()
        name = sample.scorer or scorer or self.settings.default_scorer
        score = self._precheck(sample, name)
        if score is None:
            score = await self._run(sample, name)
        if score.status in (Status.TIMEOUT, Status.ERROR):
            score = Score(self.settings.fallback_reward, score.status, score.details)
        return Graded(score, name, (time.perf_counter() - started) * 1000)

    def _precheck(self, sample: Sample, name: str) -> Score | None:
        """Answers settled without a worker: unknown scorer, oversized, hazardous."""
        if name not in self.registry:
            known = ", ".join(self.registry.names())
            return Score.error(f"unknown scorer {name!r}; known scorers: {known}")
        if len(sample.response) > self.settings.max_answer_chars:
            return Score.no_answer(f"response longer than {self.settings.max_answer_chars} chars")
        return self.registry.scorer_class(name).screen(sample.response, sample.label)

    async def _run(self, sample: Sample, name: str) -> Score:
        if self.in_flight >= self.settings.max_queue:
            raise Overloaded("grading queue is full", retry_after_s=1)
        args = (name, sample.prompt, sample.response, sample.label, dict(sample.options))
        self.in_flight += 1
        try:
            for attempt in (1, 2):
                try:
                    result: Score = await self._submit(_grade, args, self.settings.deadline_s)
                    return result
                except concurrent.futures.TimeoutError:
                    log.warning("grading deadline passed; worker replaced", extra={"scorer": name})
                    return Score(
                        0.0, Status.TIMEOUT, {"reason": f"deadline {self.settings.deadline_s} s"}
                    )
                except pebble.ProcessExpired as exc:
                    log.warning("grading worker died", extra={"scorer": name, "attempt": attempt})
                    reason = f"worker died ({exc})"
            return Score.error(reason)
        finally:
            self.in_flight -= 1


def _settle(waiter: asyncio.Future[Any], done: concurrent.futures.Future[Any]) -> None:
    if waiter.done():
        return
    if done.cancelled():
        waiter.set_result(Score.error("grading cancelled by pool shutdown"))
        return
    exc = done.exception()
    if exc is not None:
        waiter.set_exception(exc)
    else:
        waiter.set_result(done.result())
