"""The scorer contract: pure grading with no web or process code.

A scorer turns one answer into a `Score`. It never raises for an answer it
cannot read: that is a status (`no_answer`, `error`), not an exception. Two
kinds, chosen by the base class: `Scorer` (CPU-bound, synchronous, in grading
workers) and `AsyncScorer` (I/O-bound, a coroutine on the event loop with
its own concurrency bound). Both declare what `ScorerBase` holds: options,
deadline, batch size, settings of their own (`ScorerSettings`), a start-up
check (`StartupCheck`), and resources they open and close.
"""

from __future__ import annotations

import abc
import enum
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, ClassVar

from pydantic_settings import BaseSettings, SettingsConfigDict

JSON = Any
"""Any value `json.loads` can return: labels and prompts arrive as-is."""

ScoringInput = tuple[JSON, str, JSON, Mapping[str, JSON]]
"""One answer to grade: `(prompt, response, label, options)`."""

NO_OPTIONS: Mapping[str, JSON] = MappingProxyType({})
"""The options of an answer that sets none."""

_MAX_ECHO = 64


class Status(str, enum.Enum):
    """How a grading ended; `ok`, `wrong` and `compile_error` are verdicts on the answer."""

    OK = "ok"
    WRONG = "wrong"
    NO_ANSWER = "no_answer"
    COMPILE_ERROR = "compile_error"
    """The answer's program did not compile (a verdict too: the answer is wrong)."""
    TIMEOUT = "timeout"
    ERROR = "error"
    JUDGE_FAILED = "judge_failed"
    """A model judge gave no verdict (outage, limit, unreadable reply): the fallback reward."""

    @property
    def is_verdict(self) -> bool:
        """The reward says something about the answer; false for a fallback (`timeout`,
        `error`, `judge_failed`), whose reward a trainer should mask, not learn from."""
        return self not in _FALLBACKS

    @property
    def loss_multiplier(self) -> float:
        """1.0 for a verdict, 0.0 for a fallback: NeMo-RL's name for a sample's weight in
        the loss, the field every detail answer carries for trainers' masking hooks."""
        return 1.0 if self.is_verdict else 0.0


_FALLBACKS = frozenset({Status.TIMEOUT, Status.ERROR, Status.JUDGE_FAILED})


@dataclass(frozen=True)
class Score:
    """The outcome of grading one answer.

    `reward` is what the RL framework receives. `details` carries
    scorer-specific, JSON-serialisable facts (extracted answer, reason).
    """

    reward: float
    status: Status
    details: Mapping[str, JSON] = field(default_factory=dict)

    @classmethod
    def verdict(cls, correct: bool, **details: JSON) -> Score:
        """A 1.0 / 0.0 verdict, the convention of most scorers."""
        return cls(1.0 if correct else 0.0, Status.OK if correct else Status.WRONG, details)

    @classmethod
    def no_answer(cls, reason: str, reward: float = 0.0, **details: JSON) -> Score:
        """The response holds nothing the scorer can read as an answer."""
        return cls(reward, Status.NO_ANSWER, {"reason": reason, **details})

    @classmethod
    def error(cls, reason: str, reward: float = 0.0, **details: JSON) -> Score:
        """The sample cannot be graded (bad label, scorer failure)."""
        return cls(reward, Status.ERROR, {"reason": reason, **details})

    @classmethod
    def timeout(cls, deadline_s: float) -> Score:
        """The grading outlived its hard deadline of `deadline_s` seconds."""
        return cls(0.0, Status.TIMEOUT, {"reason": f"deadline {deadline_s} s"})


NOT_TEXT = Score.error("response is not a string")
"""What `Scorer.score_many` gives a response that is not a string (never one from the engine)."""


@dataclass(frozen=True)
class GradingLimits:
    """The service's limits that every scorer may honour."""

    timeout_s: int = 3
    """Whole seconds for a scorer's own timeouts (math_verify's signal.alarm)."""
    cache_size: int = 4096
    """Entries a scorer may keep in each of its caches."""
    worker_memory_mb: int = 2048
    """A grading worker's address-space cap (what its scorers and their children share)."""
    deadlines: Mapping[str, float] = field(default_factory=dict)
    """Each scorer's hard deadline in seconds, by name, as the engine resolved and enforces
    it (`reward_service.grading.deadlines`); empty for a scorer built outside an engine."""

    def deadline_for(self, scorer: type[ScorerBase]) -> float:
        """`scorer`'s hard deadline: the engine's; outside an engine (a test, a bench), the
        one it declares (`deadline_s`), for no other value is known there."""
        deadline = self.deadlines.get(scorer.name, scorer.deadline_s)
        if deadline is None:
            raise LookupError(
                f"no deadline for scorer {scorer.name!r}: it declares none and no engine "
                "resolved one (GradingLimits.deadlines)"
            )
        return deadline


