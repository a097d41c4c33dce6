"""`deepscaler`: SLIME's `--rm-type deepscaler`, graded without crashing.

Only the final solution counts: the answer region after the `</think>` (read as
every scorer reads it, `scorers.reasoning`; `think=after` is SLIME's reading,
after the last one), else the text after `###Response` (up to a second
`###Response`, as SLIME splits). A response with neither marker earns 0
(`no_answer`); otherwise the solution is graded as by `math`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

from reward_service.scorers.base import JSON, Score, Scorer
from reward_service.scorers.reasoning import (
    AFTER,
    REQUIRED,
    STRICT,
    THINK_END,
    Unanswered,
    final_answer,
)
from reward_service.scorers.slime.math_dataset import grade_boxed

RESPONSE_MARKER = "###Response"


def final_solution(response: str, options: Mapping[str, JSON]) -> str | Unanswered:
    """The part of `response` after its reasoning, or why there is none."""
    answer = final_answer(response, options)
    if isinstance(answer, Unanswered) or THINK_END in response:
        return answer
    if RESPONSE_MARKER in response:
        return response.split(RESPONSE_MARKER, 2)[1]
    return Unanswered(f"no {THINK_END} or {RESPONSE_MARKER} marker")


class DeepScalerScorer(Scorer):
    """1.0 when the boxed answer after the reasoning equals the label, else 0.0."""

    name = "deepscaler"
    correct_is_label = True
    options: ClassVar[Mapping[str, frozenset[str] | None]] = {
        "think": frozenset({STRICT, REQUIRED, AFTER})
    }

    def score(self, prompt: JSON, response: str, label: JSON, options: Mapping[str, JSON]) -> Score:
        solution = final_solution(response, options)
        if isinstance(solution, Unanswered):
            return solution.score()
        return grade_boxed(solution, label, self.limits.timeout_s)
