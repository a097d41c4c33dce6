"""OpenRLHF's `--remote_rm_url` contract, as pure translation.

OpenRLHF posts `{"query": [...], "prompts": [...], "labels": [...]}` where each
query is the prompt and the response decoded together, and reads back
`{"rewards": [...], "scores": [...], "extra_logs": {...}}` in input order
(`extra_logs` values are lists of numbers; it logs their means).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from reward_service.contracts.slime import sample_from_json
from reward_service.errors import BadRequest
from reward_service.grading.sample import Sample
from reward_service.scorers.base import JSON, Score, Status


def _list(body: Mapping[str, Any], key: str, length: int | None) -> list[JSON]:
    value = body.get(key)
    if value is None:
        return [None] * (length or 0)
    if not isinstance(value, list):
        raise BadRequest(f"{key!r} must be a list")
    if length is not None and len(value) != length:
        raise BadRequest(f"{key!r} has {len(value)} items, 'query' has {length}")
    return value


def samples_from_openrlhf(body: Mapping[str, Any]) -> list[Sample]:
    """One sample per query; the prompt is cut off the query when it is its prefix."""
    queries = _list(body, "query", None)
    prompts = _list(body, "prompts", len(queries))
    labels = _list(body, "labels", len(queries))
    samples = []
    for query, prompt, label in zip(queries, prompts, labels, strict=True):
        text = query if isinstance(query, str) else ""
        if isinstance(prompt, str) and prompt and text.startswith(prompt):
            text = text[len(prompt) :]
        samples.append(sample_from_json({"prompt": prompt, "response": text, "label": label}))
    return samples


def openrlhf_answer(scores: Sequence[Score]) -> dict[str, Any]:
    """The answer OpenRLHF reads: rewards, scores and per-status rates to log."""
    rewards = [score.reward for score in scores]

    def rate(*statuses: Status) -> list[float]:
        return [1.0 if score.status in statuses else 0.0 for score in scores]

    return {
        "rewards": rewards,
        "scores": rewards,
        "extra_logs": {
            "reward_correct": rate(Status.OK),
            "reward_no_answer": rate(Status.NO_ANSWER),
            "reward_failed": rate(Status.TIMEOUT, Status.ERROR),
        },
    }
