"""The worker pool: deadlines, deaths, recycling, pipelining and affinity."""

from __future__ import annotations

import asyncio
import os
import time
from collections import Counter
from typing import Any

import pytest

from reward_service.pool import DeadlineExceeded, WorkerDied, WorkerPool


def _noop() -> None:
    """Worker initializer."""


def _sleep(seconds: float) -> int:
    time.sleep(seconds)
    return os.getpid()


def _die() -> None:
    os._exit(7)


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
    """Two 0.6 s tasks on one worker both finish under a 1 s deadline each."""

    async def body(pool: WorkerPool) -> list[int]:
        return await asyncio.gather(*(pool.run(_sleep, (0.6,), 1.0) for _ in range(2)))

    pids, restarts = asyncio.run(_with_pool(1, body))
    assert len(set(pids)) == 1
    assert restarts == []


def test_stalled_task_is_killed_and_the_next_one_still_runs() -> None:
    """A task past its deadline fails alone; the task queued behind it runs on a new worker."""

    async def body(pool: WorkerPool) -> list[Any]:
        return await asyncio.gather(
            pool.run(_stall, (), 1.0), pool.run(_sleep, (0.01,), 5.0), return_exceptions=True
        )

    (stalled, after), restarts = asyncio.run(_with_pool(1, body))
    assert isinstance(stalled, DeadlineExceeded)
    assert isinstance(after, int)
    assert restarts == ["deadline"]


def test_task_of_a_dying_worker_is_retried_once() -> None:
    """A task that kills its worker every time fails with WorkerDied after two tries."""

    async def body(pool: WorkerPool) -> list[Any]:
        return await asyncio.gather(
            pool.run(_die, (), 5.0), pool.run(_sleep, (0.01,), 5.0), return_exceptions=True
        )

    (died, after), restarts = asyncio.run(_with_pool(1, body))
    assert isinstance(died, WorkerDied)
    assert isinstance(after, int)
    assert restarts == ["died", "died"]


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

    async def body(pool: WorkerPool) -> list[int]:
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
        with pytest.raises(RuntimeError):
            pool.run(_sleep, (0,), 1.0)

    asyncio.run(body())
