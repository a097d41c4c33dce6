"""The `random` scorer: a fair coin, as SLIME's `--rm-type random`."""

from __future__ import annotations

from reward_service.scorers.base import Status
from reward_service.scorers.slime.random_reward import RandomScorer


def test_draws_are_zero_or_one_and_both_occur() -> None:
    """Over 200 draws both 0.0 (`wrong`) and 1.0 (`ok`) occur, and nothing else does."""
    scorer = RandomScorer()
    draws = {(s.reward, s.status) for s in (scorer.score("", "", None, {}) for _ in range(200))}
    assert draws == {(0.0, Status.WRONG), (1.0, Status.OK)}
