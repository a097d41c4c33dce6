"""NeMo Gym's aggregate metrics over graded rollouts: the same numbers as its own code.

`nemo_gym_metrics.json` holds what NeMo Gym's `compute_pass_majority_metrics` and
`add_avg_sample_std_dev` (nemo_gym/reward_profile.py at 07d6b0d) returned on `TASKS`,
recorded by running them: every key they produce must come out equal here.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from reward_service.grading.group_facts import pass_at_k
from reward_service.grading.rollout_metrics import (
    aggregate,
    cost,
    describe,
    highest_k,
    key_metrics,
    pass_majority,
)


def _math(reward: float, answer: str | None) -> dict[str, Any]:
    return {"reward": reward, "library_reward": reward, "extracted_answer": answer}


def _voted(reward: float, answer: str | None) -> dict[str, Any]:
    return {"reward": reward, "extracted_answer": answer}


TASKS: dict[str, list[list[dict[str, Any]]]] = {
    # NeMo Gym's math_with_judge metrics fixture: 3 tasks of 4 rollouts
    "math": [
        [_math(1.0, "204"), _math(1.0, "204"), _math(1.0, "204"), _math(0.0, None)],
        [_math(1.0, "113"), _math(0.0, "42"), _math(0.0, None), _math(0.0, None)],
        [_math(0.0, "99"), _math(0.0, "42"), _math(0.0, "7"), _math(0.0, None)],
    ],
    # tasks of 3, 1 and 5 rollouts, majority ties
    "ragged_ties": [
        [_voted(0.0, "3"), _voted(1.0, "4"), _voted(0.0, "3")],
        [_voted(1.0, "B")],
        [_voted(1.0, "x"), _voted(0.0, "y"), _voted(0.0, "y"), _voted(1.0, "x"), _voted(0.0, None)],
    ],
    # partial rewards: pass@k is the best of the first k
    "partial": [
        [{"reward": 0.5}, {"reward": 0.25}, {"reward": 1.0}],
        [{"reward": 0.0}, {"reward": 0.75}, {"reward": 0.5}],
    ],
}
SCORES = {
    "math": lambda r: {"symbolic_accuracy": r["library_reward"]},
    "ragged_ties": lambda r: {"accuracy": r["reward"]},
    "partial": lambda r: {"accuracy": r["reward"]},
}
ANSWER_KEYS = {"math": "extracted_answer", "ragged_ties": "extracted_answer", "partial": None}

NEMO_GYM: dict[str, dict[str, Any]] = json.loads(
    (Path(__file__).parent / "nemo_gym_metrics.json").read_text()
)


@pytest.mark.parametrize("case", sorted(TASKS))
def test_every_metric_nemo_gym_computes_comes_out_equal(case: str) -> None:
    """pass@k, pass@1[avg-of-k], majority@k, their spreads and each run's pass@1: NeMo Gym's
    numbers on the same rollouts, key for key, and no key it lacks."""
    ours = pass_majority(TASKS[case], SCORES[case], ANSWER_KEYS[case])
    theirs = NEMO_GYM[case]
    assert set(ours) == set(theirs)
    runs = theirs["per_sample_aggregate"]
    assert {name: pytest.approx(values) for name, values in runs.items()} == ours[
        "per_sample_aggregate"
    ]
    for key, value in theirs.items():
        if key != "per_sample_aggregate":
            assert ours[key] == pytest.approx(value, rel=1e-12, abs=1e-12), key


def test_pass_at_k_is_the_group_endpoints_estimator() -> None:
    """One task's pass@k is `group_facts.pass_at_k` in percent: one estimator, not two."""
    rewards = [1.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0]
    metrics = pass_majority([[{"reward": r} for r in rewards]], lambda r: {"accuracy": r["reward"]})
    for k in range(1, 8):
        assert metrics[f"pass@{k}/accuracy"] == pytest.approx(100 * pass_at_k(7, 2, k))


def test_the_math_fixtures_headline_numbers() -> None:
    """NeMo Gym's own test of this fixture: pass@1 is 33.3 and pass@4 66.7 percent."""
    metrics = pass_majority(TASKS["math"], SCORES["math"], "extracted_answer")
    assert metrics["pass@1/symbolic_accuracy"] == pytest.approx(100 / 3)
    assert metrics["pass@4/symbolic_accuracy"] == pytest.approx(200 / 3)


