"""Per-sample routing through the label object, against a live server."""

from __future__ import annotations

from typing import Any

import pytest

from reward_service.clients.http import RewardClient
from reward_service.testing import LiveServer

CHOICES = ["London", "Paris", "Rome", "Berlin"]


@pytest.mark.parametrize(
    ("response", "label", "reward", "scorer"),
    [
        pytest.param(
            "The answer is (B).",
            {"scorer": "choice", "answer": "B", "choices": CHOICES},
            1.0,
            "choice",
            id="choice-letter",
        ),
        pytest.param(
            "Answer: B",
            {"scorer": "choice", "answer": "Paris", "choices": CHOICES},
            1.0,
            "choice",
            id="choice-option-text",
        ),
        pytest.param(
            "Answer: C",
            {"scorer": "choice", "ground_truth": 1, "choices": CHOICES},
            0.0,
            "choice",
            id="choice-index-wrong",
        ),
        pytest.param(
            "the Eiffel Tower", {"scorer": "f1", "answer": "Eiffel Tower"}, 1.0, "f1", id="f1"
        ),
        pytest.param("Answer: 42", {"scorer": "dapo", "answer": "42"}, 1.0, "dapo", id="dapo"),
        pytest.param("Answer: 41", {"scorer": "dapo", "answer": 42}, -1.0, "dapo", id="dapo-no"),
        pytest.param("\\boxed{1/2}", {"scorer": "math", "answer": "0.5"}, 1.0, "math", id="math"),
        pytest.param("  yes ", {"scorer": "exact", "answer": "yes"}, 1.0, "exact", id="exact"),
    ],
)
def test_label_object_picks_the_scorer(
    server: LiveServer, response: str, label: dict[str, Any], reward: float, scorer: str
) -> None:
    """A label object with `scorer` is graded by that scorer, its other keys as options."""
    with RewardClient(server.url) as client:
        detail = client.score(response, label, detail=True)
    assert (detail["reward"], detail["scorer"]) == (reward, scorer)


def test_label_object_overrides_the_url_scorer(server: LiveServer) -> None:
    """The label's scorer wins over the one in the URL path."""
    label = {"scorer": "choice", "answer": "B", "choices": CHOICES}
    with RewardClient(server.url) as client:
        detail = client.score("Answer: B", label, scorer="exact", detail=True)
    assert (detail["reward"], detail["scorer"]) == (1.0, "choice")


def test_label_object_without_scorer_keeps_the_url_scorer(server: LiveServer) -> None:
    """A label object with only `answer` is graded by the route's scorer."""
    with RewardClient(server.url) as client:
        detail = client.score("42", {"answer": "42"}, scorer="exact", detail=True)
    assert (detail["reward"], detail["scorer"]) == (1.0, "exact")


def test_batch_mixes_scorers_in_input_order(server: LiveServer) -> None:
    """One batch may route each item to its own scorer; answers stay in input order."""
    items: list[dict[str, Any]] = [
        {"response": "Answer: B", "label": {"scorer": "choice", "answer": "B"}},
        {"response": "so \\boxed{4}", "label": "4"},
        {"response": "Answer: 7", "label": {"scorer": "dapo", "answer": 8}},
        {"response": "0.3", "label": {"scorer": "fake", "answer": None}},
    ]
    with RewardClient(server.url) as client:
        details = client.score_batch(items, detail=True)
    assert [(d["reward"], d["scorer"]) for d in details] == [
        (1.0, "choice"),
        (1.0, "math_verify"),
        (-1.0, "dapo"),
        (0.3, "fake"),
    ]


def test_unknown_scorer_in_label_is_graded_as_an_error(server: LiveServer) -> None:
    """A label naming no known scorer gets 200, the fallback reward and status `error`."""
    with RewardClient(server.url) as client:
        detail = client.score("B", {"scorer": "nope", "answer": "B"}, detail=True)
    assert (detail["reward"], detail["status"]) == (0.0, "error")
    assert "unknown scorer 'nope'" in detail["reason"]
