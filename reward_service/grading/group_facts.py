"""What one prompt's group of graded answers tells a GRPO trainer.

GRPO, DAPO and their kin learn only from the differences inside a group of n
answers to one prompt, so the group's facts are worth computing once, where the
grades are: the mean and standard deviation of its rewards (what the trainer
normalises advantages with), whether every answer earned the same (DAPO's
dynamic sampling drops such a group: it teaches nothing), how many distinct
final answers it holds and how many share the most common one (majority
voting), and the unbiased pass@k estimate for each k asked.

Only verdicts count: an answer whose reward is a fallback (`timeout`,
`error`, `judge_failed`: `Status.is_verdict` false) carries no information
about the answer, so it is left out of the mean, the spread, `all_equal` and
pass@k, and counted in `masked` instead. Its final answer, when the scorer
read one, still counts among the distinct answers.

Two answers share a final answer when the scorer would judge them equal, not
when their texts are: every answer graded correct against the same label
shares the label's answer (when the scorer's `correct_is_label` says a correct
verdict means "equal to the label"), and the others are compared by
`answer_class`, their final answer in a canonical form (whitespace, `$`,
sizing commands and `\\dfrac` spellings dropped, plain numbers read as exact
fractions, so `0.5`, `1/2` and `\\frac{1}{2}` are one answer).

Everything here is linear in the group and its answers' final-answer texts: it
runs on the event loop.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from fractions import Fraction

from reward_service.scorers.base import JSON, Score, Status

LABEL_CLASS = "\x00label"
"""The answer class of every answer graded correct: the label's own final answer."""

MAX_NUMBER_CHARS = 64
"""Longer numbers keep their text as their class: exact fractions of huge texts cost time."""

_SPACING = re.compile(r"\\[,!;: ]|\\(?:left|right|displaystyle)\b|\$|\s+")
_FRAC_SPELLINGS = re.compile(r"\\[dt]frac\b")
_LATEX_FRACTION = re.compile(r"(-?)\\frac\{(-?\d+)\}\{(-?\d+)\}")
_PLAIN_FRACTION = re.compile(r"-?\d+/-?\d+")
_DECIMAL = re.compile(r"-?(?:\d+\.?\d*|\.\d+)")


def pass_at_k(n: int, c: int, k: int) -> float:
    """The unbiased estimate of pass@k from `n` graded answers of which `c` are correct:
    1 - C(n-c, k) / C(n, k), the chance that k answers drawn without replacement from
    the n hold at least one correct one (Chen et al., 2021).

    Computed as 1 - prod_{i=n-c+1}^{n} (1 - k/i), a product of c factors in [0, 1]:
    no factorials, so no overflow and no cancellation between huge numbers, for any n.
    Raises `ValueError` unless 0 <= c <= n and 1 <= k <= n.
    """
    if not 0 <= c <= n:
        raise ValueError(f"need 0 <= c <= n, got n={n}, c={c}")
    if not 1 <= k <= n:
        raise ValueError(f"need 1 <= k <= n, got n={n}, k={k}")
    if n - c < k:
        return 1.0
    missing = 1.0
    for i in range(n - c + 1, n + 1):
        missing *= 1.0 - k / i
    return 1.0 - missing


def answer_class(final_answer: str) -> str:
    """`final_answer` in a canonical form: two answers with one class are one answer."""
    text = _FRAC_SPELLINGS.sub(r"\\frac", _SPACING.sub("", final_answer)).rstrip(".")
    if len(text) <= MAX_NUMBER_CHARS:
        number = _exact_number(text)
        if number is not None:
            return str(number)
    return text


def _exact_number(text: str) -> Fraction | None:
    """`text` as an exact number when it is a plain one (`-3`, `0.50`, `1/2`, `\\frac{1}{2}`)."""
    try:
        if _DECIMAL.fullmatch(text) or _PLAIN_FRACTION.fullmatch(text):
            return Fraction(text)
        latex = _LATEX_FRACTION.fullmatch(text)
        if latex is not None:
            sign, numerator, denominator = latex.groups()
            value = Fraction(int(numerator), int(denominator))
            return -value if sign else value
    except ZeroDivisionError:
        return None
    return None


