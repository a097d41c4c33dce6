"""The `code` scorer under test, over the service's sandbox or, until it exists, the naive one."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from reward_service.bench.code import NaiveSandbox
from reward_service.scorers.base import GradingLimits
from reward_service.scorers.code.scorer import CodeScorer

LIMITS = GradingLimits(code_time_limit_s=2.0, code_budget_s=20.0)


@pytest.fixture(scope="session")
def scorer() -> Iterator[CodeScorer]:
    """One `code` scorer for the session (benign programs only)."""
    built = CodeScorer(LIMITS, sandbox_factory=lambda _: NaiveSandbox())
    yield built
    built.sandbox.close()
