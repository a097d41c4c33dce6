"""The `math_verify` scorer: grading table, paths taken, caches."""

from __future__ import annotations

import gc
import logging
from collections.abc import Iterator

import pytest

from reward_service.scorers.base import JSON, GradingLimits, Status
from reward_service.scorers.math_verify.scorer import MathVerifyScorer

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


@pytest.fixture(scope="module")
def scorer() -> MathVerifyScorer:
    return MathVerifyScorer()


GRADING_TABLE: list[tuple[str, JSON, float, Status]] = [
    ("so \\boxed{42}.", 42, 1.0, Status.OK),
    ("so \\boxed{42}.", "42", 1.0, Status.OK),
    ("The answer is $\\boxed{-7}$.", -7, 1.0, Status.OK),
    ("\\boxed{1,000}", 1000, 1.0, Status.OK),
    ("\\boxed{0.5}", "\\frac12", 1.0, Status.OK),
    ("\\boxed{\\frac{1}{2}}", "0.5", 1.0, Status.OK),
    ("\\boxed{2/4}", "\\frac{1}{2}", 1.0, Status.OK),
    ("\\[\n\\boxed{\\sqrt{12}}\n\\]", "2\\sqrt3", 1.0, Status.OK),
    ("\\boxed{\\{3, 1, 2\\}}", "\\{1,2,3\\}", 1.0, Status.OK),
    ("\\boxed{(x+1)^2}", "x^2+2x+1", 1.0, Status.OK),
    ("\\boxed{50\\%}", "50\\%", 1.0, Status.OK),
    ("\\boxed{1.5}", 1.5, 1.0, Status.OK),
    ("\\boxed{6}", ["5", "6"], 1.0, Status.OK),
    ("\\boxed{3} and later \\boxed{4}", 3, 0.0, Status.WRONG),
    ("\\boxed{41}", 42, 0.0, Status.WRONG),
    ("\\boxed{\\frac{1}{3}}", "0.5", 0.0, Status.WRONG),
    ("\\boxed{2\\sqrt{2}}", "2\\sqrt3", 0.0, Status.WRONG),
    ("so it is 42", 42, 0.0, Status.NO_ANSWER),
    ("", 42, 0.0, Status.NO_ANSWER),
    ("\\boxed{}", 42, 0.0, Status.NO_ANSWER),
    ("\\boxed{42}", None, 0.0, Status.ERROR),
    ("\\boxed{42}", {"answer": 42}, 0.0, Status.ERROR),
    ("\\boxed{42}", [], 0.0, Status.ERROR),
    ("\\boxed{42}", True, 0.0, Status.ERROR),
    ("\\boxed{42}", "", 0.0, Status.ERROR),
    ("\\boxed{42}", "\\boxed{}", 0.0, Status.ERROR),
    ("\\boxed{42}", "\\frac{", 0.0, Status.WRONG),
]


@pytest.mark.parametrize(("response", "label", "reward", "status"), GRADING_TABLE)
def test_grades_table(
    scorer: MathVerifyScorer, response: str, label: JSON, reward: float, status: Status
) -> None:
    """Each response earns the reward and status of the table."""
    score = scorer.score(None, response, label, {})
    assert (score.reward, score.status) == (reward, status)


@pytest.mark.parametrize(
    ("response", "label", "path"),
    [
        ("so \\boxed{42}.", 17, "fast"),
        ("so $\\boxed{42}$.", "42", "fast"),
        ("\\boxed{3.25}", "13/4", "fast"),
        ("\\boxed{\\sqrt{12}}", "2\\sqrt3", "region"),
        ("The answer is 42.", 42, "full"),
        ("$\\boxed{42}$\\%", 42, "full"),
    ],
)
def test_reports_the_path_that_settled_the_answer(response: str, label: JSON, path: str) -> None:
    """`details["path"]` names how the answer was read: fast, region or full."""
    assert MathVerifyScorer().score(None, response, label, {}).details["path"] == path


