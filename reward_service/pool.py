"""Worker processes driven straight from the event loop.

Why not pebble: killing an idle pebble worker (OOM killer, `kill -9`) marks
the whole pool broken ("All workers expired"), and idle workers wait for
tasks while holding a shared pipe lock, so a dead one can stall the rest.
Here every worker has its own pipe, the event loop reads results with
`add_reader` (no threads, no locks), and a dead worker is simply replaced:

* each task has a deadline; a worker past it is SIGKILLed and replaced;
* a worker that dies mid-task has the task retried once on another;
* workers are recycled after `max_tasks` tasks;
* tasks wait in a FIFO queue while every worker is busy.
"""

from __future__ import annotations

import asyncio
import collections
import logging
import multiprocessing
import os
import signal
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess
from typing import Any

log = logging.getLogger("reward_service.pool")

_READY = "ready"
_RESPAWN_BACKOFF_S = 1.0


class DeadlineExceeded(Exception):
    """The task ran past its deadline; its worker was killed."""


class WorkerDied(Exception):
    """The worker running the task died, on every attempt."""


def _worker_main(
    conn: Connection, initializer: Callable[..., None], initargs: Sequence[Any]
) -> None:
    """The loop each worker runs: receive a task, run it, send its result."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    initializer(*initargs)
    conn.send(_READY)
    while True:
        try:
            task = conn.recv()
        except EOFError:
            return
        if task is None:
            return
        fn, args = task
        try:
            conn.send((True, fn(*args)))
        except BaseException as exc:  # report, never die, for any task error
            conn.send((False, f"{type(exc).__name__}: {exc}"))


@dataclass
class _Task:
    fn: Callable[..., Any]
    args: tuple[Any, ...]
    deadline_s: float | None
    future: asyncio.Future[Any]
    attempts: int = 0


@dataclass
class _Worker:
    process: BaseProcess
    conn: Connection
    ready: bool = False
    task: _Task | None = None
    timer: asyncio.TimerHandle | None = None
    done: int = 0
    exit_cause: str | None = None
    """Why we stopped it (`deadline`, `recycled`); None means it died on its own."""


class WorkerPool:
    """A fixed number of worker processes running tasks under deadlines."""

    def __init__(
        self,
        size: int,
        initializer: Callable[..., None],
        initargs: Sequence[Any] = (),
        max_tasks: int = 0,
        context: Any = None,
        on_restart: Callable[[str], None] | None = None,
    ) -> None:
        self.size = size
        self._initializer = initializer
        self._initargs = tuple(initargs)
        self._max_tasks = max_tasks
        # Any: multiprocessing's contexts share no typed base that has `Process`.
        self._context: Any = context or multiprocessing.get_context("forkserver")
        self._on_restart = on_restart or (lambda cause: None)
        self._workers: list[_Worker] = []
        self._queue: collections.deque[_Task] = collections.deque()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._closing = False
        self._first_ready: asyncio.Event | None = None

    @property
    def queued(self) -> int:
        return len(self._queue)

    @property
    def busy(self) -> int:
        return sum(w.task is not None for w in self._workers)

    @property
    def alive(self) -> int:
        """Workers that are up and initialised."""
        return sum(w.ready and w.process.is_alive() for w in self._workers)

    def pids(self) -> list[int]:
        return [w.process.pid for w in self._workers if w.process.pid is not None]

    async def start(self, timeout_s: float = 120.0) -> None:
        """Spawn the workers and wait until every one has initialised."""
        self._loop = asyncio.get_running_loop()
        for _ in range(self.size):
            self._spawn()
        deadline = time.monotonic() + timeout_s
        while self.alive < self.size:
            if time.monotonic() > deadline:
                raise RuntimeError(f"only {self.alive} of {self.size} workers started")
            await asyncio.sleep(0.02)

    def _spawn(self) -> None:
        assert self._loop is not None
        parent, child = self._context.Pipe(duplex=True)
        process = self._context.Process(
            target=_worker_main,
            args=(child, self._initializer, self._initargs),
            name="reward-service-worker",
            daemon=True,
        )
        process.start()
        child.close()
        worker = _Worker(process, parent)
        self._workers.append(worker)
        self._loop.add_reader(parent.fileno(), self._on_message, worker)
        self._loop.add_reader(process.sentinel, self._on_exit, worker)

    def run(
        self, fn: Callable[..., Any], args: tuple[Any, ...], deadline_s: float | None
    ) -> asyncio.Future[Any]:
        """Queue `fn(*args)` for a worker; the future raises the task's failure."""
        if self._loop is None or self._closing:
            raise RuntimeError("worker pool is not running")
        task = _Task(fn, args, deadline_s, self._loop.create_future())
        self._queue.append(task)
        self._dispatch()
        return task.future

    def _dispatch(self) -> None:
        for worker in self._workers:
            if not self._queue:
                return
            if worker.ready and worker.task is None:
                self._assign(worker)

    def _assign(self, worker: _Worker) -> None:
        assert self._loop is not None
        while self._queue:
            task = self._queue.popleft()
            if task.future.done():
                continue
            task.attempts += 1
            try:
                worker.conn.send((task.fn, task.args))
            except (OSError, ValueError):
                self._queue.appendleft(task)
                return
            worker.task = task
            if task.deadline_s is not None:
                worker.timer = self._loop.call_later(task.deadline_s, self._on_deadline, worker)
            return

    def _on_message(self, worker: _Worker) -> None:
        try:
            message = worker.conn.recv()
        except (EOFError, OSError):
            self._forget_reader(worker)
            return
        if message == _READY:
            worker.ready = True
            self._dispatch()
            return
        task, worker.task = worker.task, None
        if worker.timer is not None:
            worker.timer.cancel()
            worker.timer = None
        worker.done += 1
        if task is not None and not task.future.done():
            succeeded, value = message
            if succeeded:
                task.future.set_result(value)
            else:
                task.future.set_exception(RuntimeError(value))
        if self._max_tasks and worker.done >= self._max_tasks and not self._closing:
            self._retire(worker, "recycled")
        else:
            self._dispatch()

    def _on_deadline(self, worker: _Worker) -> None:
        task, worker.task = worker.task, None
        worker.timer = None
        if task is not None and not task.future.done():
            task.future.set_exception(DeadlineExceeded(f"past {task.deadline_s} s"))
        worker.exit_cause = "deadline"
        self._kill(worker)

    def _kill(self, worker: _Worker) -> None:
        if worker.process.pid is not None and worker.process.is_alive():
            os.kill(worker.process.pid, signal.SIGKILL)

    def _retire(self, worker: _Worker, cause: str) -> None:
        """Ask a worker to exit once idle; `_on_exit` replaces it."""
        worker.ready = False
        worker.exit_cause = cause
        try:
            worker.conn.send(None)
        except (OSError, ValueError):
            self._kill(worker)

    def _forget_reader(self, worker: _Worker) -> None:
        assert self._loop is not None
        self._loop.remove_reader(worker.conn.fileno())

    def _on_exit(self, worker: _Worker) -> None:
        assert self._loop is not None
        self._loop.remove_reader(worker.process.sentinel)
        if not worker.conn.closed:
            self._loop.remove_reader(worker.conn.fileno())
            worker.conn.close()
        worker.process.join(0)
        self._workers.remove(worker)
        if worker.timer is not None:
            worker.timer.cancel()
        task = worker.task
        if task is not None and not task.future.done():
            if task.attempts < 2:
                self._queue.appendleft(task)
            else:
                task.future.set_exception(WorkerDied(f"exit code {worker.process.exitcode}"))
        if self._closing:
            return
        cause = worker.exit_cause or "died"
        self._on_restart(cause)
        if cause == "died":
            log.warning(
                "grading worker died; replacing it",
                extra={"pid": worker.process.pid, "exitcode": worker.process.exitcode},
            )
        if not worker.ready and worker.done == 0 and cause == "died":
            self._loop.call_later(_RESPAWN_BACKOFF_S, self._respawn)
        else:
            self._respawn()

    def _respawn(self) -> None:
        if not self._closing:
            self._spawn()
            self._dispatch()

    async def close(self, timeout_s: float = 5.0) -> None:
        """Let workers finish their current task, then stop them."""
        self._closing = True
        for task in self._queue:
            if not task.future.done():
                task.future.set_exception(RuntimeError("worker pool closed"))
        self._queue.clear()
        deadline = time.monotonic() + timeout_s
        while self.busy and time.monotonic() < deadline:
            await asyncio.sleep(0.02)
        for worker in list(self._workers):
            self._retire(worker, "closing")
        while self._workers and time.monotonic() < deadline + 1:
            await asyncio.sleep(0.02)
        for worker in list(self._workers):
            self._kill(worker)
            self._on_exit(worker)
