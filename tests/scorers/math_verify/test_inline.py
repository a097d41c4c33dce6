"""Integer verdicts settled in the server agree with plain math_verify and the scorer."""

from __future__ import annotations

import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from reward_service.bench.reference import Case, plain_grade
from reward_service.scorers.base import JSON, Status
from reward_service.scorers.math_verify.extract import final_box, normalized
from reward_service.scorers.math_verify.inline import bare_integer, boxed_integer, settle
from reward_service.scorers.math_verify.scorer import MathVerifyScorer

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

SETTLED = {
    "plain box": ("so \\boxed{42}.", "42"),
    "inline math": ("Thus the answer is $\\boxed{42}$.", "42"),
    "whole response": ("$\\boxed{-7}$", "-7"),
    "signed and padded": ("answer: \\boxed{+007}\n", "+007"),
    "bold markdown": ("**$\\boxed{42}$**", "42"),
    "after think": ("<think>$x$ and \\[ y \\]</think>\n\nso $\\boxed{3}$.", "3"),
    "earlier braces": ("$\\frac{1}{2}$ so $x_{1} = 2$, so \\boxed{2}!", "2"),
    "earlier box far away": ("\\boxed{1} " + "x" * 80 + " so \\boxed{42}.", "42"),
    "earlier box, other line": ("$\\boxed{1}$ was wrong\nso $\\boxed{42}$.", "42"),
    "earlier box, braces near": (
        "\\boxed{\\frac{1}{2}} " + "x" * 80 + " $\\frac{9}{4}$ so \\boxed{42}.",
        "42",
    ),
    "earlier box never closed": ("\\boxed{1 so \\frac{9}{4} hence \\boxed{42}", "42"),
    "earlier box in thought": ("<think>so \\fbox{4}</think>\n$\\boxed{42}$", "42"),
}

DECLINED = {
    "no box": "the answer is 42",
    "fraction": "\\boxed{\\frac{1}{2}}",
    "decimal": "\\boxed{4.5}",
    "spaces in box": "\\boxed{ 42 }",
    "unicode digits": "\\boxed{\u0664\u0662}",
    "31 digits": "\\boxed{" + "1" * 31 + "}",
    "two boxes": "\\boxed{1} and \\boxed{42}",
    "earlier box with nested braces": "\\boxed{\\frac{1}{2}}" + "x" * 60 + "\\boxed{42}",
    "brace flood": "\\boxed{" + "{" * 300 + "}" * 301 + " \\boxed{42}",
    "earlier box within 70": "\\boxed{1}" + "x" * 60 + "\\boxed{42}",
    "chained by and": "$\\boxed{1}$ and $\\boxed{42}$.",
    "chained across lines": "$\\boxed{1}$,\n\n$\\boxed{42}$.",
    "dollar closed around earlier box": "$\\boxed{1} so $\\boxed{42}$.",
    "text after": "\\boxed{42} is the answer",
    "closing paren after": "(so \\boxed{42})",
    "bracket after": "[ \\boxed{42} ]",
    "display math": "\\[\n\\boxed{42}\n\\]",
    "display dollars": "$$\\boxed{42}$$",
    "unclosed dollar": "so $\\boxed{42}.",
    "digit before dollar": "5$\\boxed{42}$.",
    "escaped dollar": "\\$\\boxed{42}$.",
    "percent after": "$\\boxed{42}$ percent",
    "escaped percent after": "\\boxed{42}\\%",
    "i hope after": "$\\boxed{42}$. I hope it is correct.",
    "long tail": "\\boxed{42}" + "." * 65,
    "unterminated box": "\\boxed{42",
    "nested box": "\\boxed{{42}}",
}

INTEGER_LABELS: list[JSON] = [42, "42", 42.0, " 42 ", "+42", "042", [41, 42], -7, "3", 2]


@pytest.mark.parametrize(("response", "answer"), SETTLED.values(), ids=SETTLED.keys())
def test_reads_the_box_math_verify_would_grade(response: str, answer: str) -> None:
    """The settled shapes give the box content `final_box` proves, unchanged by normalising."""
    assert boxed_integer(response) == answer
    assert final_box(response) == answer
    assert normalized(answer) == answer


@pytest.mark.parametrize("response", DECLINED.values(), ids=DECLINED.keys())
def test_declines_every_other_shape(response: str) -> None:
    """Anything but the two proven shapes is left to the worker."""
    assert boxed_integer(response) is None
    assert settle(response, 42) is None


