"""OpenRLHF's `--remote_rm_url` contract, as pure translation.

OpenRLHF posts `{"query": [...], "prompts": [...], "labels": [...]}` where each
query is the tokenizer's decode of the prompt's and the response's tokens
together, and reads back `{"rewards": [...], "scores": [...], "extra_logs":
{...}}` in input order (`extra_logs` values are lists of numbers, one per
query; it logs their means). `extra_logs["loss_multiplier"]` is each query's
`Status.loss_multiplier`: 0.0 where its reward is a fallback.

A decode is not always the prompt it came from (spaces added or dropped,
special tokens kept or skipped, pad tokens in front), so the response is found
by `response_start`, whose rule docs/frameworks.md states. A query whose
response cannot be found is never graded, as grading it whole would grade the
prompt's own text: it gets status `error`, and its reason (`Unlocated`) is a
key of `extra_logs`.
"""

from __future__ import annotations

import enum
import re
from bisect import bisect_left
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import accumulate
from typing import Any

from reward_service.contracts.slime import sample_from_json
from reward_service.errors import BadRequest
from reward_service.grading.sample import Sample
from reward_service.scorers.base import JSON, Score, Status

_LONGEST_MARKUP = 68
"""Characters in the longest markup `_MARKUP` matches: `<|`, 64 more and `|>`."""
_MARKUP = "|".join(
    (
        r"<\|[^\s|<>]{1,64}\|>",  # <|im_start|>, <|eot_id|>, <|begin_of_text|>, <|endoftext|>
        r"<\uff5c[^\s\uff5c<>]{1,64}\uff5c>",  # DeepSeek's, in fullwidth bars (U+FF5C)
        r"</?[A-Za-z_][A-Za-z0-9_]{0,31}>",  # <s>, </s>, <pad>, <start_of_turn>, <think>
        r"\[/?[A-Z][A-Z_]{1,31}\]",  # [INST], [/INST], [PAD]
    )
)
_IGNORED = re.compile(rf"((?:\s|{_MARKUP})+)")
"""What a decode may add, drop or change: whitespace and special-token markup.

Each alternative looks at most `_LONGEST_MARKUP` characters ahead, so a scan is linear."""
_PIECES = re.compile(rf"\s+|{_MARKUP}")
_SPACES = re.compile(r"\s*")


class Unlocated(enum.Enum):
    """Why a query's response cannot be found; `reward_<value>` in `extra_logs`."""

    PROMPT_MISSING = "prompt_missing"
    """No prompt string came with the query: nothing tells its response from its prompt."""
    PROMPT_NOT_FOUND = "prompt_not_found"
    """The query does not start with its prompt, even with whitespace and markup ignored."""


@dataclass(frozen=True)
class OpenRLHFRequest:
    """A `/get_reward` body, read: what to grade and what cannot be."""

    samples: list[Sample | None]
    """One per query; None where its response cannot be found (the engine grades it `error`)."""
    unlocated: list[Unlocated | None]
    """Per query, why its response cannot be found; None where it was found."""


def response_start(prompt: str, query: str) -> int | None:
    """Where the response begins in `query`; None when `query` does not start with `prompt`.

    The query starts with the prompt when it does exactly, or does once the
    whitespace and markup both begin with are set aside (pad or BOS tokens in
    front), or does once all whitespace and special-token markup are dropped
    from both (the rule in full: docs/frameworks.md). Costs time linear in the
    prompt and in the part of the query that holds it, scanned by `re` and `str`.
    """
    if query.startswith(prompt):
        return len(prompt)
    prompt_lead, query_lead = _lead(prompt), _lead(query)
    if prompt_lead < len(prompt) and query.startswith(prompt[prompt_lead:], query_lead):
        return query_lead + len(prompt) - prompt_lead
    pieces = _IGNORED.split(prompt)  # text, ignored, text, ..., text
    text = "".join(pieces[::2])
    tail = pieces[-2] if len(pieces) > 1 and not pieces[-1] else ""
    cut = _text_end(text, query, len(prompt)) if text else 0
    return None if cut is None else _past_tail(tail, query, cut)


def _lead(text: str) -> int:
    lead = _IGNORED.match(text)
    return lead.end() if lead else 0


