"""Screening spots answers that would stall sympy, and lets real answers through."""

from __future__ import annotations

import pytest

from reward_service.scorers.hazards import answer_region, find_hazard


@pytest.mark.parametrize(
    "answer",
    [
        "9^{9^{9^{9}}}",
        "(10^{100})!",
        "2^{2^{40}}",
        "10^{10^{7}}",
        "1000000!",
        "{" * 13 + "1" + "}" * 13,
        "(" * 50 + "1" + ")" * 50,
        "\\left(" * 14 + "x" + "\\right)" * 14,
    ],
)
def test_hazards_are_found(answer: str) -> None:
    """Towers, huge factorials and deep nesting are rejected."""
    assert find_hazard(answer) is not None


@pytest.mark.parametrize(
    "answer",
    [
        "42",
        "\\frac{\\sqrt{2}}{2}",
        "2^{2^{20}}",
        "10^{100000}",
        "100000!",
        "e^{x^2}",
        "x^{2^{10}}",
        "(n+1)!",
        "\\begin{pmatrix} 1 & 2 \\\\ 3 & 4 \\end{pmatrix}",
        "[1, 3)",
    ],
)
def test_ordinary_answers_pass(answer: str) -> None:
    """Answers sympy handles quickly are not rejected."""
    assert find_hazard(answer) is None


def test_region_is_the_last_box() -> None:
    """With a box, only the last one is screened, not the reasoning before it."""
    response = "we note 9^{9^{9^{9}}} is absurd, so \\boxed{3}"
    assert answer_region(response).startswith("\\boxed{3}")
    assert find_hazard(answer_region(response)) is None


def test_region_without_box_is_the_tail() -> None:
    """Without a box, the tail of the response is screened."""
    assert answer_region("a" * 10_000, tail_chars=100) == "a" * 100


def test_region_ends_where_the_box_closes() -> None:
    """The region is the box itself, so text after it is never screened."""
    response = "so \\boxed{\\frac{1}{2}} and then 9^{9^{9^{9}}}"
    assert answer_region(response) == "\\boxed{\\frac{1}{2}}"