def answer_classes(
    scores: Sequence[Score], final_answers: Sequence[str | None], correct_is_label: bool
) -> list[str | None]:
    """Each answer's class: `LABEL_CLASS` when graded correct (if `correct_is_label`),
    else its final answer's `answer_class`, or None when it has no final answer.

    An answer whose class another answer reached by being correct is correct too, as
    far as the group's answers go: a class that holds a correct answer becomes the
    label's, so a timed-out copy of a correct answer still shares its class.
    """
    classes = [
        LABEL_CLASS
        if correct_is_label and score.status is Status.OK
        else (None if answer is None else answer_class(answer))
        for score, answer in zip(scores, final_answers, strict=True)
    ]
    if correct_is_label:
        merged = {
            answer_class(answer)
            for score, answer in zip(scores, final_answers, strict=True)
            if score.status is Status.OK and answer is not None
        }
        classes = [LABEL_CLASS if c in merged else c for c in classes]
    return classes


@dataclass(frozen=True)
class GroupFacts:
    """The facts of one group, as the group endpoint answers them."""

    size: int
    """Answers in the group."""
    graded: int
    """Answers with a verdict: the `n` of pass@k and what the statistics cover."""
    masked: int
    """Answers whose reward is a fallback (`loss_multiplier` 0): left out of the statistics."""
    correct: int
    """Verdicts of status `ok`: the `c` of pass@k."""
    mean: float | None
    """Mean reward of the verdicts; None without any."""
    std: float | None
    """Standard deviation of the verdicts' rewards with Bessel's correction (n - 1), as
    TRL's and verl's GRPO normalise advantages; 0.0 for one verdict, None for none."""
    all_equal: bool
    """Every verdict earned the same reward (true for no verdicts): the group teaches
    nothing, and DAPO's dynamic sampling drops it."""
    distinct_answers: int
    """Distinct final answers among the answers that hold one."""
    majority_count: int
    """Answers sharing the most common final answer (0 when none holds one)."""
    pass_at_k: dict[int, float | None]
    """The unbiased pass@k estimate for each k asked; None where k exceeds `graded`."""

    def as_json(self) -> dict[str, JSON]:
        """The facts as the group endpoint's `group` object."""
        return {
            "size": self.size,
            "graded": self.graded,
            "masked": self.masked,
            "correct": self.correct,
            "mean": self.mean,
            "std": self.std,
            "all_equal": self.all_equal,
            "distinct_answers": self.distinct_answers,
            "majority_count": self.majority_count,
            "pass_at_k": {str(k): value for k, value in self.pass_at_k.items()},
        }


def group_facts(
    scores: Sequence[Score], classes: Sequence[str | None], ks: Collection[int] = ()
) -> GroupFacts:
    """The facts of a group graded `scores`, whose answers fall in `classes`
    (`answer_classes`), with pass@k for each k in `ks`."""
    verdicts = [score for score in scores if score.status.is_verdict]
    rewards = [score.reward for score in verdicts]
    n = len(rewards)
    correct = sum(1 for score in verdicts if score.status is Status.OK)
    mean = math.fsum(rewards) / n if n else None
    std: float | None = None
    if mean is not None:
        std = math.sqrt(math.fsum((r - mean) ** 2 for r in rewards) / (n - 1)) if n > 1 else 0.0
    counts = Counter(c for c in classes if c is not None)
    return GroupFacts(
        size=len(scores),
        graded=n,
        masked=len(scores) - n,
        correct=correct,
        mean=mean,
        std=std,
        all_equal=len(set(rewards)) <= 1,
        distinct_answers=len(counts),
        majority_count=max(counts.values(), default=0),
        pass_at_k={k: pass_at_k(n, correct, k) if 1 <= k <= n else None for k in sorted(ks)},
    )
