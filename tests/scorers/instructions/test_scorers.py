"""The `ifeval` and `ifbench` scorers: rewards, options, the thinking part and errors."""

from __future__ import annotations

from collections.abc import Mapping

import pytest

from reward_service.scorers.base import JSON, GradingLimits, Status
from reward_service.scorers.instructions import checkers
from reward_service.scorers.instructions import scorers as instruction_scorers
from reward_service.scorers.instructions.scorers import (
    NOT_COMPUTED,
    IfBenchScorer,
    IfEvalScorer,
)

IFEVAL = IfEvalScorer()

LOWER = "change_case:english_lowercase"
COMMA = "punctuation:no_comma"
TWO = {"instruction_id_list": [LOWER, COMMA]}
"""Two IFEval instructions: all lowercase, no comma."""


@pytest.mark.parametrize(
    ("response", "options", "reward", "status"),
    [
        pytest.param("all lower and no comma here", {}, 1.0, Status.OK, id="both-followed"),
        pytest.param("all lower, with a comma", {}, 0.0, Status.WRONG, id="one-broken-strict"),
        pytest.param(
            "all lower, with a comma", {"reward": "partial"}, 0.5, Status.WRONG, id="partial"
        ),
        pytest.param("Sure!\nall lower here", {}, 0.0, Status.WRONG, id="preamble-strict"),
        pytest.param("Sure!\nall lower here", {"reward": "loose"}, 1.0, Status.OK, id="loose"),
        pytest.param(
            "Sure, ok!\nall lower here",
            {"reward": "partial_loose"},
            1.0,
            Status.OK,
            id="partial-loose-drops-first-line",
        ),
    ],
)
def test_rewards(response: str, options: Mapping[str, JSON], reward: float, status: Status) -> None:
    """strict (SLIME's) is all-or-nothing; loose forgives a first line; partial is the fraction."""
    result = IFEVAL.score("", response, TWO, options)
    assert (result.reward, result.status) == (reward, status)


@pytest.mark.parametrize("reward", ["loose", "partial_loose"])
def test_detail_lists_each_instructions_verdicts(reward: str) -> None:
    """Under a loose reward the details hold each instruction's strict and loose verdict, in
    order, and record_id."""
    label = {**TWO, "record_id": 12}
    result = IFEVAL.score("", "Sure!\nall lower, here\nbye", label, {"reward": reward})
    assert result.details == {
        "instructions": [
            {"id": LOWER, "strict": False, "loose": True},
            {"id": COMMA, "strict": False, "loose": False},
        ],
        "record_id": 12,
    }


@pytest.mark.parametrize("reward", ["strict", "partial"])
def test_strict_rewards_leave_failed_loose_verdicts_uncomputed(reward: str) -> None:
    """Under a strict reward a loose verdict is null where the strict check failed (a strict
    pass is a loose pass), and the details say the loose check was not run."""
    result = IFEVAL.score("", "Sure!\nall lower here\nbye", TWO, {"reward": reward})
    assert result.details == {
        "instructions": [
            {"id": LOWER, "strict": False, "loose": None},
            {"id": COMMA, "strict": True, "loose": True},
        ],
        "loose_verdicts": NOT_COMPUTED,
        "record_id": None,
    }


@pytest.mark.parametrize(
    ("response", "options", "reward"),
    [
        pytest.param("<think>Check: No, Commas.</think>fine text", {}, 1.0, id="after-think"),
        pytest.param("<think>a</think>x</think>fine text", {}, 0.0, id="two-think-ends"),
        pytest.param(
            "<think>a</think>x</think>fine text", {"think": "after"}, 1.0, id="after-last"
        ),
        pytest.param("<think>a plan for fine text", {}, 0.0, id="never-closed"),
        pytest.param(
            "<think>Check: No, Commas.</think>fine text", {"think": "keep"}, 0.0, id="keep"
        ),
    ],
)
def test_the_thinking_part_is_not_graded(
    response: str, options: Mapping[str, JSON], reward: float
) -> None:
    """Only the answer region is graded: after the one </think>, none when the reasoning never
    closed or closed twice; think=after reads after the last, think=keep all of it."""
    assert IFEVAL.score("", response, TWO, options).reward == reward


