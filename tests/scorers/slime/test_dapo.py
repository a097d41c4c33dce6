"""The `dapo` scorer: the last `Answer:` in the final 300 characters, reward 1.0 or -1.0."""

from __future__ import annotations

import pytest

from reward_service.scorers.base import JSON, Status
from reward_service.scorers.slime.dapo import DapoScorer, normalize_final_answer

SCORER = DapoScorer()


@pytest.mark.parametrize(
    ("response", "label", "reward", "status", "pred"),
    [
        pytest.param("Answer: 42", "42", 1.0, Status.OK, "42", id="integer"),
        pytest.param("Answer: 41", "42", -1.0, Status.WRONG, "41", id="wrong"),
        pytest.param("answer : 42", 42, 1.0, Status.OK, "42", id="case-and-spacing"),
        pytest.param("Answer: 7\nAnswer: 42", 42, 1.0, Status.OK, "42", id="last-answer"),
        pytest.param("Answer: $\\boxed{1,000}$", 1000, 1.0, Status.OK, "1000", id="normalised"),
        pytest.param("Answer: 12 dollars", "12", 1.0, Status.OK, "12", id="units-dropped"),
        pytest.param("Answer: x = 5", "5", 1.0, Status.OK, "5", id="after-equals"),
        pytest.param("Answer: 42.0", "42", -1.0, Status.WRONG, "42.0", id="prediction-not-cast"),
        pytest.param("Answer: 42", 42.0, 1.0, Status.OK, "42", id="integral-float-label"),
        pytest.param("Answer: 42", "42.0", 1.0, Status.OK, "42", id="integral-string-label"),
        pytest.param("Answer: 2.5", 2.5, 1.0, Status.OK, "2.5", id="non-integer-label"),
        pytest.param("Answer: 2", 2.5, -1.0, Status.WRONG, "2", id="label-not-truncated"),
        pytest.param(
            "Answer: \\frac{1}{2}", "\\frac12", 1.0, Status.OK, "\\frac{1}{2}", id="latex-label"
        ),
        pytest.param("Answer: 42", ["41", "42"], 1.0, Status.OK, "42", id="list-label"),
        pytest.param(
            "Answer: 42" + " pad" * 100,
            "42",
            -1.0,
            Status.NO_ANSWER,
            "[INVALID]",
            id="answer-outside-window",
        ),
        pytest.param(
            "The result is 42.", "42", -1.0, Status.NO_ANSWER, "[INVALID]", id="no-answer-line"
        ),
        pytest.param("", "42", -1.0, Status.NO_ANSWER, "[INVALID]", id="empty-response"),
        pytest.param(
            "x" * 1_000_000 + "Answer: 42", "42", 1.0, Status.OK, "42", id="huge-response"
        ),
    ],
)
def test_grades_last_answer_line(
    response: str, label: JSON, reward: float, status: Status, pred: str
) -> None:
    """The normalised last `Answer:` is compared to the label; acc and pred are reported."""
    result = SCORER.score("", response, label, {})
    assert (result.reward, result.status) == (reward, status)
    assert result.details["acc"] is (reward == 1.0)
    assert result.details["pred"] == pred


@pytest.mark.parametrize(
    "label",
    [
        pytest.param(None, id="null"),
        pytest.param(True, id="bool"),
        pytest.param({"answer": 42}, id="dict"),
        pytest.param([], id="empty-list"),
        pytest.param("  ", id="blank"),
        pytest.param("4" * 10_000, id="huge"),
    ],
)
def test_unusable_label_is_an_error(label: JSON) -> None:
    """A label that holds no gradable answer is an error with reward 0.0, not a crash."""
    result = SCORER.score("", "Answer: 42", label, {})
    assert (result.reward, result.status) == (0.0, Status.ERROR)


@pytest.mark.parametrize(
    ("answer", "normal"),
    [
        ("$\\boxed{1,000}$", "1000"),
        ("\\text{5} cm", "5"),
        ("\\frac12", "\\frac{1}{2}"),
        ("\\sqrt2", "\\sqrt{2}"),
        ("90^\\circ", "90"),
        ("a triangle", "triangle"),
        ("42<|im_end|>", "42"),
    ],
)
def test_normalize_final_answer(answer: str, normal: str) -> None:
    """Minerva's normalisation drops units, wrappers, dollars and thousands commas."""
    assert normalize_final_answer(answer) == normal
