"""`bench --workload grpo`: groups rebuilt from the workload, their bodies, and a short run."""

from __future__ import annotations

import asyncio

import pytest

from reward_service.bench.group_bench import group_body, grouped, post_groups
from reward_service.bench.workload import grpo_workload
from reward_service.cli import build_parser
from reward_service.testing import LiveServer


@pytest.mark.parametrize("size", [8, 16])
def test_grouped_gives_back_the_workloads_groups(size: int) -> None:
    """The shuffled workload regrouped: whole groups of one prompt and one label each."""
    groups = grouped(grpo_workload(5, 4 * size, group_size=size))
    assert [len(group) for group in groups] == [size] * 4
    for group in groups:
        assert len({str(item["prompt"]) for item in group}) == 1
        assert len({str(item["label"]) for item in group}) == 1


def test_group_body_is_the_group_endpoints() -> None:
    """One prompt, one label, the responses in order, pass@1 and pass@n asked."""
    [group] = grouped(grpo_workload(5, 8))
    body = group_body(group)
    assert body["responses"] == [item["response"] for item in group]
    assert (body["prompt"], body["label"], body["k"]) == (
        group[0]["prompt"],
        group[0]["label"],
        [1, 8],
    )


def test_the_grpo_workload_is_a_bench_choice() -> None:
    """`bench --workload grpo` is accepted."""
    assert build_parser().parse_args(["bench", "--workload", "grpo"]).workload == "grpo"


def test_groups_through_the_service_are_graded_right(server: LiveServer) -> None:
    """A short run of the group side: each reward as the workload expects, one grading each."""
    groups = grouped(grpo_workload(11, 32))
    run, gradings = asyncio.run(post_groups(server.url, groups, 4))
    assert (run.answers, run.wrong, gradings) == (32, 0, 32)
