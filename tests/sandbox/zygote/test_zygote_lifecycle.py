"""The zygote's life: restarted when killed, its runs dying with it, its replies checked as
data, nothing left behind."""

from __future__ import annotations

import os
import signal
import threading
import time
from typing import Any

import pytest

from reward_service.sandbox import Kind, Outcome, Program, zygote_client
from reward_service.sandbox.zygote_client import ZygoteSandbox
from tests.sandbox.harness.zygote_runs import LIMITS, SHORT, run, zygote_processes


def test_a_killed_zygote_is_restarted_by_the_next_run() -> None:
    """After its zygote dies, the sandbox starts another and the next run succeeds."""
    tag = '"scratch_mb": 31'
    with ZygoteSandbox(scratch_mb=31) as sandbox:
        (before,) = zygote_processes(tag)[:1]
        os.kill(before, signal.SIGKILL)
        outcome = run(sandbox, "print('again')")
        assert (outcome.kind, outcome.stdout) == (Kind.OK, b"again\n")
        assert before not in zygote_processes(tag)


def test_a_run_dies_with_its_zygote() -> None:
    """Killing the zygote mid-run takes the run's process with it; the run is retried."""
    tag = '"scratch_mb": 33'
    with ZygoteSandbox(scratch_mb=33) as sandbox:
        program = Program("python", "import time; print('up', flush=True); time.sleep(30)")
        result: list[Outcome] = []
        runner = threading.Thread(
            target=lambda: result.extend(sandbox.execute(program, [b""], SHORT, 30).outcomes())
        )
        first = set(zygote_processes(tag))
        runner.start()
        while len(set(zygote_processes(tag)) - first) < 1:  # the run process appears
            time.sleep(0.01)
        doomed = set(zygote_processes(tag))
        for pid in sorted(first):
            os.kill(pid, signal.SIGKILL)
        runner.join()
        assert [o.kind for o in result] == [Kind.TIME_LIMIT]
        assert not doomed & set(zygote_processes(tag))


@pytest.mark.parametrize(("where", "call"), [("_outcome", 2), ("_read", 4), ("_read", 5)])
def test_a_failure_mid_answer_gives_the_next_answer_a_fresh_zygote(
    monkeypatch: pytest.MonkeyPatch, where: str, call: int
) -> None:
    """A MemoryError while the worker reads an answer (after its first outcome; before the
    second's frame, or inside it, its header read) kills the zygote, so the next answer
    reads its own outcomes, never the rest of the previous one's; the error goes on up."""
    tag = '"scratch_mb": 41'
    with ZygoteSandbox(scratch_mb=41) as sandbox:
        (before,) = zygote_processes(tag)[:1]
        real = getattr(zygote_client, where)
        calls = 0

        def failing(*args: Any) -> Any:
            nonlocal calls
            calls += 1
            if calls == call:
                raise MemoryError
            return real(*args)

        monkeypatch.setattr(zygote_client, where, failing)
        first = Program("python", "print('first', input())")
        stdins = [b"1\n", b"2\n", b"3\n", b"4\n"]
        with pytest.raises(MemoryError):
            sandbox.execute(
                first, stdins, LIMITS, budget_s=30, stop_at_first_failure=False
            ).outcomes()
        monkeypatch.undo()
        second = Program("python", "print('second', input())")
        outcomes = sandbox.execute(second, [b"a\n", b"b\n"], LIMITS, budget_s=30).outcomes()
        assert [(o.kind, o.stdout) for o in outcomes] == [
            (Kind.OK, b"second a\n"),
            (Kind.OK, b"second b\n"),
        ]
        assert before not in zygote_processes(tag)


REPLY = {"kind": "ok", "exit_code": 0, "elapsed_s": 0.1, "confinement": None}


REPLY |= {"stdout_bytes": 1, "stderr_bytes": 1}


ABC = zygote_client._Fetch(("a", "b", "c"), 3)


"""Files a, b and c asked for, 3 bytes of them in all."""


def test_a_reply_s_files_follow_its_streams() -> None:
    """A run's fetched files follow its stdout and stderr, named by their index in `fetch`."""
    reply = {**REPLY, "files": [[0, 2], [2, 1]]}
    outcome = zygote_client._outcome(reply, b"oeaac", LIMITS, ABC)
    assert (outcome.stdout, outcome.stderr, outcome.files) == (b"o", "e", {"a": b"aa", "c": b"c"})


@pytest.mark.parametrize(
    "files",
    [[[3, 1]], [[1, 1], [1, 1]], [[1, 1], [0, 1]], [[0, 4]], [[0, -1]], [[0, 1.0]], {"a": 1}],
    ids=["not-asked", "twice", "out-of-order", "over-the-cap", "negative", "float", "not-a-list"],
)
def test_a_reply_s_files_are_checked_as_data(files: Any) -> None:
    """A reply naming a file not asked for, one twice or out of order, or more bytes than
    allowed, is a broken zygote's."""
    payload = b"oe" + b"x" * sum(max(0, int(f[1])) for f in files if isinstance(f, list))
    with pytest.raises(zygote_client.protocol.ProtocolError):
        zygote_client._outcome({**REPLY, "files": files}, payload, LIMITS, ABC)


def test_close_leaves_no_process_behind() -> None:
    """After close, no process started from the zygote script is alive."""
    tag = '"scratch_mb": 37'
    sandbox = ZygoteSandbox(scratch_mb=37)
    run(sandbox, "print('x')")
    assert zygote_processes(tag)
    sandbox.close()
    assert zygote_processes(tag) == []
