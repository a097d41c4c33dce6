"""The scorer interface: pure, synchronous grading with no web or process code.

A scorer turns one answer into a `Score`. It never raises for an answer it
cannot read: that is a status (`no_answer`, `error`), not an exception.
"""

from __future__ import annotations

import abc
import enum
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, ClassVar

JSON = Any
"""Any value `json.loads` can return: labels and prompts arrive as-is."""

ScoringInput = tuple[JSON, str, JSON, Mapping[str, JSON]]
"""One answer to grade: `(prompt, response, label, options)`."""

NO_OPTIONS: Mapping[str, JSON] = MappingProxyType({})
"""The options of an answer that sets none."""

_MAX_ECHO = 64


class Status(str, enum.Enum):
    """How a grading ended; only `ok` and `wrong` are verdicts on the answer."""

    OK = "ok"
    WRONG = "wrong"
    NO_ANSWER = "no_answer"
    TIMEOUT = "timeout"
    ERROR = "error"


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


@dataclass(frozen=True)
class GradingLimits:
    """The service's limits that a scorer may honour."""

    timeout_s: int = 3
    """Whole seconds for a scorer's own timeouts (math_verify's signal.alarm)."""
    cache_size: int = 4096
    """Entries a scorer may keep in each of its caches."""
    reward_model_name: str = "OpenAssistant/reward-model-deberta-v3-large-v2"
    """The `reward_model` scorer's model: a local directory or a Hugging Face name."""
    reward_model_max_length: int = 512
    """Tokens the `reward_model` scorer feeds the model per answer."""
    reward_model_threads: int = 1
    """Torch threads of a worker that grades with `reward_model`."""
    reward_model_batch_size: int = 4
    """Answers per forward pass of the `reward_model` scorer."""
    code_time_limit_s: float = 2.0
    """`code` scorer: seconds per test (wall and CPU) when the label sets none."""
    code_max_time_limit_s: float = 10.0
    """`code` scorer: the most a label's `time_limit_s` may ask."""
    code_memory_mb: int = 256
    """`code` scorer: address space per test in MiB when the label sets none."""
    code_max_memory_mb: int = 1024
    """`code` scorer: the most a label's `memory_mb` may ask."""
    code_output_bytes: int = 1024 * 1024
    """`code` scorer: standard output kept per test; past it the test fails `output_limit`."""
    code_max_output_bytes: int = 8 * 1024 * 1024
    """`code` scorer: the most a label's `output_bytes` may ask."""
    code_scratch_mb: int = 64
    """`code` scorer: size of a run's scratch directory, where the platform can bound it."""
    code_required_layers: frozenset[str] = frozenset()
    """`code` scorer: sandbox layers that must be active, or building the scorer fails; an
    item `a|b` is met when any one of its layers is active."""
    code_budget_s: float = 29.0
    """`code` scorer: seconds one answer's tests may take in all, inside its hard deadline."""


class Scorer(abc.ABC):
    """Grades one answer against its gold label.

    Subclasses set `name` and implement `score`. Instances are created once
    per worker process, so expensive set-up belongs in `__init__`, and
    `score` must be safe to call many times.
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

    def __init__(self, limits: GradingLimits | None = None) -> None:
        self.limits = limits or GradingLimits()

    @classmethod
    def option_problem(cls, name: str, value: JSON) -> str | None:
        """Why this scorer refuses option `name` set to `value`, or None if it accepts it.

        The message names the valid options (or values), sorted, and echoes at
        most `_MAX_ECHO` characters of what was asked.
        """
        if name not in cls.options:
            valid = ", ".join(sorted(cls.options)) or "none"
            return f"scorer {cls.name!r} has no option {_echo(name)}; its options: {valid}"
        accepted = cls.options[name]
        if accepted is None or (isinstance(value, str) and value in accepted):
            return None
        return (
            f"option {name!r} of scorer {cls.name!r} takes one of {', '.join(sorted(accepted))}, "
            f"not {_echo(value)}"
        )

    @abc.abstractmethod
    def score(self, prompt: JSON, response: str, label: JSON, options: Mapping[str, JSON]) -> Score:
        """Grade `response` against `label`; never raise for bad input."""

    def score_many(self, items: Sequence[ScoringInput]) -> list[Score]:
        """Grade several answers; override when batching pays (a model)."""
        return [self.score(*item) for item in items]

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


def _echo(value: JSON) -> str:
    """A client's value quoted for an error message, cut to `_MAX_ECHO` characters."""
    text = repr(value)
    return text if len(text) <= _MAX_ECHO else text[:_MAX_ECHO] + "..."