@pytest.mark.parametrize("label", [None, "", "4.5", "\\frac{1}{2}", "x", [42, "4.5"], {}, True])
def test_needs_every_gold_to_be_an_integer(label: JSON) -> None:
    """Labels that are not all bare integers go to the worker, which reads them fully."""
    assert settle("so \\boxed{42}.", label) is None


@pytest.mark.parametrize("response", [r for r, _ in SETTLED.values()] + list(DECLINED.values()))
@pytest.mark.parametrize("label", INTEGER_LABELS)
def test_agrees_with_plain_math_verify_and_the_worker(response: str, label: JSON) -> None:
    """Each inline verdict is plain math_verify's reward and the worker scorer's verdict."""
    settled = settle(response, label)
    if settled is None:
        return
    reward, pred = plain_grade(Case(response, label, "inline"))
    graded = MathVerifyScorer().score(None, response, label, {})
    assert (settled.reward, settled.details["pred"]) == (reward, pred)
    assert (settled.reward, settled.status) == (graded.reward, graded.status)
    assert settled.status in (Status.OK, Status.WRONG)


def test_screen_settles_integer_answers_before_any_worker() -> None:
    """`MathVerifyScorer.screen`, run in the server, gives these verdicts itself."""
    right = MathVerifyScorer.screen("so $\\boxed{42}$.", "42")
    wrong = MathVerifyScorer.screen("so $\\boxed{41}$.", "42")
    assert right is not None and (right.reward, right.details["path"]) == (1.0, "inline")
    assert wrong is not None and (wrong.reward, wrong.details["path"]) == (0.0, "inline")


def test_a_subclass_with_another_config_can_opt_out() -> None:
    """A subclass that sets `inline_integers = False` gets every answer graded by `score`."""

    class OtherConfig(MathVerifyScorer):
        inline_integers = False

    assert OtherConfig.screen("so $\\boxed{42}$.", "42") is None


@given(digits=st.from_regex(r"[+-]?[0-9]{1,30}", fullmatch=True))
def test_normalising_leaves_bare_integers_alone(digits: str) -> None:
    """math_verify's normaliser returns every bare integer as it is, so `int(D)` is its value."""
    assert normalized(digits) == digits
    assert bare_integer(digits) == int(digits)


_FRAGMENTS = [
    "$", "$$", "\\[", "\\]", "\\(", "\\)", "[", "]", "(", ")", "{", "}", " ", "\n", "\\",
    "\\boxed{", "\\boxed{42}", "$\\boxed{42}$", "\\boxed{7}", "I hope", "percent", "%",
    "final answer is", "and", ",", ".", "*", ":", "5", "x", "</think>", "x" * 35,
]  # fmt: skip


FLOODS = {
    "closing braces, near": ("\\boxed{" + "}" * 5 + "\\boxed{42}", False),
    "closing braces, far": ("\\boxed{" + "}" * 3000 + "\\boxed{42}", True),
    "opening braces": ("\\boxed{" + "{" * 3000 + "}" + " \\boxed{42}", False),
    "boxes": ("\\boxed{42}" * 500, False),
    "long line": ("$\\boxed{1}" + "x" * 3000 + " $\\boxed{42}$.", False),
    "spaces before": ("\\boxed{1}\n" + " " * 3000 + "$\\boxed{42}$", False),
}


@pytest.mark.parametrize(("response", "settles"), FLOODS.values(), ids=FLOODS.keys())
def test_floods_are_settled_only_as_plain_math_verify_reads_them(
    response: str, settles: bool
) -> None:
    """Long runs of braces, boxes or spaces: declined, or settled with plain's verdict."""
    settled = settle(response, 42)
    assert (settled is not None) == settles
    if settled is not None:
        reward, pred = plain_grade(Case(response, 42, "flood"))
        assert (settled.reward, settled.details["pred"]) == (reward, pred)


def test_hostile_surroundings_never_change_an_inline_verdict() -> None:
    """Around the answer, any mix of delimiters, boxes and anchors: settled is plain's verdict."""
    rng = random.Random(20261130)
    settled_count = 0
    for _ in range(6000):
        before = "".join(rng.choices(_FRAGMENTS, k=rng.randint(0, 12)))
        after = "".join(rng.choices(_FRAGMENTS, k=rng.randint(0, 3)))
        answer = rng.choice(["\\boxed{42}", "$\\boxed{42}$", "\\boxed{-3}", "$\\boxed{07}$"])
        response, label = before + answer + after, rng.choice([42, -3, 7, "42"])
        settled = settle(response, label)
        if settled is not None:
            settled_count += 1
            reward, pred = plain_grade(Case(response, label, "inline"))
            assert (settled.reward, settled.details["pred"]) == (reward, pred), response
    assert settled_count > 450
