"""The `choice` scorer: the option letter a response commits to against the label."""

from __future__ import annotations

from collections.abc import Mapping

import pytest

from reward_service.scorers.answers.choice import ChoiceScorer, extract_letter
from reward_service.scorers.base import JSON, Status

SCORER = ChoiceScorer()
FOUR = {"choices": ["Paris", "London", "Berlin", "Madrid"]}


@pytest.mark.parametrize(
    ("response", "letter"),
    [
        pytest.param("Answer: B", "B", id="answer-colon"),
        pytest.param("ANSWER: (C)", "C", id="upper-case-keyword"),
        pytest.param("The answer is (D).", "D", id="answer-is-parenthesised"),
        pytest.param("The correct answer is **A**", "A", id="answer-is-bold"),
        pytest.param("So the correct option is C.", "C", id="correct-option"),
        pytest.param("Final answer: $\\boxed{B}$", "B", id="boxed-after-anchor"),
        pytest.param("\\boxed{\\text{D}}", "D", id="boxed-text"),
        pytest.param("\\boxed{c}", "C", id="boxed-lower-case"),
        pytest.param("I pick **B**", "B", id="bold-only"),
        pytest.param("It must be (A)", "A", id="parenthesised-only"),
        pytest.param("Reasoning...\nC\n", "C", id="lone-line"),
        pytest.param("Answer: A\nOn reflection, the answer is D", "D", id="last-statement-wins"),
        pytest.param("The answer is B. (C) is a distractor.", "B", id="statement-beats-bare"),
        pytest.param("<think>Answer: A</think>Answer: C", "C", id="thinking-ignored"),
        pytest.param("The answer is Alice", None, id="word-not-letter"),
        pytest.param("The answer is (Z)", None, id="letter-out-of-range"),
        pytest.param("I am not sure.", None, id="nothing"),
        pytest.param("", None, id="empty"),
        pytest.param("x " * 500_000 + "Answer: A", "A", id="huge"),
        pytest.param("Answer" + " " * 1_000_000, None, id="huge-whitespace-after-keyword"),
        pytest.param("\n" * 1_000_000, None, id="huge-blank-lines"),
    ],
)
def test_extract_letter(response: str, letter: str | None) -> None:
    """The last explicit answer statement, else the last bare letter, is the prediction."""
    assert extract_letter(response, "ABCD") == letter


@pytest.mark.parametrize(
    ("label", "options", "reward", "status"),
    [
        pytest.param("B", {}, 1.0, Status.OK, id="letter"),
        pytest.param("b", {}, 1.0, Status.OK, id="lower-case-letter"),
        pytest.param("(B)", {}, 1.0, Status.OK, id="parenthesised-letter"),
        pytest.param(" B. ", {}, 1.0, Status.OK, id="letter-with-dot"),
        pytest.param("C", {}, 0.0, Status.WRONG, id="other-letter"),
        pytest.param(1, {}, 1.0, Status.OK, id="index"),
        pytest.param(1.0, {}, 1.0, Status.OK, id="integral-float-index"),
        pytest.param(0, {}, 0.0, Status.WRONG, id="other-index"),
        pytest.param("London", FOUR, 1.0, Status.OK, id="choice-text"),
        pytest.param("  london ", FOUR, 1.0, Status.OK, id="choice-text-normalised"),
        pytest.param("Paris", FOUR, 0.0, Status.WRONG, id="other-choice-text"),
        pytest.param("Rome", FOUR, 0.0, Status.ERROR, id="text-not-a-choice"),
        pytest.param("London", {}, 0.0, Status.ERROR, id="text-without-choices"),
        pytest.param("E", FOUR, 0.0, Status.ERROR, id="letter-beyond-choices"),
        pytest.param(4, FOUR, 0.0, Status.ERROR, id="index-beyond-choices"),
        pytest.param(-1, {}, 0.0, Status.ERROR, id="negative-index"),
        pytest.param(1.5, {}, 0.0, Status.ERROR, id="fractional-float"),
        pytest.param(True, {}, 0.0, Status.ERROR, id="bool"),
        pytest.param(None, {}, 0.0, Status.ERROR, id="null"),
        pytest.param({"answer": "B"}, {}, 0.0, Status.ERROR, id="dict"),
        pytest.param(["B"], {}, 0.0, Status.ERROR, id="list"),
        pytest.param("B" * 1_000_000, {}, 0.0, Status.ERROR, id="huge-label"),
        pytest.param("B", {"choices": "ABCD"}, 0.0, Status.ERROR, id="choices-not-a-list"),
        pytest.param("B", {"choices": []}, 0.0, Status.ERROR, id="empty-choices"),
    ],
)
def test_compares_with_any_label(
    label: JSON, options: Mapping[str, JSON], reward: float, status: Status
) -> None:
    """Letters, indexes and choice texts name the gold; anything else is an error status."""
    result = SCORER.score("", "The answer is (B).", label, options)
    assert (result.reward, result.status) == (reward, status)


def test_no_letter_is_no_answer() -> None:
    """A response committing to no letter earns 0.0 with status no_answer."""
    result = SCORER.score("", "I cannot decide.", "B", {})
    assert (result.reward, result.status) == (0.0, Status.NO_ANSWER)


def test_details_carry_prediction_and_gold() -> None:
    """The predicted and the gold letters are reported."""
    result = SCORER.score("", "Answer: A", 2, {})
    assert dict(result.details) == {"pred": "A", "gold": "C"}
