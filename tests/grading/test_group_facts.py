"""The facts of a group of graded answers: pass@k, statistics, answer classes."""

from __future__ import annotations

import math
from fractions import Fraction

import pytest

from reward_service.grading.group_facts import (
    LABEL_CLASS,
    answer_class,
    answer_classes,
    group_facts,
    pass_at_k,
)
from reward_service.scorers.base import Score, Status


def _by_comb(n: int, c: int, k: int) -> Fraction:
    """The estimator's definition, exactly: 1 - C(n-c, k) / C(n, k) with math.comb."""
    return 1 - Fraction(math.comb(n - c, k), math.comb(n, k))


@pytest.mark.parametrize(
    ("n", "c", "k", "expected"),
    [
        (4, 1, 1, Fraction(1, 4)),  # 1 - 3/4
        (4, 1, 2, Fraction(1, 2)),  # 1 - C(3,2)/C(4,2) = 1 - 3/6
        (5, 2, 2, Fraction(7, 10)),  # 1 - C(3,2)/C(5,2) = 1 - 3/10
        (10, 3, 5, Fraction(11, 12)),  # 1 - C(7,5)/C(10,5) = 1 - 21/252
        (16, 4, 4, Fraction(1325, 1820)),  # 1 - C(12,4)/C(16,4) = 1 - 495/1820
        (8, 0, 8, Fraction(0)),  # no correct answer: never
        (8, 8, 1, Fraction(1)),  # all correct: always
        (8, 5, 4, Fraction(1)),  # n - c < k: every draw of 4 holds a correct one
        (2000, 1, 1000, Fraction(1, 2)),  # 1 - C(1999,1000)/C(2000,1000) = 1 - 1000/2000
    ],
)
def test_pass_at_k_matches_hand_computed_fixtures(
    n: int, c: int, k: int, expected: Fraction
) -> None:
    """pass@k equals the estimator worked out by hand on small groups."""
    assert pass_at_k(n, c, k) == pytest.approx(float(expected), abs=1e-12)


def test_pass_at_k_matches_exact_combinatorics_everywhere_small() -> None:
    """For every n <= 24, c and k, the stable product equals the exact math.comb value."""
    for n in range(1, 25):
        for c in range(n + 1):
            for k in range(1, n + 1):
                assert pass_at_k(n, c, k) == pytest.approx(float(_by_comb(n, c, k)), abs=1e-12)


@pytest.mark.parametrize(("n", "c", "k"), [(100_000, 5, 1), (5_000, 7, 2_500), (1_000, 999, 3)])
def test_pass_at_k_is_stable_where_factorials_overflow(n: int, c: int, k: int) -> None:
    """Groups whose binomials overflow a float still get the exact estimate to 1e-9."""
    assert pass_at_k(n, c, k) == pytest.approx(float(_by_comb(n, c, k)), abs=1e-9)


def test_pass_at_one_is_the_share_correct() -> None:
    """pass@1 is c / n: the estimator's sanity check."""
    assert pass_at_k(16, 5, 1) == pytest.approx(5 / 16)


@pytest.mark.parametrize(("n", "c", "k"), [(4, 5, 1), (4, -1, 1), (4, 1, 0), (4, 1, 5)])
def test_pass_at_k_refuses_impossible_counts(n: int, c: int, k: int) -> None:
    """c outside [0, n] or k outside [1, n] is a ValueError, not a number."""
    with pytest.raises(ValueError):
        pass_at_k(n, c, k)


OK = Score.verdict(True)
WRONG = Score.verdict(False)
TIMEOUT = Score(0.0, Status.TIMEOUT)
NO_ANSWER = Score.no_answer("none")


def test_facts_of_a_mixed_group() -> None:
    """Mean, Bessel-corrected spread, counts and pass@k of a group of four verdicts."""
    scores = [OK, WRONG, WRONG, OK]
    facts = group_facts(scores, answer_classes(scores, ["4", "5", "6", "4"], True), ks=(1, 2, 8))
    assert (facts.size, facts.graded, facts.masked, facts.correct) == (4, 4, 0, 2)
    assert facts.mean == 0.5
    assert facts.std == pytest.approx(math.sqrt(1 / 3))  # squares sum to 1, over n - 1 = 3
    assert not facts.all_equal
    assert (facts.distinct_answers, facts.majority_count) == (3, 2)
    assert facts.pass_at_k == {1: 0.5, 2: pytest.approx(5 / 6), 8: None}


