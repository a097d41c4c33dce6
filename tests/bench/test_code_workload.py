"""The code workload: every kind of solution, both test styles, rewards the service gives."""

from __future__ import annotations

from collections import Counter

import pytest

from reward_service.bench.code_workload import KIND_WEIGHTS, KINDS, code_workload, kind_counts
from reward_service.contracts.slime import sample_from_json
from reward_service.scorers.code.scorer import CodeScorer


def test_workload_mixes_every_kind_and_style() -> None:
    """A workload holds correct, wrong, crashing and slow solutions, stdin and call-based."""
    items = code_workload(11, 160)
    styles = {("fn_name" in item["label"]["answer"], item["kind"]) for item in items}
    assert styles == {(call, kind) for call in (True, False) for kind in KINDS}
    assert {item["expected"] for item in items if item["kind"] != "correct"} == {0.0}


def test_service_scorer_gives_every_item_its_expected_reward() -> None:
    """The code scorer over the service's sandbox grades each generated answer as it is labelled."""
    scorer = CodeScorer()
    try:
        items = code_workload(12, 48)
        rewards = []
        for item in items:
            sample = sample_from_json(item)
            rewards.append(scorer.score(None, sample.response, sample.label, sample.options).reward)
    finally:
        scorer.close()
    assert rewards == [item["expected"] for item in items]


@pytest.mark.parametrize("answers", [400, 160, 13, 1])
def test_every_workload_holds_the_same_mix_of_kinds(answers: int) -> None:
    """Each seed's workload holds exactly `kind_counts` of each kind (5% slow at 400: 20), so the
    sides of a bench, each grading its own seed, grade the same mix."""
    counts = kind_counts(answers)
    assert sum(counts.values()) == answers
    for kind, weight in zip(KINDS[1:], KIND_WEIGHTS[1:], strict=True):
        assert counts[kind] == round(answers * weight)
    for seed in (1, 2, 3):
        items = code_workload(seed, answers)
        assert len(items) == answers
        assert Counter(item["kind"] for item in items) == {k: n for k, n in counts.items() if n}
