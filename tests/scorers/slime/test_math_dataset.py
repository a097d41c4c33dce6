"""The `math` scorer: last boxed answer against the label, string or sympy equality."""

from __future__ import annotations

import threading
import time

import pytest

from reward_service.scorers.base import JSON, GradingLimits, Status
from reward_service.scorers.slime import math_dataset
from reward_service.scorers.slime.math import MathScorer
from reward_service.scorers.slime.math_dataset import hendrycks_normal, last_boxed

SCORER = MathScorer()
HUGE = "x" * 1_000_000


@pytest.mark.parametrize(
    ("response", "label", "reward", "status"),
    [
        pytest.param("so \\boxed{42}.", "42", 1.0, Status.OK, id="integer"),
        pytest.param("\\boxed{41}", "42", 0.0, Status.WRONG, id="wrong-integer"),
        pytest.param("\\boxed{1} then \\boxed{2}", "2", 1.0, Status.OK, id="last-box-counts"),
        pytest.param(
            "\\boxed{2} then \\boxed{1}", "2", 0.0, Status.WRONG, id="earlier-box-ignored"
        ),
        pytest.param("\\fbox{7}", "7", 1.0, Status.OK, id="fbox"),
        pytest.param("\\boxed 5$", "5", 1.0, Status.OK, id="boxed-space-form"),
        pytest.param("\\boxed{\\dfrac12}", "\\frac{1}{2}", 1.0, Status.OK, id="dfrac-shorthand"),
        pytest.param("\\boxed{0.5}", "\\frac{1}{2}", 1.0, Status.OK, id="decimal-half"),
        pytest.param("\\boxed{1/2}", "\\frac12", 1.0, Status.OK, id="slash-fraction"),
        pytest.param("\\boxed{2/4}", "\\frac{1}{2}", 0.0, Status.WRONG, id="unreduced-fraction"),
        pytest.param("\\boxed{7\\frac{3}{4}}", "\\frac{31}{4}", 1.0, Status.OK, id="mixed-number"),
        pytest.param("\\boxed{\\sqrt{2}/2}", "\\frac{\\sqrt2}{2}", 1.0, Status.OK, id="sympy"),
        pytest.param("\\boxed{x^2+2x+1}", "(x+1)^2", 1.0, Status.OK, id="sympy-polynomial"),
        pytest.param("\\boxed{\\pi \\cdot 2}", "2\\pi", 1.0, Status.OK, id="latex-product"),
        pytest.param("\\boxed{(1, 2)}", "(1,2)", 1.0, Status.OK, id="tuple"),
        pytest.param("\\boxed{[1,2)}", "(1,2)", 0.0, Status.WRONG, id="interval-brackets"),
        pytest.param("\\boxed{x = 5}", "5", 1.0, Status.OK, id="variable-assignment"),
        pytest.param("\\boxed{10\\%}", "10", 1.0, Status.OK, id="percent"),
        pytest.param("\\boxed{5 \\text{ cm}}", "5", 1.0, Status.OK, id="units"),
        pytest.param("\\boxed{1,000}", "1000", 1.0, Status.OK, id="thousands-comma"),
        pytest.param("\\boxed{3.0}", "3", 1.0, Status.OK, id="integral-decimal"),
        pytest.param("\\boxed{\\text{(B)}}", "(B)", 1.0, Status.OK, id="text-wrapped"),
        pytest.param(
            "\\boxed{12345678901234567891}",
            "12345678901234567892",
            0.0,
            Status.WRONG,
            id="big-integers-stay-exact",
        ),
        pytest.param(
            "\\boxed{9^{9^{9^{9}}}}", "1", 0.0, Status.WRONG, id="power-tower-not-evaluated"
        ),
        pytest.param(
            "\\boxed{9**9**9**9}", "1", 0.0, Status.WRONG, id="python-power-not-evaluated"
        ),
        pytest.param("\\boxed{(10^{100})!}", "1", 0.0, Status.WRONG, id="factorial-not-evaluated"),
    ],
)
def test_grades_boxed_answer(response: str, label: JSON, reward: float, status: Status) -> None:
    """The last boxed answer is graded against the label by normalisation or sympy."""
    result = SCORER.score("", response, label, {})
    assert (result.reward, result.status) == (reward, status)


