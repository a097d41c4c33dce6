"""`reward_service.testing`'s sandbox double keeps the promises of `Sandbox.execute`."""

from __future__ import annotations

from reward_service.sandbox import Kind, Limits, Outcome, Program
from reward_service.testing import RecordingSandbox

PROGRAM = Program("python", "print(input())")
LIMITS = Limits(time_s=1.0, memory_mb=64, output_bytes=1024)


def _ends(program: Program, stdin: bytes) -> Outcome:
    kind = Kind.RUNTIME_ERROR if stdin == b"boom" else Kind.OK
    return Outcome(kind, stdin, "", 0 if kind is Kind.OK else 1, 0.0)


def test_runs_stop_after_the_first_failure_only_when_asked() -> None:
    """With `stop_at_first_failure` the runs end at the first that is not `ok`; without, all run."""
    sandbox = RecordingSandbox(answer=_ends)
    stdins = [b"a", b"boom", b"c"]
    stopped = sandbox.execute(PROGRAM, stdins, LIMITS, 10.0)
    every = sandbox.execute(PROGRAM, stdins, LIMITS, 10.0, stop_at_first_failure=False)
    assert [run.stdout for run in stopped.runs] == [b"a", b"boom"]
    assert [run.stdout for run in every.runs] == [b"a", b"boom", b"c"]
    assert [call.stop_at_first_failure for call in sandbox.calls] == [True, False]


def test_runs_past_runs_left_are_not_run() -> None:
    """`runs_left` stands for the budget: the answer holds fewer runs than stdins."""
    sandbox = RecordingSandbox(stdout=b"x", runs_left=3)
    first = sandbox.execute(PROGRAM, [b""] * 2, LIMITS, 10.0)
    second = sandbox.execute(PROGRAM, [b""] * 2, LIMITS, 10.0)
    assert (len(first.runs), len(second.runs), sandbox.runs_left) == (2, 1, 0)


def test_a_failed_build_leaves_no_runs() -> None:
    """A build that is not `ok` is the answer's, with no runs: one `compile_error` outcome."""
    build = Outcome(Kind.RUNTIME_ERROR, b"", "main.cpp:1: error", 1, 0.2)
    done = RecordingSandbox(build=build).execute(Program("cpp", "int main("), [b""], LIMITS, 10.0)
    assert (done.build, done.runs) == (build, [])
    assert [(o.kind, o.stderr) for o in done.outcomes()] == [
        (Kind.COMPILE_ERROR, "main.cpp:1: error")
    ]
