"""The pool schedules by CPU: a task that waits frees its CPU slot for a spare worker, one
that computes keeps it; spares start on demand and retire when idle; `cpu_use` reads a
process tree's CPU from `/proc`."""

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


async def _with_pool(size: int, spare: int, body: Any, events: list[str] | None = None) -> Any:
    on_spare = events.append if events is not None else None
    pool = WorkerPool(size, _noop, spare=spare, on_spare=on_spare)
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

    events: list[str] = []
    done = asyncio.run(_with_pool(1, 2, body, events))
    assert len({pid for pid, _ in done}) == 1
    assert events == []


async def _until(condition: Any) -> None:
    """Wait (5 s at most) for `condition()`: a worker's exit is reported through the loop."""
    deadline = time.monotonic() + 5
    while not condition() and time.monotonic() < deadline:
        await asyncio.sleep(0.02)


def test_a_spare_starts_only_when_a_worker_waits_and_retires_after_a_minute_idle() -> None:
    """One CPU slot, up to two spares: none at start; a sleeper with tasks queued behind it
    (one sent ahead to its worker, one in the queue) starts one spare (not two), which runs
    the queued task; idle 59 s the spare stays, 60 s it is retired."""

    async def body(pool: WorkerPool) -> tuple[int, int, int, int, int]:
        at_start = pool.alive
        sleeper = pool.run(_sleep, (1.0,), 10.0)
        behind = pool.run(_spin, (0.01,), 10.0)
        pid, _ = await pool.run(_spin, (0.01,), 10.0)
        slept, _ = await sleeper
        await behind
        spares = pool.spares_alive
        kept = pool.retire_idle_spares(now=time.monotonic() + 59)
        retired = pool.retire_idle_spares(now=time.monotonic() + 60)
        await _until(lambda: pool.alive == 1)
        return at_start, int(pid != slept), spares, kept, retired

    events: list[str] = []
    at_start, in_a_spare, spares, kept, retired = asyncio.run(_with_pool(1, 2, body, events))
    assert (at_start, in_a_spare, spares, kept, retired) == (1, 1, 1, 0, 1)
    assert events == ["started", "retired"]


def test_spares_are_capped_and_a_busy_one_is_not_retired() -> None:
    """One CPU slot, one spare at most: sleepers enough to make every worker wait start one
    spare, never a second, and a spare holding a task is not retired however long ago it
    was last idle."""

    async def body(pool: WorkerPool) -> tuple[int, int]:
        sleepers = [pool.run(_sleep, (1.0,), 10.0) for _ in range(6)]
        await _until(lambda: pool.spares_alive == 1 and pool.busy == 2)
        await asyncio.sleep(0.3)  # looks enough for a second spare, were one allowed
        retired = pool.retire_idle_spares(now=time.monotonic() + 3600)
        await asyncio.gather(*sleepers)
        return retired, pool.spares_alive

    events: list[str] = []
    assert asyncio.run(_with_pool(1, 1, body, events)) == (0, 1)
    assert events == ["started"]


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
