"""Answers of equal parsed values share one `verify`, and never a verdict math_verify would
not give each of them."""

from __future__ import annotations

import pytest

from reward_service.bench.reference import Case, plain_grade
from reward_service.scorers.base import JSON, GradingLimits
from reward_service.scorers.math_verify.scorer import MathVerifyScorer

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

ADVERSARIAL: list[tuple[JSON, list[str]]] = [
    ("0.5", ["\\frac{1}{2}", "\\frac12", "\\frac{2}{4}", "0.50", ".5", "1/2", "50\\%"]),
    ("0.5", ["0.5000001", "0.500001", "\\frac{1000001}{2000000}", "0.5"]),
    ("\\frac{1}{3}", ["\\frac{2}{6}", "0.333333", "0.3333333", "0.33", "\\frac{1}{3}", "1/3"]),
    (0.75, ["\\frac{6}{8}", "\\frac{9}{12}", "\\frac{3}{4}", "0.75", "3/4", "75\\%"]),
    ("[1, 2)", ["[1,2)", "[1, 2)", "[ 1 , 2 )", "(1,2]", "[1,2]", "(1, 2)", "[1, 2.0)"]),
    ("(1, 2)", ["(1,2)", "(1, 2)", "\\{1, 2\\}", "[1, 2]", "(2, 1)", "1, 2"]),
    ("\\frac{\\pi}{3}", ["\\pi/3", "\\frac{\\pi}{3}", "\\frac{1}{3}\\pi", "1.047198", "\\pi/4"]),
    ("\\sqrt{12}", ["2\\sqrt{3}", "2\\sqrt3", "\\sqrt{12}", "3.464102", "\\sqrt{13}"]),
    ("\\sqrt{12}", ["3\\sqrt{2}", "2\\sqrt{3}", "\\sqrt{3} \\cdot 2"]),
    ("x^2", ["x^{2}", "x^2", "X^2", "x^2+0", "x\\cdot x", "y^2", "x^{3}"]),
    (1000, ["1,000", "1000", "1000.0", "10^3", "10^{3}", "1{,}000", "999.9999999"]),
    ("\\text{(A)}", ["A", "(A)", "\\text{A}", "\\text{(A)}", "B", "\\text{(B)}"]),
    ("x=2", ["2", "x=2", "y=2", "x = 2", "2=x"]),
    ("0", ["-0", "+0", "0", "0.0", "-0.0", "\\frac{0}{5}"]),
]
"""Golds and answers some of which share a parsed value, some a text up to spaces, some
only a numeric neighbourhood: each pair a way a too-coarse key would merge two grades."""


@pytest.mark.parametrize(("label", "forms"), ADVERSARIAL)
def test_each_answer_keeps_plain_math_verify_s_verdict(label: JSON, forms: list[str]) -> None:
    """Graded in turn by one scorer (caches shared, both orders), every answer of a group
    gets the verdict plain math_verify gives it alone."""
    for order in (forms, forms[::-1]):
        scorer = MathVerifyScorer(GradingLimits())
        for form in order:
            response = f"so $\\boxed{{{form}}}$."
            expected = plain_grade(Case(response, label, "adversarial"))[0]
            assert scorer.score(None, response, label, {}).reward == expected, (label, form)


def test_equal_values_share_one_verify() -> None:
    """`\\frac{6}{8}` and `\\frac{9}{12}` read to one Rational: the second reuses the
    first's verdict (a value hit) instead of calling `verify` again."""
    scorer = MathVerifyScorer(GradingLimits())
    first = scorer.score(None, "so $\\boxed{\\frac{6}{8}}$.", 0.75, {})
    second = scorer.score(None, "so $\\boxed{\\frac{9}{12}}$.", 0.75, {})
    assert (first.reward, first.details["cache"]) == (1.0, "miss")
    assert (second.reward, second.details["cache"]) == (1.0, "hit")
    assert scorer.stats.value_hits == 1


def test_a_gold_string_match_is_not_shared_by_value() -> None:
    """An answer correct by its string alone lends its verdict to no other answer of its
    value: the next one of that value is verified on its own."""
    scorer = MathVerifyScorer(GradingLimits())
    scorer.score(None, "so $\\boxed{\\frac{\\pi}{3}}$.", "\\frac{\\pi}{3}", {})
    scorer.score(None, "so $\\boxed{\\pi/3}$.", "\\frac{\\pi}{3}", {})
    assert scorer.stats.value_hits == 0