WorkerGrade = Callable[[str, ScoringInput], Awaitable[Score]]
"""The engine's grading of one answer by a CPU-bound scorer, named, in a grading worker."""


class ScorerSettings(BaseSettings):
    """A scorer's own settings: each field `f` of scorer `name` is `REWARD_<NAME>__<F>`.

    A scorer declares a subclass as `settings_model`; the service's `Settings`
    reads it (`Settings.scorer_settings`) and validates it at start-up with the
    rest, so each field has one default, here.
    """

    model_config = SettingsConfigDict(frozen=True, extra="forbid")


@dataclass(frozen=True)
class StartupCheck:
    """What a scorer's start-up check found, for the start-up log and `GET /scorers`."""

    ok: bool
    summary: str
    """One line: what was checked and found (or why it failed)."""
    required: bool = False
    """A failed required check stops start-up; an optional one leaves the scorer grading
    `error` while the others serve."""
    details: Mapping[str, JSON] = field(default_factory=dict)
    configured: bool = True
    """False: the scorer is off only for want of a setting, which `summary` names (an
    optional scorer nobody configured: logged at info, not as an error)."""
    degraded: bool = False
    """True: it serves, without parts that `summary` names (missing toolchains: a warning)."""

    @property
    def level(self) -> str:
        """How loud the start-up log is about it: `error` for a configured scorer that
        failed, `warning` for one serving in part, `info` otherwise."""
        if not self.ok:
            return "error" if self.configured else "info"
        return "warning" if self.degraded else "info"

    def report(self) -> dict[str, JSON]:
        return {
            "ok": self.ok,
            "required": self.required,
            "configured": self.configured,
            "degraded": self.degraded,
            "summary": self.summary,
            **self.details,
        }


class ScorerBase(abc.ABC):
    """What every scorer declares, whichever kind: CPU-bound `Scorer`, I/O-bound `AsyncScorer`.

    The engine knows scorers only through these: their name, options, batch
    size, deadline, settings model, start-up check and screen.
    """

    name: ClassVar[str]
    """The name clients use: `POST /score/<name>`."""

    batch_size: ClassVar[int] = 1
    """Answers per `score_many` call. Above 1 (model-based scorers), the
    engine sends a batch's answers to one worker in chunks of this size, under
    one deadline; at 1 each answer is its own task, so a hostile answer can
    only ever cost itself."""

    deadline_s: ClassVar[float | None] = None
    """This scorer's hard deadline when `REWARD_SCORER_DEADLINES` names none;
    None: `REWARD_DEADLINE_S`."""

    options: ClassVar[Mapping[str, frozenset[str] | None]] = {}
    """The options this scorer reads, by name: the values it accepts, or None
    for any value. Options reach `score` from a label object's other keys,
    the scoring URL's query string and the deployment's settings; a URL or
    setting naming an option or value not listed here is refused."""

    settings_model: ClassVar[type[ScorerSettings] | None] = None
    """The scorer's own settings (`REWARD_<NAME>__<FIELD>`); None: it has none."""

    correct_is_label: ClassVar[bool] = False
    """A correct verdict means "the answer equals the label" (math, multiple choice, exact):
    then a group's correct answers are one final answer, however written. False where a
    correct verdict is a degree or a behaviour (f1, code, instruction following)."""

    grades_groups_together: ClassVar[bool] = False
    """Grading one prompt's answers in one worker task costs less than apart: its caches
    grade each distinct final answer once (math_verify). The group endpoint then sends a
    group as one task, under one answer's deadline, and grades it apart only if that fails.
    False for a scorer whose answers each take seconds (programs) or gain nothing."""

    deterministic: ClassVar[bool] = True
    """Equal inputs get equal grades, so a group grades each distinct response once;
    False for a scorer that draws (`random`)."""

    settings_name: ClassVar[str | None] = None
    """The `<NAME>` its settings are read under when not its own: scorers that share one
    resource (a judge endpoint) share its settings."""

    def __init__(
        self, limits: GradingLimits | None = None, settings: ScorerSettings | None = None
    ) -> None:
        self.limits = limits or GradingLimits()
        self.settings = settings if settings is not None else self.default_settings()

    @classmethod
    def default_settings(cls) -> ScorerSettings | None:
        """The settings model's defaults (read from no environment), or None."""
        return None if cls.settings_model is None else cls.settings_model.model_validate({})

    @classmethod
    def startup_check(
        cls, settings: ScorerSettings | None, limits: GradingLimits
    ) -> StartupCheck | None:
        """Run once at start-up, in the server process, before any worker: None when there is
        nothing to check. Raises `InvalidSetting` for settings that cannot work together."""
        return None

    @classmethod
    def option_problem(cls, name: str, value: JSON) -> str | None:
        """Why this scorer refuses option `name` set to `value`, or None if it accepts it.

        The message names the valid options (or values), sorted, and echoes at
        most `_MAX_ECHO` characters of what was asked.
        """
        if name not in cls.options:
            valid = ", ".join(sorted(cls.options)) or "none"
            return f"scorer {cls.name!r} has no option {echo(name)}; its options: {valid}"
        accepted = cls.options[name]
        if accepted is None or (isinstance(value, str) and value in accepted):
            return None
        return (
            f"option {name!r} of scorer {cls.name!r} takes one of {', '.join(sorted(accepted))}, "
            f"not {echo(value)}"
        )

    @classmethod
    def screen(
        cls, response: str, label: JSON, options: Mapping[str, JSON] = NO_OPTIONS
    ) -> Score | None:
        """Cheap check run before dispatch; a `Score` here skips grading.

        It may reject a hostile answer, or settle one outright when the
        verdict `score` would give (with these `options`) is provable
        cheaply. Runs in the server process, on the class (no instance is
        built there), so it must be fast, linear in the input and free of
        heavy imports. The default lets everything through.
        """
        return None


