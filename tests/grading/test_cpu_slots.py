"""The pool schedules by CPU: a task that waits frees its CPU slot for a spare worker, one
that computes keeps it; `cpu_use` reads a process tree's CPU from `/proc`."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from typing import Any

from reward_service.grading.cpu_use import tree_use
from reward_service.grading.pool import WorkerPool


def _noop() -> None:
    """Worker initializer."""


def _sleep(seconds: float) -> tuple[int, float]:
    time.sleep(seconds)
    return os.getpid(), time.monotonic()


def _spin(seconds: float) -> tuple[int, float]:
    """Use `seconds` of this process's CPU."""
    end = time.process_time() + seconds
    while time.process_time() < end:
        pass
    return os.getpid(), time.monotonic()


async def _with_pool(size: int, spare: int, body: Any) -> Any:
    pool = WorkerPool(size, _noop, spare=spare)
    await pool.start()
    try:
        return await body(pool)
    finally:
        await pool.close()


def test_sleepers_do_not_keep_a_cpu_bound_task_from_starting() -> None:
    """One CPU slot, two spare workers: with two 1.5 s sleepers sent first, a task that
    computes for 0.1 s still ends before the first sleeper does."""

    async def body(pool: WorkerPool) -> tuple[list[float], float]:
        sleepers = [pool.run(_sleep, (1.5,), 10.0) for _ in range(2)]
        _, computed = await pool.run(_spin, (0.1,), 10.0)
        slept = [end for _, end in await asyncio.gather(*sleepers)]
        return slept, computed

    slept, computed = asyncio.run(_with_pool(1, 2, body))
    assert computed < min(slept)


def test_tasks_that_compute_share_no_slot_with_a_spare_worker() -> None:
    """One CPU slot, two spare workers: three tasks that compute run one after the other
    in the one worker holding the slot, none in a spare."""

    async def body(pool: WorkerPool) -> list[tuple[int, float]]:
        return list(await asyncio.gather(*(pool.run(_spin, (0.1,), 10.0) for _ in range(3))))

    done = asyncio.run(_with_pool(1, 2, body))
    assert len({pid for pid, _ in done}) == 1


def test_without_spare_workers_a_sleeper_holds_its_worker() -> None:
    """`spare=0` is the pool as it was: a task behind a sleeper waits for it."""

    async def body(pool: WorkerPool) -> tuple[float, float]:
        sleeper = pool.run(_sleep, (0.5,), 10.0)
        _, computed = await pool.run(_spin, (0.01,), 10.0)
        return (await sleeper)[1], computed

    slept, computed = asyncio.run(_with_pool(1, 0, body))
    assert computed >= slept


def test_a_trees_cpu_counts_its_reaped_children() -> None:
    """A child's CPU time stays in its parent's tree after it is reaped (`cutime`)."""
    before = tree_use(os.getpid())
    assert before is not None
    spin = "import time\nend = time.process_time() + 0.2\nwhile time.process_time() < end: pass"
    subprocess.run([sys.executable, "-c", spin], check=True)
    after = tree_use(os.getpid())
    assert after is not None
    assert after.cpu_s - before.cpu_s >= 0.2


def test_a_process_that_is_gone_has_no_tree() -> None:
    """A pid with no process answers None: the pool then keeps the worker's slot."""
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    assert tree_use(child.pid) is None