def _text_end(text: str, query: str, expected: int) -> int | None:
    """Where `text` ends in `query`, if `query` with whitespace and markup dropped starts with it.

    Only a head of the query is split, `expected` characters and a margin at
    first, doubled until it holds `text`'s last character with room for any
    markup there to be read whole.
    """
    size = expected + expected // 4 + 2 * _LONGEST_MARKUP
    while True:
        head = _IGNORED.split(query[:size])
        ends = list(accumulate(map(len, head[::2])))
        last = bisect_left(ends, len(text))
        if last < len(ends):
            cut = sum(map(len, head[: 2 * last])) + len(text) - (ends[last - 1] if last else 0)
            if cut + _LONGEST_MARKUP <= size or size >= len(query):
                return cut if "".join(head[: 2 * last + 1 : 2]).startswith(text) else None
        if size >= len(query):
            return None
        size *= 2


def _past_tail(tail: str, query: str, start: int) -> int:
    """Where the response begins: past what `query`, from `start`, repeats of `tail`.

    `tail` is the whitespace and markup the prompt ends with. A special token
    of it is passed where the query has it next (after whitespace), and taken
    as skipped by the decode where not; its whitespace is passed as far as the
    query has the same.
    """
    spaces_end = _after_spaces(query, start)
    for piece in _PIECES.finditer(tail):
        token = piece.group()
        if token[0].isspace():
            start += _repeated(token, query, start)
        elif query.startswith(token, spaces_end):
            start = spaces_end + len(token)
            spaces_end = _after_spaces(query, start)
    return start


def _after_spaces(text: str, start: int) -> int:
    spaces = _SPACES.match(text, start)
    return spaces.end() if spaces else start


def _repeated(text: str, query: str, start: int) -> int:
    """How many of `text`'s first characters `query` repeats from `start` on."""
    theirs = query[start : start + len(text)]
    for count, (mine, their) in enumerate(zip(text, theirs, strict=False)):
        if mine != their:
            return count
    return len(theirs)


def _response(prompt: JSON, query: str) -> str | Unlocated:
    if not isinstance(prompt, str):
        return Unlocated.PROMPT_MISSING
    start = response_start(prompt, query)
    return Unlocated.PROMPT_NOT_FOUND if start is None else query[start:]


def _list(body: Mapping[str, Any], key: str, length: int | None) -> list[JSON]:
    value = body.get(key)
    if value is None:
        return [None] * (length or 0)
    if not isinstance(value, list):
        raise BadRequest(f"{key!r} must be a list")
    if length is not None and len(value) != length:
        raise BadRequest(f"{key!r} has {len(value)} items, 'query' has {length}")
    return value


def read_openrlhf(body: Mapping[str, Any]) -> OpenRLHFRequest:
    """One sample per query, its response found after its prompt (`response_start`)."""
    queries = _list(body, "query", None)
    prompts = _list(body, "prompts", len(queries))
    labels = _list(body, "labels", len(queries))
    samples: list[Sample | None] = []
    unlocated: list[Unlocated | None] = []
    for query, prompt, label in zip(queries, prompts, labels, strict=True):
        response = _response(prompt, query if isinstance(query, str) else "")
        if isinstance(response, Unlocated):
            samples.append(None)
            unlocated.append(response)
        else:
            samples.append(
                sample_from_json({"prompt": prompt, "response": response, "label": label})
            )
            unlocated.append(None)
    return OpenRLHFRequest(samples, unlocated)


def openrlhf_answer(
    scores: Sequence[Score], unlocated: Sequence[Unlocated | None]
) -> dict[str, Any]:
    """The answer OpenRLHF reads: rewards, scores, and per-status and per-reason rates to log."""
    rewards = [score.reward for score in scores]

    def rate(*statuses: Status) -> list[float]:
        return [1.0 if score.status in statuses else 0.0 for score in scores]

    return {
        "rewards": rewards,
        "scores": rewards,
        "extra_logs": {
            "reward_correct": rate(Status.OK),
            "reward_no_answer": rate(Status.NO_ANSWER),
            "reward_failed": rate(Status.TIMEOUT, Status.ERROR, Status.JUDGE_FAILED),
            "loss_multiplier": [score.status.loss_multiplier for score in scores],
            **{
                f"reward_{reason.value}": [1.0 if found is reason else 0.0 for found in unlocated]
                for reason in Unlocated
            },
        },
    }
