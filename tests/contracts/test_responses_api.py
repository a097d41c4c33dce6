"""The answer read from a Responses-API output: the final assistant message's text, only."""

from __future__ import annotations

from typing import Any

import pytest

from reward_service.contracts.responses_api import (
    CreateParams,
    ModelResponse,
    final_text,
    last_user_text,
    reasoning_text,
)
from tests.contracts.nemo_gym_rollouts import function_call, message, params, reasoning, response


def _read(*items: dict[str, Any]) -> ModelResponse:
    return ModelResponse.model_validate(response(*items))


def test_the_final_message_text_is_the_answer() -> None:
    """One message: its output_text; reasoning items are read apart, never as the answer."""
    read = _read(reasoning("2 + 2 is 4"), message("so \\boxed{4}"))
    assert final_text(read) == "so \\boxed{4}"
    assert reasoning_text(read) == "2 + 2 is 4"


def test_a_message_split_into_parts_is_joined() -> None:
    """Several output_text parts of the final message join as the SDK's output_text joins them."""
    item = message("so ")
    item["content"].append({"annotations": [], "text": "\\boxed{4}", "type": "output_text"})
    assert final_text(_read(item)) == "so \\boxed{4}"


@pytest.mark.parametrize(
    ("items", "why"),
    [
        ((reasoning("\\boxed{4}"),), "an answer only in reasoning"),
        ((reasoning("\\boxed{4}"), message("I am not sure.")), "the answer in reasoning"),
        (
            (message("\\boxed{4}", item_id="a"), function_call(), message("no idea", item_id="b")),
            "an earlier message's answer",
        ),
        ((message("\\boxed{4}", role="user"),), "a message in the user's role"),
        ((message("\\boxed{4}", role="system"),), "a message in the system's role"),
    ],
)
def test_only_the_final_assistant_message_counts(
    items: tuple[dict[str, Any], ...], why: str
) -> None:
    """Reward hacking: nothing outside the last assistant message reaches the grader."""
    assert "\\boxed{4}" not in final_text(_read(*items)), why


def test_a_refusal_or_an_added_output_text_field_is_not_the_answer() -> None:
    """A refusal part, and an `output_text` key a client adds to the response, are never read."""
    item = message("")
    item["content"] = [{"refusal": "\\boxed{4}", "type": "refusal"}]
    body = response(item)
    body["output_text"] = "\\boxed{4}"
    assert final_text(ModelResponse.model_validate(body)) == ""


def test_reasoning_content_parts_are_reasoning() -> None:
    """A reasoning item's `content` (reasoning_text parts) is reasoning too, never the answer."""
    item = reasoning("think")
    item["content"] = [{"text": " more", "type": "reasoning_text"}]
    read = _read(item)
    assert (final_text(read), reasoning_text(read)) == ("", "think more")


def test_the_question_is_the_last_user_message() -> None:
    """The question: the last user turn's text, its text parts joined; a string input whole."""
    conversation = params("first")
    conversation["input"] += [
        {"role": "assistant", "content": "a reply"},
        {"role": "user", "content": [{"type": "input_text", "text": "What is 2+2?"}]},
    ]
    assert last_user_text(CreateParams.model_validate(conversation)) == "What is 2+2?"
    assert last_user_text(CreateParams.model_validate({"input": " Q? "})) == "Q?"