def test_integer_answers_take_the_fast_path() -> None:
    """Plain integer answers and labels are graded on the fast path, counted in `stats`."""
    scorer = MathVerifyScorer()
    for n in range(20):
        scorer.score(None, f"thinking...\n\nThe answer is \\boxed{{{n}}}.", n % 7, {})
    assert scorer.stats.fast == 20
    assert scorer.stats.region == scorer.stats.full == 0


def test_verdict_cache_survives_interleaved_groups() -> None:
    """A repeated (label, answer) pair hits the verdict cache after other groups came between."""
    scorer = MathVerifyScorer()
    first = scorer.score(None, "\\boxed{\\sqrt{12}}", "2\\sqrt3", {})
    for n in range(50):
        scorer.score(None, f"\\boxed{{{n}}}", n, {})
    again = scorer.score(None, "so $\\boxed{\\sqrt{12}}$.", "2\\sqrt3", {})
    assert (first.details["cache"], again.details["cache"]) == ("miss", "hit")
    assert again.reward == first.reward == 1.0
    assert scorer.stats.verdict_hits == 1


def test_caches_hold_at_most_cache_size_entries() -> None:
    """With `cache_size=2`, the oldest verdict and gold parse are evicted."""
    scorer = MathVerifyScorer(GradingLimits(cache_size=2))
    for n in (1, 2, 3, 1):
        scorer.score(None, f"\\boxed{{{n}}}", n, {})
    assert scorer.stats.verdict_hits == 0
    assert scorer.stats.gold_misses == 4


def test_gold_parse_is_cached_per_label() -> None:
    """Answers to the same label parse its gold once."""
    scorer = MathVerifyScorer()
    for answer in ("1", "2", "3"):
        scorer.score(None, f"\\boxed{{{answer}}}", "\\sqrt{2}", {})
    assert (scorer.stats.gold_misses, scorer.stats.gold_hits) == (1, 2)


def test_details_carry_the_extracted_answer(scorer: MathVerifyScorer) -> None:
    """`details["pred"]` is math_verify's normalised answer text."""
    assert scorer.score(None, "so \\boxed{\\dfrac{1}{2}}", "1/2", {}).details["pred"] == (
        "\\frac{1}{2}"
    )


@pytest.fixture
def no_gc_callbacks() -> Iterator[None]:
    """Without hypothesis's gc hook, and with no collection during the test: math_verify's
    alarm firing inside a gc callback, or inside the `__del__` of garbage an earlier test
    left (an asyncio transport, once, in a whole-suite run), is lost."""
    saved = gc.callbacks[:]
    gc.callbacks.clear()
    gc.collect()
    gc.disable()
    yield
    gc.enable()
    gc.callbacks[:] = saved


@pytest.mark.usefixtures("no_gc_callbacks")
@pytest.mark.parametrize("shape", ["so \\boxed{%s}", "The final answer is $%s$"])
def test_timeouts_are_seen_whatever_the_logging_config(shape: str) -> None:
    """A parse past math_verify's timeout is status `timeout` even with logging switched off."""
    logging.disable(logging.CRITICAL)
    try:
        scorer = MathVerifyScorer(GradingLimits(timeout_s=1))
        score = scorer.score(None, shape % ("(" * 40 + "x" + ")" * 40), "1", {})
    finally:
        logging.disable(logging.NOTSET)
    assert (score.reward, score.status) == (0.0, Status.TIMEOUT)


@pytest.mark.usefixtures("no_gc_callbacks")
def test_a_timed_out_answer_is_not_cached_as_wrong() -> None:
    """After a timeout, the next answer of the same label is graded afresh and right."""
    scorer = MathVerifyScorer(GradingLimits(timeout_s=1))
    assert scorer.score(None, "\\boxed{" + "(" * 40 + "1" + ")" * 40 + "}", "1", {}).status == (
        Status.TIMEOUT
    )
    assert scorer.score(None, "\\boxed{1}", "1", {}).status == Status.OK
