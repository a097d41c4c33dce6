"""Plain-number answers read straight into math_verify's own sympy values."""

from __future__ import annotations

import pytest
from math_verify import parse
from sympy import srepr

from reward_service.scorers.math_verify.extract import ANSWER_EXPR, ANSWER_LATEX, normalized
from reward_service.scorers.math_verify.values import exact_value

PLAIN_NUMBERS = [
    "42", "-42", "+42", "007", "-0", "3.14", "-3.14", "0.5", "-0.5", ".5", "1,000",
    "-12,345,678", "1.50", "0.0", "-0.0", "3.141592653589793238462643383279",
    "\\frac{1}{2}", "\\frac12", "-\\frac{1}{2}", "\\frac{-1}{2}", "\\frac{4}{2}", "1/2",
    "-4/6", "\\dfrac{3}{4}", "50\\%", "50%", "050%", "0%",
    "[-6, -3)", "[-6,-3)", "(-6, -3]", "[1, 2]", "(1, 2)", "[ 1 , 2 )", "(0,1)", "[-0, 2)",
    "(1 ,2)", "[ -1, 3)", "(-12345678901, 0]",
]  # fmt: skip


@pytest.mark.parametrize("number", PLAIN_NUMBERS)
def test_exact_value_matches_math_verify(number: str) -> None:
    """A boxed plain number reads to math_verify's own sympy value, structure included."""
    expected = parse(f"\\boxed{{{number}}}", (ANSWER_LATEX, ANSWER_EXPR), "first_match")
    latex = normalized(f"{number}")
    value = exact_value(latex)
    assert [srepr(value), latex] == [srepr(expected[0]), expected[1]]


@pytest.mark.parametrize(
    "latex",
    [
        *["3.", "1,00", "0,5", "10^{3}", "\\frac{1}{0}", "-5\\%", "2.5\\%", "x", ""],
        *["(3, 1)", "[2, 2]", "(2, 2)", "[1.5, 2)", "[01, 2)", "[+1, 2)", "[1,  2)"],
        *["[1, \\infty)", "\\{1, 2\\}", "(1, 2, 3)", "[1, 2", "\\left[1, 2\\right)"],
    ],
)
def test_exact_value_leaves_other_forms_to_math_verify(latex: str) -> None:
    """Forms whose value is not a plain number are not read on the fast path."""
    assert exact_value(latex) is None


INTERVAL_GOLDS = ["[-6, -3)", "(1, 2]", "[1,2]", "(0, 5)", "(3, 1)", "[2, 2]", "[ -1 , 3)"]


@pytest.mark.parametrize("label", INTERVAL_GOLDS)
def test_interval_golds_parse_as_math_verify_parses_them(label: str) -> None:
    """A gold interval read without antlr is the list math_verify's default `parse` builds."""
    from reward_service.scorers.base import GradingLimits
    from reward_service.scorers.labels import boxed
    from reward_service.scorers.math_verify.scorer import MathVerifyScorer

    gold = MathVerifyScorer(GradingLimits())._gold(label)
    assert [srepr(x) for x in gold.parsed] == [srepr(x) for x in parse(boxed(label))]