@pytest.mark.parametrize(
    ("label", "reward", "status"),
    [
        pytest.param(42, 1.0, Status.OK, id="int"),
        pytest.param(42.0, 1.0, Status.OK, id="integral-float"),
        pytest.param(0, 0.0, Status.WRONG, id="zero-is-graded"),
        pytest.param("\\boxed{42}", 1.0, Status.OK, id="boxed-label"),
        pytest.param("$\\boxed{42}$", 1.0, Status.OK, id="boxed-label-in-text"),
        pytest.param(["41", "42"], 1.0, Status.OK, id="list-of-alternatives"),
        pytest.param(None, 0.0, Status.ERROR, id="null"),
        pytest.param(True, 0.0, Status.ERROR, id="bool"),
        pytest.param({"answer": "42"}, 0.0, Status.ERROR, id="dict"),
        pytest.param([], 0.0, Status.ERROR, id="empty-list"),
        pytest.param("", 0.0, Status.ERROR, id="empty-string"),
        pytest.param("\\boxed{42", 0.0, Status.ERROR, id="unclosed-boxed-label"),
        pytest.param(HUGE, 0.0, Status.WRONG, id="huge-label"),
    ],
)
def test_reads_any_label(label: JSON, reward: float, status: Status) -> None:
    """Labels of any JSON type get a verdict or an error status, never an exception."""
    result = SCORER.score("", "\\boxed{42}", label, {})
    assert (result.reward, result.status) == (reward, status)


@pytest.mark.parametrize(
    "response",
    [
        pytest.param("The answer is 42.", id="no-box"),
        pytest.param("\\boxed{42", id="unclosed-box"),
        pytest.param("", id="empty"),
        pytest.param(HUGE, id="huge-without-box"),
    ],
)
def test_no_boxed_answer(response: str) -> None:
    """A response without a closed box earns 0.0 with status no_answer."""
    result = SCORER.score("", response, "42", {})
    assert (result.reward, result.status) == (0.0, Status.NO_ANSWER)


def test_huge_boxed_answer_is_compared_as_text() -> None:
    """A megabyte-long boxed answer is graded by string normalisation alone."""
    result = SCORER.score("", f"\\boxed{{{HUGE}}}", HUGE, {})
    assert (result.reward, result.status) == (1.0, Status.OK)


def test_non_string_response_is_an_error() -> None:
    """A response that is not a string, sent by a caller outside the engine, is reported by
    `score_many`, the one place that checks, not raised."""
    [result] = SCORER.score_many([("", None, "42", {})])  # type: ignore[list-item]
    assert (result.reward, result.status) == (0.0, Status.ERROR)


def test_grades_off_the_main_thread() -> None:
    """Without signal.alarm (worker threads), sympy comparisons still run."""
    results = []
    thread = threading.Thread(
        target=lambda: results.append(SCORER.score("", "\\boxed{x^2+2x+1}", "(x+1)^2", {}))
    )
    thread.start()
    thread.join()
    assert results[0].status is Status.OK


def test_slow_sympy_comparison_times_out(monkeypatch: pytest.MonkeyPatch) -> None:
    """A sympy comparison overrunning the limit ends with status timeout and reward 0.0."""

    def stall(given: str, gold: str) -> bool:
        time.sleep(5)
        return True

    monkeypatch.setattr(math_dataset, "prm800k_equal", stall)
    result = MathScorer(GradingLimits(timeout_s=1)).score("", "\\boxed{x}", "y", {})
    assert (result.reward, result.status) == (0.0, Status.TIMEOUT)


def test_details_carry_prediction_and_gold() -> None:
    """The extracted answer and the gold are reported, clipped to 200 characters."""
    result = SCORER.score("", f"\\boxed{{{HUGE}}}", "42", {})
    assert len(result.details["pred"]) == 200
    assert result.details["gold"] == "42"


@pytest.mark.parametrize(
    ("text", "boxed"),
    [
        ("\\boxed{a{b}c}", "a{b}c"),
        ("\\boxed{1}\\fbox{2}", "2"),
        ("\\boxed {3}", "3"),
        ("\\boxed", None),
        ("\\boxedx", None),
        ("no box", None),
    ],
)
def test_last_boxed(text: str, boxed: str | None) -> None:
    """The last box's balanced content is extracted, or None."""
    assert last_boxed(text) == boxed


@pytest.mark.parametrize(
    ("answer", "normal"),
    [
        ("\\dfrac12", "\\frac{1}{2}"),
        ("\\text{yes}", "yes"),
        ("k = 3", "3"),
        ("\\sqrt3", "\\sqrt{3}"),
        (".25", "0.25"),
        ("3/4", "\\frac{3}{4}"),
        ("90^\\circ", "90"),
        ("\\left( 1, 2 \\right)", "(1,2)"),
    ],
)
def test_hendrycks_normal(answer: str, normal: str) -> None:
    """Hendrycks' MATH normalisation rewrites the usual notational variants."""
    assert hendrycks_normal(answer) == normal
