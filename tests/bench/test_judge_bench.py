"""The judge workload of `bench`: its options, and answers whose rewards the judge confirms."""

from __future__ import annotations

import pytest

from reward_service.bench.chat_stand_in import chat_stand_in
from reward_service.bench.judge_bench import GROUP, _answers
from reward_service.cli import build_parser
from reward_service.scorers.base import GradingLimits
from reward_service.scorers.llm_judge.scorers import JudgeScorer
from reward_service.scorers.llm_judge.settings import JudgeSettings


def test_judge_workload_and_its_endpoint_options_parse() -> None:
    """`bench --workload judge` takes the endpoint's latency and capacity, 0.5 s and 64 unless
    told."""
    args = build_parser().parse_args(["bench", "--workload", "judge"])
    assert (args.workload, args.judge_latency_s, args.judge_capacity) == ("judge", 0.5, 64)
    args = build_parser().parse_args(["bench", "--judge-latency-s", "2", "--judge-capacity", "8"])
    assert (args.judge_latency_s, args.judge_capacity) == (2.0, 8)


@pytest.mark.parametrize("distinct", [True, False])
async def test_stand_in_judge_gives_each_answer_its_known_reward(distinct: bool) -> None:
    """Through the judge scorer and the stand-in judge, every bench answer gets the reward it
    carries, so the bench's `wrong` counts real mistakes."""
    items = _answers(3, 48, distinct)
    with chat_stand_in() as endpoint:
        scorer = JudgeScorer(
            GradingLimits(deadlines={"judge": 60.0}),
            JudgeSettings(base_url=endpoint.base_url, model="judge", max_retries=0),
        )
        await scorer.open()
        try:
            scores = [await scorer.score(i["prompt"], i["response"], i["label"], {}) for i in items]
        finally:
            await scorer.close()
    assert [s.reward for s in scores] == [i["expected"] for i in items]
    assert 0 < sum(s.reward for s in scores) < len(items)


def test_grpo_answers_repeat_their_final_answers_within_a_prompt() -> None:
    """A GRPO group's eight answers share a prompt and label and hold at most three distinct
    final answers; the distinct workload's answers never repeat."""
    grpo = _answers(5, 80, distinct=False)
    for start in range(0, 80, GROUP):
        group = grpo[start : start + GROUP]
        assert len({(i["prompt"], i["label"]) for i in group}) == 1
        assert len({i["response"].rpartition("</think>")[2] for i in group}) <= 3
    distinct = _answers(5, 80, distinct=True)
    assert len({(i["prompt"], i["response"].rpartition("</think>")[2]) for i in distinct}) == 80
