"""`math`: SLIME's in-process `--rm-type math`, graded without crashing.

The last `\\boxed{}` (or `\\fbox{}`) of the answer region (`scorers.reasoning`;
SLIME reads the whole response, `think=keep`) is the answer; a boxed
label is unboxed; a list label holds alternatives. See `math_dataset` for
the comparison. Unlike SLIME, a label of `0` is graded (SLIME's
`if not ground_truth` marks it wrong) and odd labels get a status.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

from reward_service.scorers.base import JSON, Score, Scorer
from reward_service.scorers.reasoning import THINK_MODES, Unanswered, final_answer
from reward_service.scorers.slime.math_dataset import grade_boxed


class MathScorer(Scorer):
    """1.0 when the last boxed answer equals the label (string or sympy), else 0.0."""

    name = "math"
    correct_is_label = True
    options: ClassVar[Mapping[str, frozenset[str] | None]] = {"think": THINK_MODES}

    def score(self, prompt: JSON, response: str, label: JSON, options: Mapping[str, JSON]) -> Score:
        answer = final_answer(response, options)
        if isinstance(answer, Unanswered):
            return answer.score()
        return grade_boxed(answer, label, self.limits.timeout_s)
