"""Workers forked from a one-shot command's own process (`reward-service score`): the same
deadlines, fallbacks and retries as workers from the forkserver.

Each runs the command in a process of its own: a test runner may hold threads, and the
engine refuses to fork a process that does.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from reward_service.grading.engine import ScoringEngine
from reward_service.settings import Settings
from tests.conftest import FAKE_SCORER


def _score(response: str, **env: str) -> dict[str, Any]:
    """`reward-service score` of `response` with the fake scorer, its detail object."""
    done = subprocess.run(
        [sys.executable, "-m", "reward_service", "score", "--scorer", "fake", "--label", "1"],
        input=response,
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "REWARD_EXTRA_SCORERS": FAKE_SCORER, **env},
    )
    assert done.returncode == 0, done.stderr
    detail: dict[str, Any] = json.loads(done.stdout)
    return detail


@pytest.mark.parametrize(
    ("response", "status", "reason"),
    [
        ("0.5", "ok", None),
        ("stall", "timeout", "deadline 1.5 s"),
        ("crash", "error", "worker died (exit code 3)"),
        ("raise", "error", "scorer raised RuntimeError"),
    ],
)
def test_a_forked_worker_keeps_the_deadline_and_the_fallback(
    response: str, status: str, reason: str | None
) -> None:
    """A stalled answer is killed at its scorer's deadline, a worker that dies twice and a
    scorer that raises cost their answer; each gets the fallback reward."""
    detail = _score(
        response,
        REWARD_SCORER_DEADLINES='{"fake": 1.5}',
        REWARD_FALLBACK_REWARD="0.25",
        REWARD_GRADER_TIMEOUT_S="1",
    )
    assert (detail["status"], detail.get("reason")) == (status, reason)
    assert detail["reward"] == (0.5 if status == "ok" else 0.25)


def test_an_engine_will_not_fork_a_process_running_threads() -> None:
    """A forked worker would inherit a copy of every lock another thread holds: refused."""
    stop = threading.Event()
    thread = threading.Thread(target=stop.wait)
    thread.start()
    try:
        engine = ScoringEngine(Settings(workers=1), only={"exact"}, start_method="fork")
        with pytest.raises(RuntimeError, match="other threads"):
            asyncio.run(engine.start())
    finally:
        stop.set()
        thread.join()


_ORPHANING = """
import asyncio, multiprocessing, os, signal, time
from reward_service.grading.pool import WorkerPool

async def main():
    pool = WorkerPool(1, lambda: None, context=multiprocessing.get_context("fork"))
    await pool.start()
    print(await pool.run(os.getpid, (), 5.0), flush=True)
    await asyncio.sleep(60)

signal.signal(signal.SIGPIPE, signal.SIG_IGN)
asyncio.run(main())
"""


def test_a_forked_worker_exits_when_its_server_dies() -> None:
    """A forked worker closes its copies of the server's pipe ends, so it reads EOF and exits
    when the server is SIGKILLed, as a forkserver's worker does."""
    with subprocess.Popen(
        [sys.executable, "-c", _ORPHANING], stdout=subprocess.PIPE, text=True
    ) as server:
        try:
            assert server.stdout is not None
            worker = int(server.stdout.readline())
        finally:
            server.kill()
    deadline = time.monotonic() + 10
    while _alive(worker):
        assert time.monotonic() < deadline, f"worker {worker} outlived its server"
        time.sleep(0.05)


def _alive(pid: int) -> bool:
    """Whether `pid` runs (a zombie waiting for its reaper does not)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False
