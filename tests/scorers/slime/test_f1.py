"""The `f1` scorer: SQuAD-style token F1 of the response against the label."""

from __future__ import annotations

import pytest

from reward_service.scorers.base import JSON, Status
from reward_service.scorers.slime.f1 import F1Scorer, normalize_answer

SCORER = F1Scorer()


@pytest.mark.parametrize(
    ("response", "label", "reward", "status"),
    [
        pytest.param("Paris", "Paris", 1.0, Status.OK, id="exact"),
        pytest.param("The Eiffel Tower!", "eiffel tower", 1.0, Status.OK, id="normalised"),
        pytest.param("Paris France", "Paris", 2 / 3, Status.OK, id="extra-token"),
        pytest.param("Paris", "Paris France", 2 / 3, Status.OK, id="missing-token"),
        pytest.param("London", "Paris", 0.0, Status.WRONG, id="no-overlap"),
        pytest.param("a an the", "Paris", 0.0, Status.WRONG, id="only-articles"),
        pytest.param("yes it is", "yes", 0.0, Status.WRONG, id="yes-needs-exact"),
        pytest.param("Yes.", "yes", 1.0, Status.OK, id="yes-exact"),
        pytest.param("no", "no answer", 0.0, Status.WRONG, id="no-vs-phrase"),
        pytest.param("Paris", ["London", "Paris"], 1.0, Status.OK, id="best-of-list"),
        pytest.param("1945", 1945, 1.0, Status.OK, id="int-label"),
        pytest.param("2.5", 2.5, 1.0, Status.OK, id="float-label"),
        pytest.param(
            "paris " * 200_000,
            "Paris",
            1 / 200_000 * 2 / (1 + 1 / 200_000),
            Status.OK,
            id="huge-response",
        ),
    ],
)
def test_token_f1(response: str, label: JSON, reward: float, status: Status) -> None:
    """The reward is the best token F1 over the label's answers."""
    result = SCORER.score("", response, label, {})
    assert result.reward == pytest.approx(reward)
    assert result.status is status
    assert result.details["f1"] == result.reward


@pytest.mark.parametrize(
    "label",
    [
        pytest.param(None, id="null"),
        pytest.param(False, id="bool"),
        pytest.param({"answer": "Paris"}, id="dict"),
        pytest.param([], id="empty-list"),
        pytest.param("", id="empty-string"),
        pytest.param("the ...", id="no-words"),
    ],
)
def test_unusable_label_is_an_error(label: JSON) -> None:
    """A label with no words to match is an error with reward 0.0."""
    result = SCORER.score("", "Paris", label, {})
    assert (result.reward, result.status) == (0.0, Status.ERROR)


@pytest.mark.parametrize("response", ["", "   \n"])
def test_empty_response_is_no_answer(response: str) -> None:
    """An empty response earns 0.0 with status no_answer."""
    result = SCORER.score("", response, "Paris", {})
    assert (result.reward, result.status) == (0.0, Status.NO_ANSWER)


def test_details_carry_precision_and_recall() -> None:
    """Precision and recall of the best answer are reported next to F1."""
    result = SCORER.score("", "Paris France Europe", "Paris France", {})
    assert result.details["precision"] == pytest.approx(2 / 3)
    assert result.details["recall"] == 1.0


def test_normalize_answer() -> None:
    """Lower-case, punctuation and articles removed, whitespace collapsed."""
    assert normalize_answer("  The  Eiffel-Tower, an icon! ") == "eiffeltower icon"
