"""What running a suite found: the failed tests and how the run ended."""

from __future__ import annotations

from dataclasses import dataclass

from reward_service.scorers.base import JSON

STDERR_CHARS = 300
"""Characters of standard error kept in `first_failure`."""
BUDGET = "the answer's time budget ran out before this test"


@dataclass(frozen=True)
class Failure:
    """Why one test failed."""

    test: int
    kind: str
    stderr: str = ""

    def detail(self) -> dict[str, JSON]:
        return {"test": self.test, "kind": self.kind, "stderr": self.stderr[-STDERR_CHARS:]}


@dataclass(frozen=True)
class Verdicts:
    """What running a suite found."""

    failures: list[Failure]
    """The failed tests in order (only the first unless `partial`)."""
    budget_out: bool = False
    """The answer's budget ran out before every test ran."""
    total: int | None = None
    """The tests graded, when not the label's count (a HumanEval `check` unfolded)."""
    asserts: str | None = None
    """How an assert suite was judged: `static`, `replayed` or `statements` (`plans.py`)."""
