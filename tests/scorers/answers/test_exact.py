"""The `exact` scorer: whole-response equality after whitespace normalisation."""

from __future__ import annotations

import pytest

from reward_service.scorers.answers.exact import ExactScorer
from reward_service.scorers.base import JSON


@pytest.mark.parametrize(
    ("response", "label", "reward", "status"),
    [
        ("Paris", "Paris", 1.0, "ok"),
        ("  Paris \n", "Paris", 1.0, "ok"),
        ("New   York", "New York", 1.0, "ok"),
        ("paris", "Paris", 0.0, "wrong"),
        ("Paris.", "Paris", 0.0, "wrong"),
        ("", "Paris", 0.0, "no_answer"),
        ("   ", "Paris", 0.0, "no_answer"),
        ("42", 42, 1.0, "ok"),
        ("[1, 2]", [1, 2], 1.0, "ok"),
        ("x", None, 0.0, "error"),
        ("true", True, 1.0, "ok"),
    ],
)
def test_exact_table(response: str, label: JSON, reward: float, status: str) -> None:
    """Each row: the reward and status `exact` gives."""
    score = ExactScorer().score("", response, label, {})
    assert (score.reward, score.status.value) == (reward, status)
