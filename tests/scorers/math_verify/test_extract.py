"""Finding and reading the answer math_verify would grade, without its full parse."""

from __future__ import annotations

import pytest
from math_verify import parse

from reward_service.bench.reference import Case, plain_grade
from reward_service.scorers.math_verify.extract import (
    ANSWER_EXPR,
    ANSWER_LATEX,
    final_box,
    region,
)
from reward_service.scorers.math_verify.scorer import MathVerifyScorer


@pytest.mark.parametrize(
    ("response", "content"),
    [
        ("so \\boxed{42}.", "42"),
        ("so $\\boxed{42}$.", "42"),
        ("\\[\n\\boxed{\\frac{1}{2}}\n\\]", "\\frac{1}{2}"),
        ("\\boxed{1} and \\boxed{2}", "1,2"),
        ("\\boxed{9} long text in between the two boxes here \\boxed{2}", "2"),
        ("\\boxed{x} then a long enough pause \\fbox{7} so", "7"),
        ("\\boxed{x} then a long enough pause \\boxed {7}", "7"),
        ("\\boxed{7}. The final answer is $7$. I hope it is correct.", "7"),
        ("</think>\\boxed{{7}}", "{7}"),
    ],
)
def test_final_box_finds_the_deciding_box(response: str, content: str) -> None:
    """`final_box` returns the content math_verify's normaliser takes from the winning box."""
    assert final_box(response) == content


@pytest.mark.parametrize(
    "response",
    [
        "no box at all",
        "\\boxed{7",
        "\\boxed{}",
        "$\\boxed{7}$\\%",
        "$\\boxed{1}$ and $\\boxed{2}$",
        "\\boxed{7}. The final answer is 7. I hope it is correct.",
        "\\fbox{7} so",
        "\\boxed {7}",
    ],
)
def test_final_box_declines_what_it_cannot_prove(response: str) -> None:
    """Responses whose answer needs math_verify's full parse give None."""
    assert final_box(response) is None


def test_region_parses_like_the_response() -> None:
    """`\\boxed{c}` parses to the very list the response it came from parses to."""
    response = "Thus $x = \\sqrt{12}$ and \\[\n\\boxed{2\\sqrt{3}}\n\\] (done)."
    content = final_box(response)
    assert content is not None
    config = (ANSWER_LATEX, ANSWER_EXPR)
    assert parse(region(content), config, "first_match") == parse(response, config, "first_match")


MULTILINE = {
    "display dollars around the box": "so\n$$\nx = 1,\\quad \\boxed{5}\n$$ done",
    "display bracket open before the box": "so\n\\[\n\\boxed{5}\n\\]\n",
    "closed display bracket, then a box": "\\[ a = 1 \\]\nthen $\\boxed{5}$.",
    "inline bracket opening the line": "we get\n[ \\boxed{5} ] as claimed",
    "boxes chained across lines": "$\\boxed{5}$ and\n$\\boxed{6}$.",
    "percent after the environment": "rate\n$\\boxed{5}$%",
    "escaped dollars before": "costs \\$3 and \\$$4$\nso $\\boxed{5}$.",
    "final answer sentence": "The final answer is $\\boxed{5}$. I hope it is correct.",
    "display dollars closed before": "$$a$$\nso $\\boxed{5}$.",
}


@pytest.mark.parametrize("response", MULTILINE.values(), ids=MULTILINE.keys())
@pytest.mark.parametrize("label", [5, 6, "5\\%"])
def test_scan_from_the_box_line_agrees_with_plain(response: str, label: object) -> None:
    """Starting the box scan at the first box's line never changes what is graded."""
    case = Case(response=response, label=label, kind="multiline")
    reward, pred = plain_grade(case)
    score = MathVerifyScorer().score(None, response, label, {})
    assert score.reward == reward
    if pred is not None:
        assert score.details.get("pred") == pred
