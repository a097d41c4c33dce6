"""The `deepscaler` scorer: only the boxed answer after the reasoning counts."""

from __future__ import annotations

import pytest

from reward_service.scorers.base import JSON, Status
from reward_service.scorers.slime.deepscaler import DeepScalerScorer

SCORER = DeepScalerScorer()


@pytest.mark.parametrize(
    ("response", "label", "reward", "status"),
    [
        pytest.param("<think>hmm</think>\\boxed{42}", "42", 1.0, Status.OK, id="after-think"),
        pytest.param(
            "<think>\\boxed{42}</think>\\boxed{41}",
            "42",
            0.0,
            Status.WRONG,
            id="box-inside-think-ignored",
        ),
        pytest.param(
            "a</think>b</think>\\boxed{42}", "42", 0.0, Status.NO_ANSWER, id="two-think-ends"
        ),
        pytest.param(
            "\\boxed{42}</think>done", "42", 0.0, Status.NO_ANSWER, id="box-only-before-think-end"
        ),
        pytest.param("###Response\\boxed{42}", "42", 1.0, Status.OK, id="response-marker"),
        pytest.param(
            "###Response \\boxed{42} ###Response \\boxed{41}",
            "42",
            1.0,
            Status.OK,
            id="first-response-section",
        ),
        pytest.param("\\boxed{42}", "42", 0.0, Status.NO_ANSWER, id="no-marker"),
        pytest.param(
            "<think>long thought cut off \\boxed{42}",
            "42",
            0.0,
            Status.NO_ANSWER,
            id="truncated-thought",
        ),
        pytest.param("</think>\\boxed{\\dfrac{1}{2}}", "0.5", 1.0, Status.OK, id="graded-as-math"),
        pytest.param("</think>\\boxed{42}", "\\boxed{42}", 1.0, Status.OK, id="boxed-label"),
        pytest.param("</think>\\boxed{42}", 42, 1.0, Status.OK, id="int-label"),
        pytest.param("</think>\\boxed{42}", 42.5, 0.0, Status.WRONG, id="float-label"),
        pytest.param("</think>\\boxed{42}", "", 0.0, Status.ERROR, id="empty-label"),
        pytest.param("</think>\\boxed{42}", None, 0.0, Status.ERROR, id="null-label"),
        pytest.param("</think>\\boxed{42}", False, 0.0, Status.ERROR, id="bool-label"),
        pytest.param("</think>\\boxed{42}", {"a": 1}, 0.0, Status.ERROR, id="dict-label"),
        pytest.param("</think>\\boxed{42}", ["7", "42"], 1.0, Status.OK, id="list-label"),
        pytest.param("</think>\\boxed{42}", "4" * 100_000, 0.0, Status.WRONG, id="huge-label"),
        pytest.param(
            "x" * 1_000_000 + "</think>\\boxed{42}", "42", 1.0, Status.OK, id="huge-response"
        ),
    ],
)
def test_grades_final_solution(response: str, label: JSON, reward: float, status: Status) -> None:
    """The text after the last </think> (or ###Response) is graded as by `math`."""
    result = SCORER.score("", response, label, {})
    assert (result.reward, result.status) == (reward, status)


def test_non_string_response_is_an_error() -> None:
    """A response that is not a string, sent by a caller outside the engine, is reported by
    `score_many`, the one place that checks, not raised."""
    [result] = SCORER.score_many([("", 42, "42", {})])  # type: ignore[list-item]
    assert (result.reward, result.status) == (0.0, Status.ERROR)
