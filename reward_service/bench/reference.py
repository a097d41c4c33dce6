"""The reference graders: plain math_verify, configured as the `math_verify` scorer documents.

`plain_grade` reads the answer as `extraction=final` does (the default),
`plain_grade_any` as `extraction=any` does (`parse(response)` as it comes).

`reward-service bench` times the service against `plain_grade`; the
differential tests check every verdict of the service against both.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from math_verify import ExprExtractionConfig, LatexExtractionConfig, parse, verify

from reward_service.scorers.base import JSON
from reward_service.scorers.labels import boxed, gold_texts


@dataclass(frozen=True)
class Case:
    """One answer to grade: what SLIME would send."""

    response: str
    label: JSON
    kind: str


def _plain_gold(label: JSON, timeout_s: int) -> list[Any]:
    """The label's golds, boxed unless boxed, parsed by math_verify's defaults, first match."""
    golds = gold_texts(label)
    if isinstance(golds, str):
        return []
    return [
        parsed
        for text in golds
        for parsed in parse(boxed(text), extraction_mode="first_match", parsing_timeout=timeout_s)
    ]


def _graded(gold: list[Any], answer: list[Any], timeout_s: int) -> tuple[float, str | None]:
    if not gold or not answer:
        return 0.0, None
    correct = verify(gold, answer, timeout_seconds=timeout_s)
    return (1.0 if correct else 0.0), str(answer[-1])[:200]


def plain_grade(case: Case, timeout_s: int = 3) -> tuple[float, str | None]:
    """Plain math_verify's reward for `case` and the answer text it read (`final` extraction)."""
    gold = _plain_gold(case.label, timeout_s)
    if not gold:
        return 0.0, None
    answer = parse(
        case.response,
        (
            LatexExtractionConfig(boxed_match_priority=0, try_extract_without_anchor=False),
            ExprExtractionConfig(try_extract_without_anchor=False),
        ),
        extraction_mode="first_match",
        parsing_timeout=timeout_s,
    )
    return _graded(gold, answer, timeout_s)


def plain_grade_any(case: Case, timeout_s: int = 3) -> tuple[float, str | None]:
    """The same with `extraction=any`: the answer is `math_verify.parse(response)`, its defaults."""
    gold = _plain_gold(case.label, timeout_s)
    if not gold:
        return 0.0, None
    return _graded(gold, parse(case.response, parsing_timeout=timeout_s), timeout_s)
