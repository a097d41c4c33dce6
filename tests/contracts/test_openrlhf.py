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
    """Only the text after the prompt is graded."""
    body = {"query": ["Rate this: 0.25"], "prompts": ["Rate this: "], "labels": [FAKE]}
    assert get_reward(server, body).json()["rewards"] == [0.25]


CHATML = (
    "<|im_start|>system\nPut the final answer in a box, as in: 3 + 4 = \\boxed{7}.<|im_end|>\n"
    "<|im_start|>user\nWhat is 5 + 7?<|im_end|>\n<|im_start|>assistant\n"
)


@pytest.mark.parametrize(
    "decoded",
    [
        pytest.param(CHATML.replace("5 + 7", "5 +  7"), id="extra-space"),
        pytest.param(CHATML.replace("<|im_start|>", "").replace("<|im_end|>", ""), id="skipped"),
        pytest.param("<|endoftext|>" * 2 + CHATML, id="left-pads"),
    ],
)
def test_prompts_example_answer_is_never_graded(server: LiveServer, decoded: str) -> None:
    """A decode a space or special token off its prompt still grades the response alone."""
    body = {
        "query": [decoded + "The answer is 12", decoded + "Let me think about"],
        "prompts": [CHATML, CHATML],
        "labels": ["12", "7"],
    }
    data = get_reward(server, body).json()
    assert data["rewards"] == [1.0, 0.0]
    assert data["extra_logs"]["reward_prompt_not_found"] == [0.0, 0.0]


def test_query_not_starting_with_its_prompt_is_an_error(server: LiveServer) -> None:
    """A query whose response cannot be found gets the fallback reward, `error` and a reason."""
    body = {
        "query": ["Sure. " + CHATML + "Let me think about", "0.75", CHATML + "so \\boxed{12}"],
        "prompts": [CHATML, None, CHATML],
        "labels": ["7", FAKE, "12"],
    }
    answer = get_reward(server, body)
    assert answer.status_code == 200
    data = answer.json()
    assert data["rewards"] == data["scores"] == [0.0, 0.0, 1.0]
    logs = data["extra_logs"]
    assert logs["reward_failed"] == [1.0, 1.0, 0.0]
    assert logs["reward_prompt_not_found"] == [1.0, 0.0, 0.0]
    assert logs["reward_prompt_missing"] == [0.0, 1.0, 0.0]


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
