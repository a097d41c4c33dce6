"""`deepscaler`: SLIME's `--rm-type deepscaler`, graded without crashing.

Only the final solution counts: the text after the last `</think>`, else the
text after `###Response` (up to a second `###Response`, as SLIME splits).
A response with neither marker earns 0 (`no_answer`); otherwise the
solution is graded as by `math`.
"""

from __future__ import annotations

from collections.abc import Mapping

from reward_service.scorers.base import JSON, Score, Scorer
from reward_service.scorers.math_dataset import grade_boxed

THINK_END = "</think>"
RESPONSE_MARKER = "###Response"


def final_solution(response: str) -> str | None:
    """The part of `response` after its reasoning, or None when no marker ends it."""
    if THINK_END in response:
        return response.rpartition(THINK_END)[2]
    if RESPONSE_MARKER in response:
        return response.split(RESPONSE_MARKER, 2)[1]
    return None


class DeepScalerScorer(Scorer):
    """1.0 when the boxed answer after the reasoning equals the label, else 0.0."""

    name = "deepscaler"

    def score(self, prompt: JSON, response: str, label: JSON, options: Mapping[str, JSON]) -> Score:
        if not isinstance(response, str):
            return Score.error("response is not a string")
        solution = final_solution(response)
        if solution is None:
            return Score.no_answer(f"no {THINK_END} or {RESPONSE_MARKER} marker")
        return grade_boxed(solution, label, self.limits.timeout_s)
