"""A run's limits and an answer's budget: time, memory, output, the runs an answer may make."""

from __future__ import annotations

import subprocess
import sys

import pytest

from reward_service.sandbox import Kind, Limits, Program
from reward_service.sandbox.zygote_client import ZygoteSandbox
from tests.sandbox.harness.zygote_runs import LIMITS, SHORT, run


def test_a_busy_loop_ends_in_time_limit(sandbox: ZygoteSandbox) -> None:
    """A program that never stops computing is killed and reported as time_limit."""
    outcome = run(sandbox, "while True: pass", limits=SHORT)
    assert (outcome.kind, outcome.exit_code) == (Kind.TIME_LIMIT, None)
    assert outcome.elapsed_s >= SHORT.time_s


def test_a_sleeping_program_ends_in_time_limit_by_the_wall_clock(sandbox: ZygoteSandbox) -> None:
    """A program that waits without using CPU is killed at its wall-clock deadline."""
    outcome = run(sandbox, "import time; time.sleep(100)", limits=SHORT)
    assert (outcome.kind, outcome.exit_code) == (Kind.TIME_LIMIT, None)


def test_a_big_allocation_ends_in_memory_limit(sandbox: ZygoteSandbox) -> None:
    """Allocating past the address-space limit is memory_limit."""
    outcome = run(sandbox, "x = bytearray(2 * 1024**3)", limits=Limits(2.0, 128, 1 << 20))
    assert outcome.kind is Kind.MEMORY_LIMIT
    assert outcome.stderr.endswith("MemoryError\n")


def test_endless_output_ends_in_output_limit_with_the_cap_kept(sandbox: ZygoteSandbox) -> None:
    """Writing past output_bytes kills the run; exactly output_bytes are returned."""
    outcome = run(sandbox, "while True: print('y' * 100)", limits=Limits(2.0, 256, 10_000))
    assert outcome.kind is Kind.OUTPUT_LIMIT
    assert outcome.stdout == (b"y" * 100 + b"\n") * 99 + b"y" * 1


def test_output_of_exactly_the_cap_is_ok(sandbox: ZygoteSandbox) -> None:
    """output_bytes itself is allowed."""
    outcome = run(sandbox, "print('z' * 9999)", limits=Limits(2.0, 256, 10_000))
    assert (outcome.kind, len(outcome.stdout)) == (Kind.OK, 10_000)


def test_stderr_is_reported_as_its_tail(sandbox: ZygoteSandbox) -> None:
    """Of a long stderr, only the last kilobyte or so comes back, ending with the error."""
    source = "import sys\nsys.stderr.write('e' * 200_000)\nraise ValueError('last words')\n"
    outcome = run(sandbox, source)
    assert len(outcome.stderr) <= 1024
    assert outcome.stderr.endswith("ValueError: last words\n")


def test_stop_at_first_failure_stops_after_the_first_failing_run(sandbox: ZygoteSandbox) -> None:
    """With it, runs stop after a failure; without it, every stdin runs."""
    program = Program("python", "import sys; sys.exit(int(input()))")
    stdins = [b"0\n", b"4\n", b"0\n"]
    stopping = sandbox.execute(program, stdins, LIMITS, budget_s=30).outcomes()
    assert [o.kind for o in stopping] == [Kind.OK, Kind.RUNTIME_ERROR]
    every = sandbox.execute(
        program, stdins, LIMITS, budget_s=30, stop_at_first_failure=False
    ).outcomes()
    assert [o.exit_code for o in every] == [0, 4, 0]


def test_a_budget_smaller_than_a_run_runs_nothing(sandbox: ZygoteSandbox) -> None:
    """A run that could overrun the budget is not started."""
    outcomes = sandbox.execute(
        Program("python", "print(1)"), [b""] * 3, LIMITS, budget_s=1.0
    ).outcomes()
    assert outcomes == []


def test_the_budget_stops_runs_that_could_overrun_it(sandbox: ZygoteSandbox) -> None:
    """Runs that each may take time_s stop once the budget left is below time_s."""
    program = Program("python", "import time; time.sleep(100)")
    outcomes = sandbox.execute(
        program, [b""] * 5, SHORT, budget_s=1.3, stop_at_first_failure=False
    ).outcomes()
    assert [o.kind for o in outcomes] == [Kind.TIME_LIMIT, Kind.TIME_LIMIT]


def test_an_unknown_language_is_refused(sandbox: ZygoteSandbox) -> None:
    """A language without a runner is the caller's error, not a run."""
    with pytest.raises(ValueError, match="cobol"):
        sandbox.execute(Program("cobol", ""), [b""], LIMITS, budget_s=30)


def test_limits_above_the_worker_s_own_are_clamped_not_refused() -> None:
    """A memory limit over the hard limit the worker has runs under that hard limit."""
    script = (
        "import resource\n"
        "resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))\n"
        "from reward_service.sandbox import Limits, Program\n"
        "from reward_service.sandbox.zygote_client import ZygoteSandbox\n"
        "with ZygoteSandbox() as sandbox:\n"
        "    source = 'import resource; print(resource.getrlimit(resource.RLIMIT_AS)[1] >> 20)'\n"
        "    limits = Limits(2.0, 4096, 1000)\n"
        "    (o,) = sandbox.execute(Program('python', source), [b''], limits, 30).runs\n"
        "print(o.kind.value, o.stdout.decode().strip())\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert done.stdout.split() == ["ok", "1024"], done.stderr