class Scorer(ScorerBase):
    """A CPU-bound scorer: grades one answer against its gold label in a grading worker.

    Subclasses set `name` and implement `score`. Instances are created once
    per worker process (`open` then starts what they hold, e.g. a sandbox), so
    expensive set-up belongs there, and `score` must be safe to call many times.
    What it holds dies with its worker.
    """

    preload: ClassVar[tuple[str, ...]] = ()
    """Modules the workers' forkserver imports, after the scorers' own, before it forks any
    worker: libraries every worker would import (or set up, at the module's import: math_verify's
    `warm_up`) on its own, done once and inherited by each worker instead, a replacement or
    spare one too. The server never imports them. An import that fails is ignored there (the
    workers then meet the failure themselves). Only modules that start no thread as they
    are imported: the forkserver forks every worker."""

    def open(self) -> None:
        """Start this scorer's resources, in its worker, before the worker takes work."""

    def warm(self) -> None:
        """Pay the scorer's first-use costs (parser tables, lazy imports, caches of its
        libraries) in its worker after `open` and before the worker takes its first answer,
        so that no answer waits for them; leave no trace in the scorer's own caches or
        counters. The default does nothing."""

    def close(self) -> None:
        """Stop what `open` started."""

    @abc.abstractmethod
    def score(self, prompt: JSON, response: str, label: JSON, options: Mapping[str, JSON]) -> Score:
        """Grade `response` against `label`; never raise for bad input."""

    def score_many(self, items: Sequence[ScoringInput]) -> list[Score]:
        """Grade several answers; override when batching pays (a model).

        The engine only ever sends string responses (`Sample.response`), so `score` needs
        no check of its own; this one guard is for a caller outside the engine.
        """
        return [self.score(*item) if isinstance(item[1], str) else NOT_TEXT for item in items]


class AsyncScorer(ScorerBase):
    """An I/O-bound scorer (a judge waiting on a remote model): a coroutine on the server's
    event loop, never in a worker, at most `concurrency` gradings at once.

    One instance serves the whole service: `open` runs at start-up (an HTTP client,
    say) and `close` at shutdown, after the drain. `score` must never block the
    loop: anything CPU-bound belongs in a `Scorer`.
    """

    concurrency: ClassVar[int] = 64
    """Gradings in progress at once; the rest wait their turn within their deadline."""

    _workers: WorkerGrade | None = None

    def use_workers(self, grade: WorkerGrade) -> None:
        """Called by the engine before `open`: how `grade_in_worker` reaches the pool."""
        self._workers = grade

    async def grade_in_worker(
        self, scorer: str, prompt: JSON, response: str, label: JSON, options: Mapping[str, JSON]
    ) -> Score:
        """The grade of CPU-bound scorer `scorer` (math_verify, say), done in a grading worker
        as any answer is (screen, deadline, retry), awaited without blocking the loop."""
        if self._workers is None:
            return Score.error("no grading workers: the scorer is not served by an engine")
        return await self._workers(scorer, (prompt, response, label, options))

    async def open(self) -> None:
        """Start this scorer's resources, before the service reports ready."""

    async def close(self) -> None:
        """Stop what `open` started, once the gradings in flight have ended."""

    @abc.abstractmethod
    async def score(
        self, prompt: JSON, response: str, label: JSON, options: Mapping[str, JSON]
    ) -> Score:
        """Grade `response` against `label`; never raise for bad input."""


def echo(value: JSON) -> str:
    """A client's value quoted for an error message, cut to `_MAX_ECHO` characters: the one
    way every scorer (and the engine) repeats what it was sent, so no message grows with it."""
    text = repr(value)
    return text if len(text) <= _MAX_ECHO else text[:_MAX_ECHO] + "..."
