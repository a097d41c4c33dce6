"""The `math_verify` scorer's `extraction` option: `final` (default) and `any`."""

from __future__ import annotations

import pytest

from reward_service.scorers.base import JSON, GradingLimits, Status
from reward_service.scorers.math_verify.scorer import MathVerifyScorer

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

ANY = {"extraction": "any"}
FINAL = {"extraction": "final"}


@pytest.fixture
def scorer() -> MathVerifyScorer:
    return MathVerifyScorer(GradingLimits(cache_size=16))


@pytest.mark.parametrize(
    ("response", "label"),
    [("-5", "-5"), ("$(3,2)$", "(3,2)"), ("$$f(y) = y$$", "f(y) = y"), ("we get x = 12", 12)],
)
def test_any_reads_answers_without_box_or_anchor(
    scorer: MathVerifyScorer, response: str, label: JSON
) -> None:
    """`any` rewards a bare answer that `final` finds nothing in."""
    assert scorer.score(None, response, label, ANY).reward == 1.0
    assert scorer.score(None, response, label, FINAL).status is Status.NO_ANSWER


def test_final_is_the_default(scorer: MathVerifyScorer) -> None:
    """No `extraction` option grades as `final`, and the detail says so."""
    score = scorer.score(None, "-5", "-5", {})
    assert (score.status, score.details["extraction"]) == (Status.NO_ANSWER, "final")


def test_the_detail_names_the_mode(scorer: MathVerifyScorer) -> None:
    """Every `any` answer carries `extraction: any`, cached or not."""
    first = scorer.score(None, "-5", "-5", ANY)
    again = scorer.score(None, "-5", "-5", ANY)
    assert [s.details["extraction"] for s in (first, again)] == ["any", "any"]
    assert (first.details["cache"], again.details["cache"]) == ("miss", "hit")
    assert again.details["pred"] == first.details["pred"] == "-5"


def test_verdicts_are_cached_per_mode(scorer: MathVerifyScorer) -> None:
    """The same gold and answer graded in the two modes never share a cached verdict."""
    response = "\\boxed{3} but actually 4"
    assert scorer.score(None, response, "4", ANY).reward == 0.0
    assert scorer.score(None, response, "3", FINAL).reward == 1.0
    assert scorer.score(None, response, "3", ANY).reward == 1.0
    assert scorer.score(None, response, "4", FINAL).details["cache"] == "miss"


def test_any_never_settles_in_the_server() -> None:
    """`screen` with `any` leaves a boxed integer to the worker (inline proves `final` only)."""
    assert MathVerifyScorer.screen("so $\\boxed{42}$.", "42", ANY) is None
    settled = MathVerifyScorer.screen("so $\\boxed{42}$.", "42", FINAL)
    assert settled is not None and settled.details["extraction"] == "final"


def test_any_skips_the_hazard_screen() -> None:
    """The hazard screen reads the region `final` grades, so `any` leaves it to the worker."""
    tower = "so \\boxed{9^{9^{9^{9}}}}"
    assert MathVerifyScorer.screen(tower, "1", ANY) is None
    rejected = MathVerifyScorer.screen(tower, "1", FINAL)
    assert rejected is not None and rejected.status is Status.NO_ANSWER


@pytest.mark.parametrize("value", ["nope", "", 5, None, ["any"], "ANY"])
def test_a_bad_mode_grades_as_error_naming_the_modes(scorer: MathVerifyScorer, value: JSON) -> None:
    """A label object's invalid `extraction` is the sample's `error`, in screen and in score."""
    options = {"extraction": value}
    screened = MathVerifyScorer.screen("\\boxed{5}", "5", options)
    graded = scorer.score(None, "\\boxed{5}", "5", options)
    for score in (screened, graded):
        assert score is not None and score.status is Status.ERROR
        assert "any, final" in str(score.details["reason"])


def test_other_options_are_ignored(scorer: MathVerifyScorer) -> None:
    """Keys a dataset carries beside the answer (`source`, `level`) change nothing."""
    score = scorer.score(None, "\\boxed{5}", "5", {"source": "gsm8k", "level": 3})
    assert (score.reward, score.details["extraction"]) == (1.0, "final")


def test_any_timeouts_are_a_timeout_status(monkeypatch: pytest.MonkeyPatch) -> None:
    """A math_verify timeout while parsing the response in `any` is status `timeout`."""
    from math_verify.errors import TimeoutException

    scorer = MathVerifyScorer()

    def slow_parse(text: str, *args: object, **kwargs: object) -> list[object]:
        if kwargs.get("extraction_mode") == "any_match":
            raise TimeoutException("too slow")
        return [5, "5"]

    monkeypatch.setattr(scorer, "_parse", slow_parse)
    score = scorer.score(None, "x = 5", "\\sqrt{5}", ANY)
    assert (score.status, score.details["extraction"]) == (Status.TIMEOUT, "any")
    assert scorer.score(None, "x = 5", "\\sqrt{5}", ANY).details.get("cache") != "hit"


def test_the_option_is_declared() -> None:
    """`MathVerifyScorer.options` lists `extraction` with its two modes, for URL checks."""
    assert MathVerifyScorer.options["extraction"] == frozenset({"final", "any"})
    assert MathVerifyScorer.option_problem("extraction", "any") is None
    assert "any, final" in str(MathVerifyScorer.option_problem("extraction", "nope"))
    assert "its options: extraction, think" in str(MathVerifyScorer.option_problem("bogus", "1"))
