"""SLIME's body, read leniently from any JSON object, with routing from the label.

SLIME sends `{"prompt", "response", "label"}` and retries every 4xx until the
training run dies, so a JSON object is never refused for its fields: missing
fields get defaults, extra ones are ignored, odd types are coerced. A label
object can pick the scorer per sample (`sample_from_json`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping

from reward_service.grading.sample import Sample
from reward_service.scorers.base import JSON

_ROUTING_KEYS = ("scorer", "answer", "ground_truth")


def _text(value: JSON) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, ensure_ascii=False)
    except (RecursionError, ValueError):
        return ""  # nested past what a response can mean: graded as no answer


def sample_from_json(body: Mapping[str, JSON]) -> Sample:
    """A `Sample` from a request object; per-sample routing comes from the label.

    A label object with a `scorer` key picks that scorer; its `answer` (or
    `ground_truth`) is the gold and its other keys are the scorer's options.
    A label object with only `answer`/`ground_truth` keeps the route's scorer.
    Its options override the URL's and the deployment's (the engine merges
    them) and are never refused here: a dataset may carry keys no scorer
    reads, and a scorer grades a value it cannot use as status `error`.
    """
    label = body.get("label")
    scorer: str | None = None
    options: dict[str, JSON] = {}
    if isinstance(label, dict) and any(key in label for key in _ROUTING_KEYS):
        chosen = label.get("scorer")
        scorer = chosen if isinstance(chosen, str) and chosen else None
        options = {k: v for k, v in label.items() if k not in _ROUTING_KEYS}
        label = label["answer"] if "answer" in label else label.get("ground_truth")
    return Sample(
        response=_text(body.get("response")),
        label=label,
        prompt=body.get("prompt"),
        scorer=scorer,
        options=options,
    )
