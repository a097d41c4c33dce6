"""The group endpoint's body: one prompt, one label, the n answers a GRPO step drew for it.

`{"prompt", "label", "responses": [...], "k": [1, 8]}`: each response is read as
SLIME's body reads one (`contracts.slime`), with the group's prompt and label, so a
label object picks the scorer and options for the whole group. `k` (an integer or a
list) names the k of the pass@k estimates wanted; without it, 1 and n. Unlike SLIME's
body, which is never refused, a body that is not a group is a `400`: only clients
written for this endpoint send one.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from reward_service.contracts.slime import sample_from_json
from reward_service.errors import BadRequest, PayloadTooLarge
from reward_service.grading.sample import Sample
from reward_service.scorers.base import JSON

SHAPE = '{"prompt", "label", "responses": ["...", ...], "k": [1, 8]}'
MAX_KS = 16
"""Distinct k values one request may ask for."""


@dataclass(frozen=True)
class GroupBody:
    """A group read from its body: a sample per response, in order, and the k asked."""

    samples: list[Sample]
    ks: tuple[int, ...]


def group_from_json(body: Mapping[str, JSON], max_items: int) -> GroupBody:
    """The group in `body`; `BadRequest` when it is not one, `PayloadTooLarge` past
    `max_items` responses."""
    responses = body.get("responses")
    if not isinstance(responses, list) or not responses:
        raise BadRequest(f"a group body is {SHAPE} with at least one response")
    if len(responses) > max_items:
        raise PayloadTooLarge(f"group of {len(responses)} responses is over the cap of {max_items}")
    shared = {"prompt": body.get("prompt"), "label": body.get("label")}
    samples = [sample_from_json({**shared, "response": response}) for response in responses]
    return GroupBody(samples, _ks(body.get("k"), len(samples)))


def _ks(asked: JSON, n: int) -> tuple[int, ...]:
    """The k values of `asked` (an integer or a list of them), else (1, n)."""
    if asked is None:
        return tuple(sorted({1, n}))
    values = asked if isinstance(asked, list) else [asked]
    if not values or len(values) > MAX_KS:
        raise BadRequest(f"k must be a positive integer or a list of 1 to {MAX_KS} of them")
    for value in values:
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise BadRequest(f"k must be a positive integer or a list of them, not {value!r}")
    return tuple(sorted(set(values)))
