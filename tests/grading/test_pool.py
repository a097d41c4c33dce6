"""The worker pool: deadlines, deaths, recycling, pipelining and affinity."""

from __future__ import annotations

import asyncio
import multiprocessing
import os
import select
import signal
import time
from collections import Counter
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

import pytest

from reward_service.errors import DeadlineExceeded, PoolClosed, TaskFailed, WorkerDied
from reward_service.grading.pool import WorkerPool


def _noop() -> None:
    """Worker initializer."""


def _sleep(seconds: float) -> int:
    time.sleep(seconds)
    return os.getpid()


def _die() -> None:
    os._exit(7)


def _parent() -> tuple[int, int]:
    """The worker's pid and its parent's, the forkserver."""
    return os.getpid(), os.getppid()


def _announce_and_sleep(path: Path, seconds: float) -> int:
    path.write_text(str(os.getpid()))
    return _sleep(seconds)


def _stall() -> None:
    pow(10, 10**10)


async def _with_pool(size: int, body: Any, max_tasks: int = 0) -> Any:
    restarts: list[str] = []
    pool = WorkerPool(size, _noop, max_tasks=max_tasks, on_restart=restarts.append)
    await pool.start()
    try:
        return await body(pool), restarts
    finally:
        await pool.close()


def test_deadline_counts_from_start_not_from_queueing() -> None:
    """Four 0.5 s tasks queued on one worker all finish under a 1.5 s deadline each."""

    async def body(pool: WorkerPool) -> list[Any]:
        return await asyncio.gather(*(pool.run(_sleep, (0.5,), 1.5) for _ in range(4)))

    pids, restarts = asyncio.run(_with_pool(1, body))
    assert len(set(pids)) == 1
    assert restarts == []


def test_stalled_task_is_killed_and_the_next_one_still_runs() -> None:
    """A task past its deadline fails alone; the task queued behind it runs on a new worker."""

    async def body(pool: WorkerPool) -> tuple[Any, Any]:
        return await asyncio.gather(
            pool.run(_stall, (), 1.0), pool.run(_sleep, (0.01,), 5.0), return_exceptions=True
        )

    (stalled, after), restarts = asyncio.run(_with_pool(1, body))
    assert isinstance(stalled, DeadlineExceeded)
    assert isinstance(after, int)
    assert restarts == ["deadline"]


def test_task_of_a_dying_worker_is_retried_once() -> None:
    """A task that kills its worker every time fails with WorkerDied after two tries."""

    async def body(pool: WorkerPool) -> tuple[Any, Any]:
        return await asyncio.gather(
            pool.run(_die, (), 5.0), pool.run(_sleep, (0.01,), 5.0), return_exceptions=True
        )

    (died, after), restarts = asyncio.run(_with_pool(1, body))
    assert isinstance(died, WorkerDied)
    assert isinstance(after, int)
    assert restarts == ["died", "died"]


def _raise_recursion() -> None:
    raise RecursionError("deep")


def test_a_task_that_raises_fails_alone_as_task_failed() -> None:
    """A task's exception (a RecursionError too) reaches its caller as TaskFailed naming it,
    and so does a task that cannot be pickled; the worker keeps serving."""
    deep: list[object] = []
    for _ in range(100_000):
        deep = [deep]

    async def body(pool: WorkerPool) -> tuple[Any, Any, Any]:
        return await asyncio.gather(
            pool.run(_raise_recursion, (), 5.0),
            pool.run(_sleep, (deep,), 5.0),
            pool.run(_sleep, (0,), 5.0),
            return_exceptions=True,
        )

    (raised, unsent, after), restarts = asyncio.run(_with_pool(1, body))
    assert isinstance(raised, TaskFailed) and str(raised) == "RecursionError: deep"
    assert isinstance(unsent, TaskFailed) and "cannot be sent to a worker" in str(unsent)
    assert isinstance(after, int) and restarts == []


def test_workers_are_recycled_after_max_tasks() -> None:
    """With max_tasks=3, the fourth task runs in a new process."""

    async def body(pool: WorkerPool) -> list[int]:
        return [await pool.run(_sleep, (0,), 5.0) for _ in range(4)]

    pids, restarts = asyncio.run(_with_pool(1, body, max_tasks=3))
    assert len(set(pids[:3])) == 1
    assert pids[3] != pids[0]
    assert restarts == ["recycled"]


def test_equal_affinity_prefers_one_worker() -> None:
    """Queued tasks of one affinity mostly land on one worker (an idle one may steal)."""

    async def body(pool: WorkerPool) -> list[Any]:
        tasks = [pool.run(_sleep, (0.02,), 5.0, affinity=k) for k in [0, 1] * 8]
        return await asyncio.gather(*tasks)

    pids, _ = asyncio.run(_with_pool(2, body))
    home = [Counter(pids[k::2]).most_common(1)[0] for k in (0, 1)]
    assert home[0][0] != home[1][0]
    assert all(count >= 6 for _, count in home), pids


