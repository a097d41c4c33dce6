"""The `code` scorer under test, over the service's own sandbox (benign programs only)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from reward_service.scorers.base import GradingLimits
from reward_service.scorers.code.scorer import CodeScorer

LIMITS = GradingLimits(deadlines={"code": 21.0})


@pytest.fixture(scope="session")
def scorer() -> Iterator[CodeScorer]:
    """One `code` scorer for the session, its zygote closed at the end."""
    built = CodeScorer(LIMITS)
    yield built
    built.close()
