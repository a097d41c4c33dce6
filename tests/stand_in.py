"""How the tests' scripted stand-in (`reward_service.testing.StandIn`) grades."""

from __future__ import annotations

from typing import Any


def grade_like_math(body: Any) -> float:
    """The stand-in's grading: 1.0 when the response ends in `\\boxed{<label>}`."""
    label = body["label"]
    if isinstance(label, dict):
        label = label.get("answer")
    return 1.0 if str(body["response"]).endswith(f"\\boxed{{{label}}}") else 0.0
