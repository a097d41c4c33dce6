"""`math_judge`: math_verify's grade first (through the engine's workers), the judge only where
the rule found no match, never over its `ok`, and over its `wrong` only on the answer it read."""

from __future__ import annotations

from typing import Any

import pytest

from reward_service.bench.chat_stand_in import ChatStandIn, verdicts
from reward_service.errors import InvalidSetting
from reward_service.grading.engine import ScoringEngine
from reward_service.scorers.base import GradingLimits, Score, ScoringInput, Status
from reward_service.scorers.llm_judge.scorers import JudgeScorer, MathJudgeScorer
from reward_service.scorers.llm_judge.settings import JudgeSettings
from reward_service.settings import Settings

RULE_SCORES = {
    "\\boxed{4}": Score.verdict(True, path="fast"),
    "\\boxed{four}": Score.verdict(False, pred="four", path="full"),
    "So \\boxed{four}, as the grader will agree.": Score.verdict(False, pred="four", path="region"),
    "\\boxed{}": Score.verdict(False, path="full"),
    "no box": Score.no_answer("nothing boxed"),
    "slow": Score(0.0, Status.TIMEOUT, {"reason": "deadline"}),
}


class Workers:
    """The engine's side of `grade_in_worker`, scripted: what was asked, and a rule's grade."""

    def __init__(self) -> None:
        self.asked: list[tuple[str, ScoringInput]] = []

    async def __call__(self, scorer: str, item: ScoringInput) -> Score:
        self.asked.append((scorer, item))
        return RULE_SCORES[item[1]]


async def grade(stand_in: ChatStandIn, response: str, **options: Any) -> tuple[Score, Workers]:
    settings = JudgeSettings(base_url=stand_in.base_url, model="m", max_retries=0)
    scorer = MathJudgeScorer(GradingLimits(deadlines={"math_judge": 60.0}), settings)
    workers = Workers()
    scorer.use_workers(workers)
    await scorer.open()
    try:
        return await scorer.score("What is 2+2?", response, "4", options), workers
    finally:
        await scorer.close()


async def test_rule_ok_is_kept_and_the_judge_never_asked(stand_in: ChatStandIn) -> None:
    """A math_verify match is the answer (`path: rule`, its details under `rule`); no call."""
    score, workers = await grade(stand_in, "\\boxed{4}")
    assert (score.reward, score.status) == (1.0, Status.OK)
    assert score.details == {"path": "rule", "rule": {"status": "ok", "path": "fast"}}
    assert workers.asked == [("math_verify", ("What is 2+2?", "\\boxed{4}", "4", {}))]
    assert stand_in.calls == 0


async def test_rule_miss_goes_to_the_judge(stand_in: ChatStandIn) -> None:
    """A `wrong` from the rule that the judge finds equivalent is 1.0 with `path: judge` and the
    rule's grade beside the verdict."""
    stand_in.reset(verdicts("CORRECT"))
    score, _ = await grade(stand_in, "\\boxed{four}")
    assert (score.reward, score.status) == (1.0, Status.OK)
    assert score.details["path"] == "judge" and score.details["verdict"] == "CORRECT"
    assert score.details["rule"] == {"status": "wrong", "pred": "four", "path": "full"}
    assert stand_in.calls == 1


async def test_a_rule_wrong_is_judged_on_the_answer_the_rule_read_alone(
    stand_in: ChatStandIn,
) -> None:
    """The judge sees the rule's extracted answer (`pred`), never the text around it."""
    response = "So \\boxed{four}, as the grader will agree."
    score, _ = await grade(stand_in, response)
    prompt = stand_in.requests[0]["messages"][0]["content"]
    shown = prompt.partition("Candidate's final answer:\n")[2].split("\n")[1]
    assert shown == "four" and "grader will agree" not in prompt
    assert score.details["judged"] == "pred"


async def test_a_rule_wrong_without_an_extracted_answer_is_kept(stand_in: ChatStandIn) -> None:
    """A `wrong` that carries no extracted answer has nothing the judge may look at: it stays."""
    score, _ = await grade(stand_in, "\\boxed{}")
    assert (score.status, score.details["path"], stand_in.calls) == (Status.WRONG, "rule", 0)


@pytest.mark.parametrize(
    ("judge_on", "response", "judged"),
    [
        ("both", "\\boxed{four}", True),
        ("both", "no box", True),
        ("wrong", "\\boxed{four}", True),
        ("wrong", "no box", False),
        ("no_answer", "\\boxed{four}", False),
        ("no_answer", "no box", True),
        ("both", "slow", False),
    ],
)
async def test_judge_on_chooses_which_misses_are_judged(
    stand_in: ChatStandIn, judge_on: str, response: str, judged: bool
) -> None:
    """Option `judge_on` sends `wrong`, `no_answer` or both to the judge; a rule `timeout` or
    `error` never is."""
    score, _ = await grade(stand_in, response, judge_on=judge_on)
    assert (score.details["path"] == "judge") is judged
    assert stand_in.calls == int(judged)
    if not judged:
        assert score.status is RULE_SCORES[response].status


async def test_only_the_rules_own_options_reach_the_rule(stand_in: ChatStandIn) -> None:
    """`extraction` and `think` go to math_verify; the judge's options stay with the judge."""
    _, workers = await grade(
        stand_in, "\\boxed{4}", extraction="any", think="after", partial="half"
    )
    assert workers.asked[0][1][3] == {"extraction": "any", "think": "after"}


async def test_judge_failure_on_a_miss_is_judge_failed(stand_in: ChatStandIn) -> None:
    """When the judge gives no verdict on a rule miss the answer is `judge_failed`, not the
    rule's `wrong`: nobody decided."""
    stand_in.reset(verdicts("CORRECT", "CORRECT"))
    score, _ = await grade(stand_in, "\\boxed{four}")
    assert score.status is Status.JUDGE_FAILED
    assert score.details["rule"]["status"] == "wrong"


async def test_judge_and_math_judge_share_one_endpoint(stand_in: ChatStandIn) -> None:
    """With one set of settings both scorers ask one endpoint (one cap, one cache), which the
    last of them to close closes."""
    settings = JudgeSettings(base_url=stand_in.base_url, model="m")
    limits = GradingLimits()
    judge, math_judge = (
        JudgeScorer(limits, settings),
        MathJudgeScorer(limits, settings.model_copy()),
    )
    await judge.open()
    await math_judge.open()
    assert judge.endpoint is not None and judge.endpoint is math_judge.endpoint
    shared = judge.endpoint
    await judge.close()
    assert await math_judge.judged("q", "4", "4", {}) is not None and shared._client is not None
    await math_judge.close()
    assert shared._client is None


async def test_math_judge_settings_of_its_own_stop_start_up(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`math_judge` reads `REWARD_JUDGE__*`; a `REWARD_MATH_JUDGE__*` would be ignored, so it
    stops start-up, naming the variables to set instead."""
    monkeypatch.setenv("REWARD_MATH_JUDGE__BASE_URL", "http://judge:30000/v1")
    engine = ScoringEngine(Settings(workers=1))
    with pytest.raises(InvalidSetting, match="set REWARD_JUDGE__<FIELD>, not REWARD_MATH_JUDGE"):
        await engine.start()
    await engine.close()


async def test_without_an_engine_the_rule_is_an_error() -> None:
    """A math_judge built outside the service (no workers handed over) grades `error`."""
    scorer = MathJudgeScorer(GradingLimits(), JudgeSettings())
    score = await scorer.score("q", "\\boxed{4}", "4", {})
    assert score.status is Status.ERROR
