"""The parts of the OpenAI Responses API that NeMo Gym speaks, and the answer read from them.

NeMo Gym's agents send a resources server the request the policy model got
(`responses_create_params`, whose `input` is a string or a list of messages) and
the model's `response`, whose `output` is a list of typed items: `message`
(the assistant's text, as `output_text` parts, or a `refusal`), `reasoning` (the
reasoning a server's reasoning parser split off, as `summary` and `content`
parts), tool calls and their outputs. The models here read what the service
needs and keep every other field as sent (`extra="allow"`), so an answer echoes
a request whole.

The answer graded is `final_text`: the `output_text` parts of the last
assistant `message` item, joined as the SDK's `Response.output_text` joins parts.
Reasoning items are read apart (`reasoning_text`), never graded, so an answer
written only in reasoning earns nothing; nor do earlier messages (a draft
answer before a tool call), refusals, messages in another role, or an
`output_text` field a client adds to the response object. NeMo Gym's own
servers differ at the edges, and docs/frameworks.md lists where.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

ASSISTANT = "assistant"


class _Open(BaseModel):
    """A part of the protocol: the fields read here typed, every other one kept as sent."""

    model_config = ConfigDict(extra="allow")


class ContentPart(_Open):
    """One part of a message's or a reasoning item's content: `output_text`, `refusal`,
    `summary_text`, `reasoning_text`, `input_text`, ..."""

    type: str | None = None
    text: str | None = None


class OutputItem(_Open):
    """One item of `response.output`: a `message`, a `reasoning` item, a tool call, ..."""

    type: str
    role: str | None = None
    content: list[ContentPart] | str | None = None
    summary: list[ContentPart] | None = None


class ModelResponse(_Open):
    """The policy model's Responses-API response; only `output` is read."""

    output: list[OutputItem]


class InputMessage(_Open):
    """One item of the request's `input`: a message (role and content) or any other item."""

    role: str | None = None
    content: list[ContentPart] | str | None = None


class CreateParams(_Open):
    """The request the policy model got (`responses_create_params`)."""

    input: list[InputMessage] | str


def _parts_text(content: list[ContentPart] | str | None, kinds: frozenset[str]) -> str:
    if isinstance(content, str):
        return content
    return "".join(part.text for part in content or () if part.type in kinds and part.text)


_OUTPUT_TEXT = frozenset({"output_text"})
_REASONING_PARTS = frozenset({"summary_text", "reasoning_text"})


def final_message(response: ModelResponse) -> OutputItem | None:
    """The last assistant `message` item of the output (an item without a role counts as
    the assistant's), or None when there is none."""
    for item in reversed(response.output):
        if item.type == "message" and item.role in (None, ASSISTANT):
            return item
    return None


def final_text(response: ModelResponse) -> str:
    """The answer NeMo Gym's verifiers read: the final message's `output_text` parts, joined;
    "" without a final message."""
    message = final_message(response)
    return "" if message is None else _parts_text(message.content, _OUTPUT_TEXT)


def reasoning_text(response: ModelResponse) -> str:
    """Every reasoning item's summary and content text, joined: read apart, never graded."""
    return "".join(
        _parts_text(item.summary, _REASONING_PARTS) + _parts_text(item.content, _REASONING_PARTS)
        for item in response.output
        if item.type == "reasoning"
    )


def last_user_text(params: CreateParams) -> str:
    """The question: the last user message's text (its text parts joined by newlines), or
    the whole `input` when it is a string."""
    if isinstance(params.input, str):
        return params.input.strip()
    text = ""
    for message in params.input:
        if message.role != "user":
            continue
        if isinstance(message.content, str):
            text = message.content
        elif message.content:
            text = "\n".join(part.text for part in message.content if part.text is not None)
    return text.strip()
