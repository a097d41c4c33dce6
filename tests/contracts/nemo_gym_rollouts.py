"""NeMo Gym-shaped rollouts, as its agents post them to a resources server's `/verify`.

The shapes are those NeMo Gym's own tests build with its request classes
(`NeMoGymResponse(...).model_dump()`, `NeMoGymResponseOutputMessage`,
`NeMoGymResponseReasoningItem`, `NeMoGymResponseCreateParamsNonStreaming`), written
out as JSON here because the `nemo-gym` package needs Python 3.13.
"""

from __future__ import annotations

from typing import Any


def message(text: str, *, item_id: str = "msg_1", role: str = "assistant") -> dict[str, Any]:
    """An output `message` item holding one `output_text` part."""
    part = {"annotations": [], "text": text, "type": "output_text", "logprobs": None}
    return {
        "id": item_id,
        "content": [part],
        "role": role,
        "status": "completed",
        "type": "message",
    }


def reasoning(text: str) -> dict[str, Any]:
    """A `reasoning` item, as a reasoning parser splits it off: its text in `summary`."""
    return {
        "id": "rs_1",
        "summary": [{"text": text, "type": "summary_text"}],
        "type": "reasoning",
        "encrypted_content": None,
    }


def function_call(name: str = "python", arguments: str = "{}") -> dict[str, Any]:
    return {
        "arguments": arguments,
        "call_id": "call_1",
        "name": name,
        "type": "function_call",
        "id": "fc_1",
        "status": "completed",
    }


def response(*items: dict[str, Any]) -> dict[str, Any]:
    """The policy model's response, with the fields `NeMoGymResponse.model_dump()` gives."""
    return {
        "id": "resp_1",
        "created_at": 1234.5,
        "error": None,
        "incomplete_details": None,
        "instructions": None,
        "metadata": None,
        "model": "policy_model",
        "object": "response",
        "output": list(items),
        "parallel_tool_calls": False,
        "temperature": None,
        "tool_choice": "none",
        "tools": [],
        "top_p": None,
        "usage": {
            "input_tokens": 20,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": 40,
            "output_tokens_details": {"reasoning_tokens": 10},
            "total_tokens": 60,
        },
    }


def params(question: str) -> dict[str, Any]:
    """`responses_create_params` for a one-question prompt."""
    return {
        "input": [{"role": "user", "content": question, "type": "message"}],
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
    }


def rollout(asked: str, *items: dict[str, Any], **task: Any) -> dict[str, Any]:
    """A verify request: the prompt, the model's output items and the task's fields."""
    return {"responses_create_params": params(asked), "response": response(*items), **task}
