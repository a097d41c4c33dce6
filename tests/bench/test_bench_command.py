"""The bench command's workload choice and the workloads it times."""

from __future__ import annotations

import pytest

from reward_service.bench.bench_command import WORKLOADS, rounds_of
from reward_service.bench.group_bench import grouped
from reward_service.bench.workload import matched_workloads
from reward_service.cli import build_parser


@pytest.mark.parametrize("choice", [*WORKLOADS, "all"])
def test_workload_option_accepts_each_workload_and_all(choice: str) -> None:
    """`bench --workload` takes the name of every workload in WORKLOADS, and `all`."""
    assert build_parser().parse_args(["bench", "--workload", choice]).workload == choice


def test_workload_option_defaults_to_all_and_refuses_unknown_names() -> None:
    """Without `--workload` every workload runs; a name that is none of them is refused."""
    assert build_parser().parse_args(["bench"]).workload == "all"
    with pytest.raises(SystemExit):
        build_parser().parse_args(["bench", "--workload", "nope"])


ANSWERS = {"code-cpp": 3, "code-cpp-headers": 2}
"""Answers per workload here (24 unless named): the C++ baseline runs g++ for each, 1.5-8 s
by the machine's load; three hold a right and a wrong one (two in the header mix, one of
which lists its headers)."""


@pytest.mark.parametrize("name", list(WORKLOADS))
def test_plain_grader_gives_each_workloads_known_rewards(name: str) -> None:
    """A workload's plain grader, once warm, gives every answer of it the reward it carries,
    right and wrong ones among them."""
    workload = WORKLOADS[name]
    workload.warm()
    count = ANSWERS.get(name, 24)
    items = workload.items(7, count)
    assert len(items) == count
    assert [workload.plain(item) for item in items] == [item["expected"] for item in items]
    assert len({item["expected"] for item in items}) > 1


SPLITS = [(10, 3, [4, 3, 3]), (2, 5, [1, 1]), (4, 1, [4])]


@pytest.mark.parametrize(("n", "rounds", "sizes"), SPLITS)
def test_rounds_split_a_side_s_answers_in_order_and_evenly(
    n: int, rounds: int, sizes: list[int]
) -> None:
    """`--rounds` parts are consecutive, differ by one answer at most, and none is empty."""
    parts = rounds_of(list(range(n)), rounds)
    assert [len(part) for part in parts] == sizes
    assert [i for part in parts for i in part] == list(range(n))


def test_rounds_option_defaults_to_one_and_refuses_zero() -> None:
    """`bench --rounds` is a positive count; one round is the plain side, then the service."""
    assert build_parser().parse_args(["bench"]).rounds == 1
    assert build_parser().parse_args(["bench", "--rounds", "4"]).rounds == 4
    with pytest.raises(SystemExit):
        build_parser().parse_args(["bench", "--rounds", "0"])


def test_step_answers_default_to_a_small_grpo_step() -> None:
    """`bench` times a fresh step of 256 answers unless `--step-answers 0` says not."""
    assert build_parser().parse_args(["bench"]).step_answers == 256
    assert build_parser().parse_args(["bench", "--step-answers", "0"]).step_answers == 0


def _kind(label: object) -> str:
    """The kind of problem a workload label is of (`workload.PROBLEM_KINDS`)."""
    text = str(label)
    for mark, kind in (("[", "interval"), ("sqrt", "radical"), ("pi", "pi"), ("frac", "fraction")):
        if mark in text:
            return kind
    return "fraction" if isinstance(label, float) else "integer"


@pytest.mark.parametrize("kinds", [("integer",), ("integer", "fraction", "radical", "interval")])
def test_matched_sets_share_a_plan_of_kinds_and_no_answer(kinds: tuple[str, ...]) -> None:
    """The sides' sets: group by group the same kind of problem (their label shapes
    agree), each set its own prompts and answers, each reward as it carries."""
    sets = matched_workloads(3, 64, 3, kinds=kinds)
    assert [len(items) for items in sets] == [64] * 3
    shapes = [sorted(_kind(group[0]["label"]) for group in grouped(items)) for items in sets]
    assert shapes[0] == shapes[1] == shapes[2]
    prompts = [{str(item["prompt"]) for item in items} for items in sets]
    assert not (prompts[0] & prompts[1] or prompts[1] & prompts[2] or prompts[0] & prompts[2])
    workload = WORKLOADS["mixed"]
    workload.warm()
    for items in sets:
        assert [workload.plain(item) for item in items[:8]] == [i["expected"] for i in items[:8]]
