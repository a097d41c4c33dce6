"""The reference grader: plain math_verify, configured as the `math_verify` scorer documents.

`reward-service bench` times the service against it, and the differential
tests check every verdict of the service against it.
"""

from __future__ import annotations

from dataclasses import dataclass

from math_verify import ExprExtractionConfig, LatexExtractionConfig, parse, verify

from reward_service.scorers.base import JSON
from reward_service.scorers.labels import boxed, gold_texts


@dataclass(frozen=True)
class Case:
    """One answer to grade: what SLIME would send."""

    response: str
    label: JSON
    kind: str


def plain_grade(case: Case, timeout_s: int = 3) -> tuple[float, str | None]:
    """Plain math_verify's reward for `case` and the answer text it read."""
    golds = gold_texts(case.label)
    if isinstance(golds, str):
        return 0.0, None
    gold = [
        parsed
        for text in golds
        for parsed in parse(boxed(text), extraction_mode="first_match", parsing_timeout=timeout_s)
    ]
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
    if not answer:
        return 0.0, None
    correct = verify(gold, answer, timeout_seconds=timeout_s)
    return (1.0 if correct else 0.0), str(answer[-1])[:200]
