"""The `run_code` bench workload: the issue's shape, and what counts as a right answer."""

from __future__ import annotations

import pytest

from reward_service.bench.run_code_bench import _right, run_code_workload


def test_the_workload_has_the_issues_shape_in_distinct_programs() -> None:
    """400 runs, 12 sleeping past their 2 s timeout, no two programs alike."""
    items = run_code_workload(5, 400)
    assert sum(item["expected"] is None for item in items) == 12
    assert len({item["body"]["code"] for item in items}) == 400
    assert {item["body"]["run_timeout"] for item in items} == {2}


@pytest.mark.parametrize(
    ("answer", "expected", "right"),
    [
        ({"status": "Success", "run_result": {"status": "Finished", "stdout": "5\n"}}, "5\n", True),
        (
            {"status": "Success", "run_result": {"status": "Finished", "stdout": "6\n"}},
            "5\n",
            False,
        ),
        ({"status": "Failed", "run_result": {"status": "TimeLimitExceeded"}}, None, True),
        ({"status": "Failed", "run_result": {"status": "TimeLimitExceeded"}}, "5\n", False),
        ({"status": "Success", "run_result": {"status": "Finished", "stdout": ""}}, None, False),
        ({"status": "SandboxError", "run_result": None}, None, False),
    ],
)
def test_a_sleeper_must_time_out_and_the_others_print_their_number(
    answer: dict[str, object], expected: str | None, right: bool
) -> None:
    """A sleeper is right only as `TimeLimitExceeded`; another run only with its stdout."""
    assert _right(answer, expected) is right