def test_closed_pool_refuses_work() -> None:
    """After close, `run` raises instead of queueing forever."""

    async def body() -> None:
        pool = WorkerPool(1, _noop)
        await pool.start()
        await pool.close()
        with pytest.raises(PoolClosed):
            pool.run(_sleep, (0,), 1.0)

    asyncio.run(body())


def test_a_dead_forkserver_costs_no_worker() -> None:
    """SIGKILL the forkserver: the running task finishes on its worker, and workers still spawn."""

    async def body(pool: WorkerPool) -> list[tuple[int, int]]:
        first = await pool.run(_parent, (), 5.0)
        running = pool.run(_sleep, (0.5,), 10.0)
        os.kill(first[1], signal.SIGKILL)
        ran_on = await running
        return [
            first,
            (ran_on, 0),
            await pool.run(_parent, (), 5.0),
            await pool.run(_parent, (), 5.0),
        ]

    [first, running, third, replacement], restarts = asyncio.run(_with_pool(1, body, max_tasks=3))
    assert first[0] == running[0] == third[0]
    assert restarts == ["recycled"]
    assert replacement[0] != first[0]
    assert replacement[1] != first[1]


@pytest.mark.parametrize("loop", ["asyncio", "uvloop"])
def test_a_write_to_a_dead_workers_pipe_loses_nothing(loop: str) -> None:
    """A task sent to a worker that died unnoticed raises nothing and runs on its replacement."""

    async def body(pool: WorkerPool) -> tuple[int, int]:
        dead = await pool.run(_sleep, (0,), 5.0)
        pidfd = os.pidfd_open(dead)
        os.kill(dead, signal.SIGKILL)
        select.select([pidfd], [], [], 10)  # blocks the loop: the pool cannot notice first
        os.close(pidfd)
        return dead, await pool.run(_sleep, (0,), 5.0)

    new_loop = (
        asyncio.new_event_loop if loop == "asyncio" else pytest.importorskip(loop).new_event_loop
    )
    running = new_loop()
    try:
        (dead, ran_on), restarts = running.run_until_complete(_with_pool(1, body))
    finally:
        running.close()
    assert ran_on != dead
    assert restarts == ["died"]


class _FlakyContext:
    """The forkserver context, but one process start fails, as when the forkserver dies then."""

    def __init__(self, failing_start: int) -> None:
        self._context = multiprocessing.get_context("forkserver")
        self._starts = 0
        self._failing_start = failing_start

    def get_start_method(self) -> str:
        return self._context.get_start_method()

    def Pipe(self, duplex: bool) -> tuple[Connection, Connection]:
        return self._context.Pipe(duplex=duplex)

    def Process(self, **kwargs: Any) -> Any:
        process = self._context.Process(**kwargs)
        self._starts += 1
        if self._starts == self._failing_start:
            process.start = _refuse  # type: ignore[method-assign]  # this one instance only
        return process


def _refuse() -> None:
    raise ConnectionRefusedError("forkserver gone")


def test_a_failed_respawn_is_retried() -> None:
    """When starting a replacement worker fails, the pool tries again instead of shrinking."""

    async def body() -> list[int]:
        pool = WorkerPool(1, _noop, max_tasks=1, context=_FlakyContext(failing_start=2))
        await pool.start()
        try:
            return [await asyncio.wait_for(pool.run(_sleep, (0,), 5.0), 60) for _ in range(2)]
        finally:
            await pool.close()

    first, second = asyncio.run(body())
    assert first != second


def test_close_fails_the_task_of_a_worker_killed_while_closing(tmp_path: Path) -> None:
    """A worker killed during `close`, with no other left, has its task fail instead of hang."""

    async def body(path: Path) -> None:
        pool = WorkerPool(1, _noop)
        await pool.start()
        running = pool.run(_announce_and_sleep, (path, 10), 30.0)
        pid = await _announced(path)
        closing = asyncio.create_task(pool.close(timeout_s=30))
        await asyncio.sleep(0.1)
        os.kill(pid, signal.SIGKILL)
        with pytest.raises(PoolClosed, match="worker pool closed"):
            await asyncio.wait_for(running, 20)
        await asyncio.wait_for(closing, 20)

    asyncio.run(body(tmp_path / "pid"))


def test_close_reruns_the_task_of_a_killed_worker_on_another(tmp_path: Path) -> None:
    """A worker killed during `close` has its task rerun on a worker still up, which answers."""

    async def body(path: Path) -> tuple[int, int]:
        pool = WorkerPool(2, _noop)
        await pool.start()
        running = pool.run(_announce_and_sleep, (path, 1), 30.0)
        killed = await _announced(path)
        closing = asyncio.create_task(pool.close(timeout_s=30))
        await asyncio.sleep(0.1)
        os.kill(killed, signal.SIGKILL)
        ran_on = await asyncio.wait_for(running, 20)
        await asyncio.wait_for(closing, 20)
        return killed, ran_on

    killed, ran_on = asyncio.run(body(tmp_path / "pid"))
    assert ran_on != killed


async def _announced(path: Path) -> int:
    """The pid a task wrote to `path`, once it has."""
    for _ in range(1000):
        if path.exists() and path.read_text():
            return int(path.read_text())
        await asyncio.sleep(0.02)
    raise TimeoutError("the task never started")
