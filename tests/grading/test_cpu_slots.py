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

import pytest

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
    """One CPU slot, two spare workers: with two 30 s sleepers sent first, a task that
    computes for 0.1 s still ends while they sleep (in a spare started for it)."""

    async def body(pool: WorkerPool) -> bool:
        sleepers = [pool.run(_sleep, (30.0,), 60.0) for _ in range(2)]
        await pool.run(_spin, (0.1,), 60.0)
        sleeping = not any(sleeper.done() for sleeper in sleepers)
        _stop(sleepers)
        return sleeping

    assert asyncio.run(_with_pool(1, 2, body))


def _stop(tasks: list[asyncio.Future[Any]]) -> None:
    """Cancel tasks: a worker running one is killed (and replaced, unless a spare)."""
    for task in tasks:
        task.cancel()


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
    """Wait (30 s at most) for `condition()`: a spare's start and a worker's exit are
    reported through the loop, the start seconds later on a loaded machine."""
    deadline = time.monotonic() + 30
    while not condition() and time.monotonic() < deadline:
        await asyncio.sleep(0.02)


def test_a_spare_starts_only_when_a_worker_waits_and_retires_after_a_minute_idle() -> None:
    """One CPU slot, up to two spares: none at start; a sleeper with tasks queued behind it
    (one sent ahead to its worker, one in the queue) starts one spare (not two), which runs
    the queued task; idle 59 s the spare stays, 60 s it is retired."""

    async def body(pool: WorkerPool) -> tuple[int, bool, int, int, int]:
        at_start = pool.alive
        worker, _ = await pool.run(_spin, (0.0,), 60.0)
        sleeper = pool.run(_sleep, (30.0,), 60.0)
        behind = pool.run(_spin, (0.01,), 60.0)
        spare, _ = await pool.run(_spin, (0.01,), 60.0)
        await asyncio.sleep(0.3)  # looks enough for a second spare, were one called for
        spares = pool.spares_alive
        _stop([sleeper, behind])
        kept = pool.retire_idle_spares(now=time.monotonic() + 59)
        retired = pool.retire_idle_spares(now=time.monotonic() + 60)
        await _until(lambda: pool.spares_alive == 0)
        return at_start, spare != worker, spares, kept, retired

    events: list[str] = []
    assert asyncio.run(_with_pool(1, 2, body, events)) == (1, True, 1, 0, 1)
    assert events == ["started", "retired"]


def test_spares_are_capped_and_a_busy_one_is_not_retired() -> None:
    """One CPU slot, one spare at most: sleepers enough to make every worker wait start one
    spare, never a second, and a spare holding a task is not retired however long ago it
    was last idle."""

    async def body(pool: WorkerPool) -> tuple[int, int]:
        sleepers = [pool.run(_sleep, (30.0,), 60.0) for _ in range(4)]
        await _until(lambda: pool.spares_alive == 1 and pool.queued == 0)
        await asyncio.sleep(0.3)  # looks enough for a second spare, were one allowed
        retired = pool.retire_idle_spares(now=time.monotonic() + 3600)
        spares = pool.spares_alive
        _stop(sleepers)
        return retired, spares

    events: list[str] = []
    assert asyncio.run(_with_pool(1, 1, body, events)) == (0, 1)
    assert events == ["started"]


def test_a_spare_that_cannot_start_is_tried_again_only_after_a_pause(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A spare whose start fails is tried again a second later, not at every look (20 a
    second)."""
    attempts: list[int] = []

    async def failing(slot: int) -> None:
        attempts.append(slot)
        raise OSError("no fork")

    async def body(pool: WorkerPool) -> int:
        monkeypatch.setattr(pool, "_spawn", failing)
        tasks = [pool.run(_sleep, (30.0,), 60.0), *(pool.run(_spin, (0.01,), 60.0) for _ in "ab")]
        await _until(lambda: attempts)
        await asyncio.sleep(0.5)
        _stop(tasks)
        return len(attempts)

    assert asyncio.run(_with_pool(1, 1, body)) == 1


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