def test_fallbacks_are_left_out_of_every_statistic() -> None:
    """A timed-out answer counts as masked, not as a wrong verdict: the rest are all equal."""
    scores = [OK, OK, TIMEOUT]
    facts = group_facts(scores, answer_classes(scores, ["1", "1", None], True), ks=(1, 3))
    assert (facts.graded, facts.masked, facts.correct) == (2, 1, 2)
    assert (facts.mean, facts.std, facts.all_equal) == (1.0, 0.0, True)
    assert facts.pass_at_k == {1: 1.0, 3: None}


def test_a_group_without_verdicts_is_all_equal_with_no_statistics() -> None:
    """Nothing graded: no mean or spread, and the group teaches nothing (all_equal)."""
    facts = group_facts([TIMEOUT, TIMEOUT], [None, None], ks=(1,))
    assert (facts.mean, facts.std, facts.all_equal, facts.pass_at_k) == (
        None,
        None,
        True,
        {1: None},
    )


def test_one_verdict_has_zero_spread() -> None:
    """A single verdict has standard deviation 0, not a division by zero."""
    assert group_facts([WRONG], ["3"]).std == 0.0


def test_every_correct_answer_shares_the_labels_class() -> None:
    """Correct answers written differently are one answer: the label's."""
    scores = [OK, OK, WRONG]
    classes = answer_classes(scores, ["0.5", "\\frac{2}{4}", "7"], correct_is_label=True)
    assert classes == [LABEL_CLASS, LABEL_CLASS, "7"]


def test_a_fallback_copy_of_a_correct_answer_shares_its_class() -> None:
    """An answer that timed out but reads as a correct one's final answer is that answer."""
    scores = [OK, TIMEOUT]
    assert answer_classes(scores, ["12", "12.0"], True) == [LABEL_CLASS, LABEL_CLASS]


def test_correct_answers_stay_apart_when_a_verdict_is_not_equality() -> None:
    """For a scorer whose `ok` is not "equal to the label" (f1, code), classes come from texts."""
    scores = [OK, OK]
    assert answer_classes(scores, ["paris", "the city of paris"], False) == [
        "paris",
        "thecityofparis",
    ]


def test_answers_without_a_final_answer_are_not_counted_as_answers() -> None:
    """no_answer responses are neither a distinct answer nor part of a majority."""
    scores = [NO_ANSWER, NO_ANSWER, WRONG]
    facts = group_facts(scores, answer_classes(scores, [None, None, "3"], True))
    assert (facts.distinct_answers, facts.majority_count) == (1, 1)


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("0.5", "1/2"),
        ("\\frac{1}{2}", "\\dfrac{1}{2}"),
        ("\\tfrac{1}{2}", ".5"),
        ("-\\frac{3}{4}", "-0.75"),
        ("12", "12.00"),
        ("$12$", " 12 ."),
        ("\\left( 1, 2 \\right)", "(1,2)"),
        ("x^2 + 1", "x^2+1"),
        ("10\\,000", "10000"),
    ],
)
def test_equal_answers_written_differently_share_a_class(a: str, b: str) -> None:
    """Spacing, dollar signs, frac spellings and plain-number forms do not split an answer."""
    assert answer_class(a) == answer_class(b)


@pytest.mark.parametrize(
    ("a", "b"), [("0.5", "0.05"), ("1/2", "2/1"), ("x+1", "x-1"), ("12", "-12")]
)
def test_different_answers_keep_different_classes(a: str, b: str) -> None:
    """Canonical forms never merge two different answers."""
    assert answer_class(a) != answer_class(b)


def test_a_zero_denominator_stays_text() -> None:
    """`1/0` is no number: it keeps its text as its class instead of raising."""
    assert answer_class("1/0") == "1/0"
    assert answer_class("\\frac{1}{0}") == "\\frac{1}{0}"


def test_facts_answer_json_with_string_keys() -> None:
    """`as_json` is what the endpoint sends: pass@k keyed by the k as text."""
    facts = group_facts([OK, WRONG], [LABEL_CLASS, "2"], ks=(1,))
    assert facts.as_json()["pass_at_k"] == {"1": 0.5}
    assert facts.as_json()["all_equal"] is False
