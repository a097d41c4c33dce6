"""Which statuses are verdicts a trainer learns from, and which are fallbacks it masks."""

from __future__ import annotations

import pytest

from reward_service.scorers.base import Status

VERDICTS = {Status.OK, Status.WRONG, Status.NO_ANSWER, Status.COMPILE_ERROR}


@pytest.mark.parametrize("status", list(Status))
def test_every_status_is_a_verdict_or_a_fallback(status: Status) -> None:
    """ok, wrong, no_answer and compile_error judge the answer (1.0); the rest mask it (0.0)."""
    assert status.is_verdict == (status in VERDICTS)
    assert status.loss_multiplier == (1.0 if status in VERDICTS else 0.0)
