"""`dapo`: SLIME's `--rm-type dapo` (the DAPO / Minerva answer check).

The prediction is the last `Answer: X` line within the final 300 characters
of the answer region (`scorers.reasoning`; SLIME reads the whole response,
`think=keep`), normalised the Minerva way (units, `\\text{}`, `$`, `\\boxed`
and thousands commas dropped). The label is normalised the same way; when
it reads as an integer (DAPO's labels all do) it is compared in canonical
form (`42.0` -> `42`), otherwise as a normalised string, where SLIME would
crash or truncate. Reward 1.0 when equal, -1.0 otherwise, including when
no answer is found. `details` carries `acc` and `pred`, as SLIME logs them.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import ClassVar

from reward_service.scorers.base import JSON, Score, Scorer, Status
from reward_service.scorers.labels import gold_texts
from reward_service.scorers.reasoning import THINK_MODES, Unanswered, final_answer

WINDOW_CHARS = 300
"""How much of the response's end is searched (MATH-500's longest answer is 159)."""

MAX_LABEL_CHARS = 1000
"""Longer labels are refused: the normalisation's regexes are quadratic."""

NO_PREDICTION = "[INVALID]"

_ANSWER = re.compile(r"(?i)answer\s*:\s*([^\n]+)")
_SUBSTITUTIONS = (
    ("an ", ""),
    ("a ", ""),
    (".$", "$"),
    ("\\$", ""),
    ("\\ ", ""),
    (" ", ""),
    ("mbox", "text"),
    (",\\text{and}", ","),
    ("\\text{and}", ","),
    ("\\text{m}", "\\text{}"),
)
_REMOVED = (
    *("square", "ways", "integers", "dollars", "mph", "inches", "hours", "km", "units"),
    *("\\ldots", "sue", "points", "feet", "minutes", "digits", "cents", "degrees", "cm"),
    *("gm", "pounds", "meters", "meals", "edges", "students", "childrentickets", "multiples"),
    *("\\text{s}", "\\text{.}", "\\text{\ns}", "\\text{}^2", "\\text{}^3", "\\text{\n}"),
    *("\\text{}", "\\mathrm{th}", "^\\circ", "^{\\circ}", "\\;", ",\\!", "{,}", '"', "\\dots"),
    *("<|im_end|>", "<|endoftext|>"),
)
_FIRST_MATH_SPAN = re.compile(r".*?\$(.*?)\$.*")
_UNWRAPPED = (
    re.compile(r"\\text\{(.*?)\}"),
    re.compile(r"\\textbf\{(.*?)\}"),
    re.compile(r"\\overline\{(.*?)\}"),
    re.compile(r"\\boxed\{(.*)\}"),
)
_FRAC_SHORTHAND = re.compile(r"frac([^{])(.)")
_SQRT_SHORTHAND = re.compile(r"sqrt([^{])")


def normalize_final_answer(answer: str) -> str:
    """Minerva's normalisation of a final answer: `$\\boxed{1,000}$ dollars` -> `1000`."""
    answer = answer.split("=")[-1]
    for old, new in _SUBSTITUTIONS:
        answer = answer.replace(old, new)
    for removed in _REMOVED:
        answer = answer.replace(removed, "")
    answer = _FIRST_MATH_SPAN.sub(r"$\1$", answer)
    for wrapper in _UNWRAPPED:
        answer = wrapper.sub(r"\1", answer)
    answer = _FRAC_SHORTHAND.sub(r"frac{\1}{\2}", answer)
    answer = _SQRT_SHORTHAND.sub(r"sqrt{\1}", answer).replace("$", "")
    if answer.replace(",", "").isdigit():
        answer = answer.replace(",", "")
    return answer.strip()


def _canonical_integer(text: str) -> str | None:
    """`text` as a canonical integer string when it reads as an integer, else None."""
    try:
        return str(int(text))
    except ValueError:
        pass
    try:
        value = float(text)
    except ValueError:
        return None
    return str(int(value)) if math.isfinite(value) and value.is_integer() else None


def gold_answers(label: JSON) -> list[str] | str:
    """The label's normalised gold answers, or why it has none."""
    golds = gold_texts(label)
    if isinstance(golds, str):
        return golds
    if any(len(gold) > MAX_LABEL_CHARS for gold in golds):
        return f"label longer than {MAX_LABEL_CHARS} characters"
    normal = [normalize_final_answer(gold) for gold in golds]
    return [_canonical_integer(gold) or gold for gold in normal]


class DapoScorer(Scorer):
    """1.0 when the last `Answer:` equals the label, else -1.0."""

    name = "dapo"
    correct_is_label = True
    options: ClassVar[Mapping[str, frozenset[str] | None]] = {"think": THINK_MODES}

    def score(self, prompt: JSON, response: str, label: JSON, options: Mapping[str, JSON]) -> Score:
        golds = gold_answers(label)
        if isinstance(golds, str):
            return Score.error(golds)
        answer = final_answer(response, options)
        if isinstance(answer, Unanswered):
            return answer.score(reward=-1.0, acc=False, pred=NO_PREDICTION)
        found = _ANSWER.findall(answer[-WINDOW_CHARS:])
        if not found:
            reason = f"no 'Answer:' in the last {WINDOW_CHARS} characters"
            return Score.no_answer(reason, reward=-1.0, acc=False, pred=NO_PREDICTION)
        pred = normalize_final_answer(found[-1])
        correct = pred in golds
        return Score(
            1.0 if correct else -1.0,
            Status.OK if correct else Status.WRONG,
            {"acc": correct, "pred": pred},
        )
