"""The bench command's workload choice and the workloads it times."""

from __future__ import annotations

import pytest

from reward_service.bench.runner import WORKLOADS
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


@pytest.mark.parametrize("name", list(WORKLOADS))
def test_plain_grader_gives_each_workloads_known_rewards(name: str) -> None:
    """A workload's plain grader, once warm, gives every answer of it the reward it carries."""
    workload = WORKLOADS[name]
    workload.warm()
    items = workload.items(7, 24)
    assert len(items) == 24
    assert [workload.plain(item) for item in items] == [item["expected"] for item in items]
