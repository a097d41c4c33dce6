"""The ifeval workload: answers with known rewards that the scorer and the plain side agree on."""

from __future__ import annotations

from reward_service.bench.instruction_workload import (
    GROUP_SIZE,
    grade_plain,
    instruction_workload,
    warm_plain,
)
from reward_service.scorers.instructions.scorers import IfEvalScorer


def test_groups_share_a_label_and_mix_rewards() -> None:
    """Eight answers share each label object; both rewards occur; seeds give fresh sets."""
    items = instruction_workload(3, 96)
    labels = [items[i]["label"] for i in range(0, 96, GROUP_SIZE)]
    assert all(items[i]["label"] is labels[i // GROUP_SIZE] for i in range(96))
    assert {item["expected"] for item in items} == {0.0, 1.0}
    assert instruction_workload(4, 8)[0]["response"] != items[0]["response"]


def test_the_scorer_and_the_plain_side_give_the_expected_rewards() -> None:
    """The ifeval scorer and if-verifiable's own API both grade every answer as it is labelled."""
    items = instruction_workload(5, 48)
    scorer = IfEvalScorer()
    warm_plain()
    assert [scorer.score("", i["response"], i["label"], {}).reward for i in items] == [
        i["expected"] for i in items
    ]
    assert [grade_plain(i) for i in items] == [i["expected"] for i in items]