def test_statistics_of_numeric_fields_count_booleans_and_token_usage() -> None:
    """mean/max/min/median/std of each number, booleans as 0 and 1, usage from the response;
    the indices are not fields."""
    rows = [
        {"reward": 1.0, "follow_all_instructions": True, "_ng_task_index": 0},
        {
            "reward": 0.0,
            "follow_all_instructions": False,
            "response": {"usage": {"output_tokens": 8}},
        },
    ]
    stats = describe(rows)
    assert (stats["mean/reward"], stats["std/reward"]) == (0.5, pytest.approx(0.7071, abs=1e-4))
    assert stats["mean/follow_all_instructions"] == 0.5 and stats["max/output_tokens"] == 8
    assert "std/output_tokens" not in stats and not any("_ng_" in key for key in stats)


def test_numbers_no_float_holds_are_not_counted() -> None:
    """A 400-digit integer, a string or a nested object in a field is no statistic."""
    rows = [{"reward": 1.0, "huge": 10**400, "text": "7", "nested": {"a": 1}}]
    assert set(describe(rows)) == {f"{s}/reward" for s in ("mean", "max", "min", "median", "std")}
    scores = pass_majority([rows], lambda r: {"accuracy": r["reward"], "huge": r["huge"]})
    assert "pass@1/huge" not in scores and scores["pass@1/accuracy"] == 100.0


def test_one_rollout_gets_no_spread_but_zero() -> None:
    """A task of one rollout: every field it holds has std 0.0, as NeMo Gym's profiler fills it."""
    assert describe([{"reward": 1.0}])["std/reward"] == 0.0


def test_key_metrics_pick_the_largest_k_without_spreads_or_no_answer() -> None:
    """The headline: pass@1 averaged, pass@k and majority@k at the largest k only."""
    metrics = pass_majority(TASKS["math"], SCORES["math"], "extracted_answer")
    key = key_metrics({"mean/reward": 0.3, **metrics})
    assert set(key) == {
        "mean/reward",
        "pass@1[avg-of-4]/symbolic_accuracy",
        "pass@1[avg-of-4]/no_answer",
        "pass@4/symbolic_accuracy",
        "majority@4/symbolic_accuracy",
    }
    assert highest_k({"pass@2/a": 1.0, "pass@10/a": 2.0}, "pass@{k}") == {"pass@10/a": 2.0}


def test_aggregate_groups_rollouts_by_task() -> None:
    """Rows are grouped by `_ng_task_index` in the order they came; per task, its statistics."""
    rows = [
        {"_ng_task_index": 1, "reward": 0.0},
        {"_ng_task_index": 0, "reward": 1.0},
        {"_ng_task_index": 1, "reward": 1.0},
    ]
    result = aggregate(rows, lambda r: {"accuracy": r["reward"]})
    assert [(g["_ng_task_index"], g["num_rollouts"]) for g in result["group_level_metrics"]] == [
        (0, 1),
        (1, 2),
    ]
    assert result["agent_metrics"]["pass@1[avg-of-1]/accuracy"] == 50.0  # first rollouts 1.0, 0.0
    assert aggregate([], lambda r: {}) == {
        "group_level_metrics": [],
        "agent_metrics": {},
        "key_metrics": {},
    }


def test_majority_votes_count_equal_numbers_as_one_answer() -> None:
    """`0.5`, `1/2` and `\\frac{1}{2}` are one vote, outnumbering two votes for `1`."""
    answers = [("0.5", 1.0), ("1", 0.0), ("1/2", 1.0), ("1", 0.0), ("\\frac{1}{2}", 1.0)]
    task = [_voted(reward, answer) for answer, reward in answers]
    metrics = pass_majority([task], lambda r: {"accuracy": r["reward"]}, "extracted_answer")
    assert metrics["majority@5/accuracy"] == 100.0


def test_cost_is_rollouts_times_the_largest_task() -> None:
    """What the cap on `/aggregate_metrics` counts."""
    rows = [{"_ng_task_index": t, "reward": 0} for t in (0, 0, 0, 1)]
    assert cost(rows) == 12
