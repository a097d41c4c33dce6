"""OpenRLHF's `--remote_rm_url` contract (`POST /get_reward`) against a live server."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from reward_service.testing import LiveServer

FAKE = {"scorer": "fake", "answer": None}


def get_reward(server: LiveServer, body: dict[str, Any]) -> httpx.Response:
    return httpx.post(f"{server.url}/get_reward", json=body, timeout=30)


def test_rewards_come_back_in_input_order(server: LiveServer) -> None:
    """`rewards` and `scores` follow the order of `query`, graded against `labels`."""
    prompts = ["What is 1+1? ", "What is 2+2? ", "What is 4+5? "]
    responses = ["\\boxed{2}", "\\boxed{5}", "so \\boxed{9}"]
    body = {
        "query": [p + r for p, r in zip(prompts, responses, strict=True)],
        "prompts": prompts,
        "labels": ["2", "4", "9"],
    }
    answer = get_reward(server, body)
    assert answer.status_code == 200
    data = answer.json()
    assert data["rewards"] == data["scores"] == [1.0, 0.0, 1.0]
    assert data["extra_logs"]["reward_correct"] == [1.0, 0.0, 1.0]


def test_prompt_prefix_is_stripped_from_the_query(server: LiveServer) -> None:
    """Only the text after the prompt is graded; a query not starting with it is graded whole."""
    body = {
        "query": ["Rate this: 0.25", "0.75"],
        "prompts": ["Rate this: ", "another prompt"],
        "labels": [FAKE, FAKE],
    }
    assert get_reward(server, body).json()["rewards"] == [0.25, 0.75]


@pytest.mark.parametrize(
    "body",
    [
        pytest.param({"query": ["a", "b"], "prompts": ["a"], "labels": ["1", "2"]}, id="prompts"),
        pytest.param({"query": ["a"], "prompts": ["a"], "labels": ["1", "2"]}, id="labels"),
        pytest.param({"query": "a", "prompts": ["a"], "labels": ["1"]}, id="not-a-list"),
    ],
)
def test_mismatched_lists_are_refused(server: LiveServer, body: dict[str, Any]) -> None:
    """`query`, `prompts` and `labels` of different lengths (or not lists) get 400."""
    answer = get_reward(server, body)
    assert answer.status_code == 400
    assert answer.json()["error"]