@pytest.mark.parametrize(
    ("label", "reason"),
    [
        pytest.param({"instruction_id_list": []}, "no instruction ids", id="no-ids"),
        pytest.param("plain gold", "no instruction ids", id="plain-label"),
        pytest.param(
            {"instruction_id_list": [LOWER, "made:up", "other:one"]},
            "unknown ifeval instruction id(s): made:up, other:one",
            id="unknown-ids-named",
        ),
        pytest.param(
            {"instruction_id_list": ["length_constraints:number_words"], "kwargs": [{"bogus": 1}]},
            "length_constraints:number_words: TypeError",
            id="arguments-refused",
        ),
    ],
)
def test_what_cannot_be_graded_is_an_error(label: JSON, reason: str) -> None:
    """Missing or unknown instructions and refused arguments are errors naming why."""
    result = IFEVAL.score("", "some text", label, {})
    assert (result.reward, result.status) == (0.0, Status.ERROR)
    assert reason in result.details["reason"]


def test_an_empty_response_is_no_answer() -> None:
    """A response that is empty once the thinking part is cut is no_answer with 0.0."""
    result = IFEVAL.score("", "<think>all of it</think>  ", TWO, {})
    assert (result.reward, result.status) == (0.0, Status.NO_ANSWER)


def test_missing_nltk_data_is_an_error_naming_it() -> None:
    """An instruction whose NLTK data is absent grades error naming it; the check lists it."""
    loaded = checkers.load("ifbench")
    tagger = "averaged_perceptron_tagger_eng"
    without = checkers.Checkers("ifbench", loaded.registry, frozenset({tagger}))
    scorer = IfBenchScorer()
    scorer._checkers = without
    label = {"instruction_id_list": ["words:start_verb"], "kwargs": [{}]}
    result = scorer.score("", "Run to the mat", label, {})
    assert result.status == Status.ERROR
    assert f"words:start_verb needs NLTK data not installed here: {tagger}" in str(result.details)


@pytest.mark.parametrize(
    ("response", "reward", "status"),
    [
        pytest.param("Quantum physics explains particles", 1.0, Status.OK, id="none-stop"),
        pytest.param("Photons, as they move, carry energy", 1.0, Status.OK, id="two-of-six"),
        pytest.param("The cat sat on the mat", 0.0, Status.WRONG, id="three-of-six"),
        pytest.param("It is what it is", 0.0, Status.WRONG, id="all-stop"),
    ],
)
def test_stop_words_are_graded(response: str, reward: float, status: Status) -> None:
    """ratio:stop_words grades with no NLTK data: at most 40% stopwords passes, more fails."""
    label = {"instruction_id_list": ["ratio:stop_words"], "kwargs": [{"percentage": 40}]}
    result = IfBenchScorer().score("", response, label, {})
    assert (result.reward, result.status) == (reward, status)


def test_startup_check_reports_the_instructions_without_data() -> None:
    """The start-up check counts the checkers and names each instruction its data lacks."""
    check = IfBenchScorer.startup_check(None, GradingLimits())
    assert check is not None and check.details["instructions"] == 58
    for instruction in check.details.get("unavailable", []):
        assert instruction in check.summary
    # checkers lacking data leave the scorer serving the rest: a warning, not a failure
    assert check.ok and check.degraded == bool(check.details.get("unavailable"))
    ifeval = IfEvalScorer.startup_check(None, GradingLimits())
    assert ifeval is not None and ifeval.details["instructions"] == 25


def test_unavailable_checkers_grade_as_errors() -> None:
    """A scorer whose checkers did not load answers error with the reason, never 0.0 silently."""
    scorer = IfEvalScorer()
    scorer._checkers = "ifeval checkers unavailable: no module"
    result = scorer.score("", "text", TWO, {})
    assert result.status == Status.ERROR and "no module" in result.details["reason"]


@pytest.mark.parametrize(
    "options",
    [{"reward": "nope"}, {"reward": ["strict"]}, {"think": "drop"}, {"think": {"a": 1}}],
    ids=["unknown-reward", "list-reward", "unknown-think", "object-think"],
)
def test_an_option_value_it_cannot_use_is_an_error(options: Mapping[str, JSON]) -> None:
    """A label object's option value that is not one the scorer takes grades as an error."""
    result = IFEVAL.score("", "all fine here", TWO, options)
    assert (result.reward, result.status) == (0.0, Status.ERROR)
    assert "unknown option value" in result.details["reason"]


def test_without_the_extra_the_scorer_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    """Where the ifeval extra is not installed, the start-up check is `not configured` (info)
    and every answer is `error`, both naming the extra to install."""
    monkeypatch.setattr(instruction_scorers, "installed", lambda: False)
    check = IfEvalScorer.startup_check(None, GradingLimits())
    assert check is not None and not check.ok and not check.configured
    assert "reward-service[ifeval]" in check.summary
    result = IfEvalScorer().score("", "text", TWO, {})
    assert result.status == Status.ERROR and "reward-service[ifeval]" in result.details["reason"]
