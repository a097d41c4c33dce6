"""Worker processes driven straight from the event loop.

Why not pebble: killing an idle pebble worker (OOM killer, `kill -9`) marks
the whole pool broken ("All workers expired"), and idle workers wait for
tasks while holding a shared pipe lock, so a dead one can stall the rest.
Here every worker has pipes of its own, which the event loop drives as
asyncio transports (no threads, no locks, never a blocking write), and a
dead worker is simply replaced:

* each task has a deadline, counted from when its worker starts it; a
  worker past it is SIGKILLed and replaced;
* a worker that dies mid-task has the task retried once on another;
* workers are recycled after `max_tasks` tasks;
* each worker holds up to `PIPELINE` tasks, so it starts the next one the
  moment it finishes one instead of idling through a round trip through the
  event loop; tasks beyond that wait in a FIFO queue;
* tasks with the same affinity prefer one worker, whose caches hold them;
* `size` tasks compute at once, one per CPU; up to `spare` workers more take
  tasks while others' wait (a program that sleeps, blocks, waits on input):
  while tasks queue, the busy workers' process trees are read from `/proc`
  every `LOOK_S` (`cpu_use`), and one using under `WAITING_SHARE` of a CPU
  and none of it runnable frees its CPU slot until it computes again. Spares
  start on demand, one per waiting worker that no spare covers yet, and one
  idle for `SPARE_IDLE_S` is retired (looked for every `SPARE_CHECK_S`);
  they are never replaced, and no affinity prefers one;
* no child's death can take the pool down: a dead forkserver costs no worker
  (each is watched through a pidfd of its own once the forkserver is gone,
  and the next spawn relaunches the forkserver), a spawn that fails is
  retried, and `close` resolves every task it was given.

This is the server's side; each worker's side, the loop it runs, is
`grading.worker.serve`. Messages use `multiprocessing.connection`'s framing (a
4-byte big-endian length, then a pickle), so workers use plain blocking
`Connection`s.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import functools
import itertools
import logging
import multiprocessing
import os
import pickle
import select
import signal
import struct
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from multiprocessing.process import BaseProcess
from typing import Any

from reward_service.errors import DeadlineExceeded, PoolClosed, TaskFailed, WorkerDied
from reward_service.grading.cpu_use import tree_use
from reward_service.grading.worker import READY, serve

log = logging.getLogger("reward_service.grading.pool")

_RESPAWN_BACKOFF_S = 1.0
_HEADER = struct.Struct("!i")
_LOOKAHEAD = 64
"""How far into the queue a free worker looks for a task that prefers it."""
PIPELINE = 2
"""Tasks sent ahead to one worker: the one it runs and the one it runs next."""
LOOK_S = 0.05
"""How often the busy workers' CPU use is read while tasks wait for a CPU slot."""
WAITING_SHARE = 0.2
"""A worker using less of a CPU than this since the last look, none of its processes
runnable, is waiting (sleeping, blocked) and holds no CPU slot."""
COMPUTING_SHARE = 0.5
"""A waiting worker using this much of a CPU again is computing again."""
SPARE_IDLE_S = 60.0
"""A spare worker idle this long is retired."""
SPARE_CHECK_S = 30.0
"""How often idle spare workers are looked for."""


class _Results(asyncio.Protocol):
    """Reassembles framed messages from a worker's result pipe."""

    def __init__(self, on_message: Callable[[Any], None]) -> None:
        self._buffer = bytearray()
        self._on_message = on_message

    def data_received(self, data: bytes) -> None:
        self._buffer += data
        while len(self._buffer) >= _HEADER.size:
            (size,) = _HEADER.unpack_from(self._buffer)
            end = _HEADER.size + size
            if len(self._buffer) < end:
                return
            message = pickle.loads(self._buffer[_HEADER.size : end])
            del self._buffer[:end]
            self._on_message(message)


@dataclass
class _Task:
    fn: Callable[..., Any]
    args: tuple[Any, ...]
    deadline_s: float | None
    future: asyncio.Future[Any]
    affinity: int | None = None
    context: Mapping[str, Any] = field(default_factory=dict)
    """What to log about it should its worker die (request id, excerpt)."""
    attempts: int = 0
    """Times a worker started it."""


@dataclass
class _Worker:
    process: BaseProcess
    slot: int
    pidfd: int | None = None
    orphaned: bool = False
    """Its forkserver died, so only `pidfd` tells when it exits, and not with what code."""
    writer: asyncio.WriteTransport | None = None
    reader: asyncio.ReadTransport | None = None
    ready: bool = False
    tasks: collections.deque[_Task] = field(default_factory=collections.deque)
    """Sent to the worker, in order; the first is running."""
    timer: asyncio.TimerHandle | None = None
    started_s: float = 0.0
    """When its running task started (monotonic)."""
    waiting: bool = False
    """Its running task was seen using no CPU (`WAITING_SHARE`): it holds no CPU slot."""
    looked: tuple[float, float] | None = None
    """(monotonic time, its tree's CPU seconds) at the last look at its running task."""
    idle_s: float = 0.0
    """When it last had no task (monotonic)."""
    done: int = 0
    exit_cause: str | None = None
    """Why we stopped it (`deadline`, `recycled`, `closing`); None: it died on its own."""

    @property
    def available(self) -> bool:
        """Whether it may be sent a task now (an idle one also needs a free CPU slot); never
        one waiting, whose next task would wait behind it."""
        ready = self.ready and self.exit_cause is None and len(self.tasks) < PIPELINE
        return ready and not (self.tasks and self.waiting)

    @property
    def computing(self) -> bool:
        """Whether it holds a CPU slot: a task is running and not seen waiting."""
        return bool(self.tasks) and not self.waiting

    def exitcode(self) -> int | None:
        """How it ended, as its forkserver reported (None: not reported, or no forkserver)."""
        if self.orphaned:
            return None
        self.process.join(0)
        return self.process.exitcode

    def send(self, message: Any) -> None:
        self.write(_frame(message))

    def write(self, frame: bytes) -> None:
        if self.writer is not None and not self.writer.is_closing():
            self.writer.write(frame)


def _pidfd(pid: int) -> int | None:
    """A descriptor of process `pid` itself (never of a later process given its number).

    None where the platform has no pidfds (Linux before 5.3, other systems).
    """
    try:
        return os.pidfd_open(pid)
    except (AttributeError, OSError):
        return None


def _has_exited(pidfd: int) -> bool:
    poller = select.poll()
    poller.register(pidfd, select.POLLIN)
    return bool(poller.poll(0))


def _frame(message: Any) -> bytes:
    data = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
    return _HEADER.pack(len(data)) + data


class WorkerPool:
    """`size` worker processes, and spares on demand, running tasks under deadlines."""

    def __init__(
        self,
        size: int,
        initializer: Callable[[], None],
        *,
        spare: int = 0,
        max_tasks: int = 0,
        context: Any = None,
        on_restart: Callable[[str], None] | None = None,
        on_spare: Callable[[str], None] | None = None,
    ) -> None:
        """`size` tasks compute at once (the CPUs), in `size` workers and up to `spare` more,
        started while others' tasks wait. `initializer` runs once in each new worker,
        before it takes a task (pickled to it: a module-level function, or a
        `functools.partial` of one). `on_restart(cause)`: a worker was replaced;
        `on_spare(event)`: a spare worker `started` (is ready) or `retired` (ended)."""
        self.size = size
        self.spare = spare
        self._initializer = initializer
        self._max_tasks = max_tasks
        # Any: multiprocessing's contexts share no typed base that has `Process`.
        self._context: Any = context or multiprocessing.get_context("forkserver")
        self._forks = self._context.get_start_method() == "fork"
        self._on_restart = on_restart or (lambda cause: None)
        self._on_spare = on_spare or (lambda event: None)
        self._workers: list[_Worker] = []
        self._queue: collections.deque[_Task] = collections.deque()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._closing = False
        self._spawning: dict[asyncio.Task[None], int] = {}
        """Spawns under way, and the slot of each (those from `size` on: spares)."""
        self._free_slots: list[int] = []
        self._look: asyncio.TimerHandle | None = None
        self._idle_check: asyncio.TimerHandle | None = None
        self._spares_paused_s = 0.0
        """No spare starts before this (monotonic): one failed to start."""

    @property
    def queued(self) -> int:
        """Tasks waiting for a worker."""
        return len(self._queue)

    @property
    def busy(self) -> int:
        """Workers running a task."""
        return sum(bool(w.tasks) for w in self._workers)

    @property
    def computing(self) -> int:
        """Workers holding a CPU slot: running a task not seen waiting."""
        return sum(w.computing for w in self._workers)

    @property
    def alive(self) -> int:
        """Workers that are up and initialised, spares included."""
        return sum(w.ready for w in self._workers)

    @property
    def spares_alive(self) -> int:
        """Spare workers that are up and initialised."""
        return sum(w.ready and self._is_spare(w) for w in self._workers)

    def _is_spare(self, worker: _Worker) -> bool:
        return self._is_spare_slot(worker.slot)

    def _is_spare_slot(self, slot: int) -> bool:
        return slot >= self.size

    async def start(self, timeout_s: float = 120.0) -> None:
        """Spawn the `size` workers and wait until every one has initialised.

        Refuses to start while SIGPIPE has its default action: writing to the
        pipe of a child that died (a worker, the resource tracker's probe)
        would then kill this process instead of raising.
        """
        if signal.getsignal(signal.SIGPIPE) == signal.SIG_DFL:
            raise RuntimeError("SIGPIPE must be ignored: a child's death would kill this process")
        self._loop = asyncio.get_running_loop()
        for slot in range(self.size):
            await self._spawn(slot)
        deadline = time.monotonic() + timeout_s
        while self.alive < self.size:
            if time.monotonic() > deadline:
                raise RuntimeError(f"only {self.alive} of {self.size} workers started")
            await asyncio.sleep(0.02)

    async def _spawn(self, slot: int) -> None:
        assert self._loop is not None
        task_reader, task_writer = self._context.Pipe(duplex=False)
        result_reader, result_writer = self._context.Pipe(duplex=False)
        # A forked worker holds copies of the server's ends of its pipes; it closes them
        # first, so that it reads EOF should the server die (a forkserver's hold none).
        inherited = (task_writer, result_reader) if self._forks else ()
        process = self._context.Process(
            target=serve,
            args=(task_reader, result_writer, self._initializer, inherited),
            name="reward-service-worker",
            daemon=True,
        )
        try:
            process.start()
        except BaseException:
            task_writer.close()
            result_reader.close()
            raise
        finally:
            task_reader.close()
            result_writer.close()
        worker = _Worker(process, slot, pidfd=_pidfd(process.pid))
        self._workers.append(worker)
        worker.writer, _ = await self._loop.connect_write_pipe(asyncio.BaseProtocol, task_writer)
        worker.reader, _ = await self._loop.connect_read_pipe(
            lambda: _Results(lambda message: self._on_message(worker, message)), result_reader
        )
        self._loop.add_reader(process.sentinel, self._on_sentinel, worker)

    def run(
        self,
        fn: Callable[..., Any],
        args: tuple[Any, ...],
        deadline_s: float | None,
        *,
        affinity: int | None = None,
        context: Mapping[str, Any] | None = None,
    ) -> asyncio.Future[Any]:
        """Queue `fn(*args)` for a worker; the future raises the task's failure, a `PoolError`.

        Tasks of equal `affinity` prefer one worker (its caches stay warm), as
        long as that leaves no worker idle and skips at most `_LOOKAHEAD` tasks.
        `context` is logged if the task's worker dies under it.
        """
        if self._loop is None or self._closing:
            raise PoolClosed("worker pool is not running")
        slot = affinity % self.size if affinity is not None else None
        task = _Task(
            fn,
            args,
            deadline_s=deadline_s,
            future=self._loop.create_future(),
            affinity=slot,
            context=context or {},
        )
        task.future.add_done_callback(functools.partial(self._on_settled, task))
        self._queue.append(task)
        self._dispatch()
        return task.future

    def _dispatch(self) -> None:
        """Fill idle workers first (preferring the queue's affine tasks, then the workers that
        are not spares, so those go idle) while a CPU slot is free, then pipelines; with spare
        workers, look for waiting ones while tasks queue."""
        while self._queue:
            free = self.computing < self.size
            candidates = [w for w in self._workers if w.available and (w.tasks or free)]
            if not candidates:
                break
            worker = min(
                candidates,
                key=lambda w: (len(w.tasks), not self._has_affine(w), self._is_spare(w)),
            )
            task = self._next_for(worker)
            if not task.future.done():
                self._send(worker, task)
        waiting = self._queue and self.spare and not self._closing
        if waiting and self._look is None and self._loop is not None:
            self._look = self._loop.call_later(LOOK_S, self._look_at_cpus)

    def _look_at_cpus(self) -> None:
        """Read the CPU use of each worker whose task has run `LOOK_S` or more: one that used
        under `WAITING_SHARE` of a CPU since the last look, nothing of it runnable, frees its
        slot; a waiting one that used `COMPUTING_SHARE` again takes one back. Then start the
        spares the waiting ones call for."""
        self._look = None
        now = time.monotonic()
        for worker in self._workers:
            if not worker.tasks or now - worker.started_s < LOOK_S or worker.process.pid is None:
                continue
            use = tree_use(worker.process.pid)
            if use is None:
                continue  # unknown: it keeps its slot
            if worker.looked is not None and now > worker.looked[0]:
                share = (use.cpu_s - worker.looked[1]) / (now - worker.looked[0])
                if worker.waiting:
                    worker.waiting = share < COMPUTING_SHARE
                else:
                    worker.waiting = share < WAITING_SHARE and not use.running
            worker.looked = (now, use.cpu_s)
        self._start_spares()
        self._dispatch()

    def _start_spares(self) -> None:
        """Each waiting worker gets a spare that is not waiting (idle, computing or starting),
        `spare` of them at most."""
        if time.monotonic() < self._spares_paused_s:
            return
        waiting = sum(bool(w.tasks) and w.waiting for w in self._workers)
        spares = {w.slot: w for w in self._workers if self._is_spare(w)}
        starting = {s for s in self._spawning.values() if self._is_spare_slot(s)} - set(spares)
        covering = len(starting) + sum(
            w.exit_cause is None and not (w.tasks and w.waiting) for w in spares.values()
        )
        taken = starting | set(spares)
        free = [s for s in range(self.size, self.size + self.spare) if s not in taken]
        for slot in free[: max(0, waiting - covering)]:
            self._start(slot)

    def _check_idle_spares(self) -> None:
        self._idle_check = None
        self.retire_idle_spares()
        slots = [*(w.slot for w in self._workers), *self._spawning.values()]
        if any(map(self._is_spare_slot, slots)) and not self._closing and self._loop is not None:
            self._idle_check = self._loop.call_later(SPARE_CHECK_S, self._check_idle_spares)

    def retire_idle_spares(self, now: float | None = None) -> int:
        """Retire the spare workers idle for `SPARE_IDLE_S` or more at `now` (monotonic; default:
        now); how many."""
        now = time.monotonic() if now is None else now
        retiring = [
            w
            for w in self._workers
            if self._is_spare(w)
            and w.ready
            and w.exit_cause is None
            and not w.tasks
            and now - w.idle_s >= SPARE_IDLE_S
        ]
        for worker in retiring:
            self._retire(worker, "idle")
        return len(retiring)

    def _has_affine(self, worker: _Worker) -> bool:
        window = itertools.islice(self._queue, _LOOKAHEAD)
        return any(task.affinity == worker.slot for task in window)

    def _next_for(self, worker: _Worker) -> _Task:
        for index, task in enumerate(itertools.islice(self._queue, _LOOKAHEAD)):
            if task.affinity == worker.slot:
                del self._queue[index]
                return task
        return self._queue.popleft()

    def _send(self, worker: _Worker, task: _Task) -> None:
        try:
            frame = _frame((task.fn, task.args))
        except Exception as exc:  # e.g. RecursionError on absurdly nested JSON
            task.future.set_exception(TaskFailed(f"task cannot be sent to a worker: {exc!r}"))
            return
        worker.tasks.append(task)
        worker.write(frame)
        if len(worker.tasks) == 1:
            self._started(worker)

    def _started(self, worker: _Worker) -> None:
        """The worker's first task is running now: count it and start its deadline."""
        assert self._loop is not None
        task = worker.tasks[0]
        task.attempts += 1
        worker.started_s = time.monotonic()
        worker.waiting, worker.looked = False, None
        if task.deadline_s is not None:
            worker.timer = self._loop.call_later(task.deadline_s, self._on_deadline, worker)

    def _on_message(self, worker: _Worker, message: Any) -> None:
        if message == READY:
            worker.ready = True
            worker.idle_s = time.monotonic()
            if self._is_spare(worker):
                self._on_spare("started")
            self._dispatch()
            return
        if not worker.tasks:
            return
        task = worker.tasks.popleft()
        if worker.timer is not None:
            worker.timer.cancel()
            worker.timer = None
        worker.done += 1
        if worker.tasks:
            self._started(worker)
        else:
            worker.idle_s = time.monotonic()
        if not task.future.done():
            succeeded, value = message
            if succeeded:
                task.future.set_result(value)
            else:
                task.future.set_exception(TaskFailed(value))
        if self._max_tasks and worker.done >= self._max_tasks and not self._closing:
            self._retire(worker, "recycled")
        self._dispatch()

    def _on_deadline(self, worker: _Worker) -> None:
        worker.timer = None
        if worker.tasks:
            task = worker.tasks.popleft()
            if not task.future.done():
                task.future.set_exception(DeadlineExceeded(f"past {task.deadline_s} s"))
        worker.exit_cause = "deadline"
        self._requeue_waiting(worker)
        self._kill(worker)

    def _on_settled(self, task: _Task, future: asyncio.Future[Any]) -> None:
        """A task's future is done. Cancelled (its client hung up) while a worker runs it: the
        worker is killed and replaced, so no one's abandoned work holds it. Queued, the task
        is dropped when its turn comes; sent behind another, it runs (its result unread)."""
        if not future.cancelled():
            return
        for worker in self._workers:
            if worker.tasks and worker.tasks[0] is task:
                worker.tasks.popleft()
                if worker.timer is not None:
                    worker.timer.cancel()
                    worker.timer = None
                worker.exit_cause = "abandoned"
                self._requeue_waiting(worker)
                self._kill(worker)
                return

    def _requeue_waiting(self, worker: _Worker) -> None:
        """Tasks sent to a worker that will never start them go back to the queue's front."""
        while worker.tasks:
            self._queue.appendleft(worker.tasks.pop())

    def _kill(self, worker: _Worker) -> None:
        if worker.pidfd is not None:
            with contextlib.suppress(ProcessLookupError):
                signal.pidfd_send_signal(worker.pidfd, signal.SIGKILL)
        elif worker.process.pid is not None and worker.process.is_alive():
            os.kill(worker.process.pid, signal.SIGKILL)

    def _retire(self, worker: _Worker, cause: str) -> None:
        """Ask a worker to exit after the tasks it holds; `_on_exit` replaces it."""
        worker.exit_cause = cause
        worker.send(None)

    def _on_sentinel(self, worker: _Worker) -> None:
        """The forkserver reported the worker's exit, or died itself (the worker may live on);
        a forked worker's own sentinel: it is exiting, and its pidfd says when it is done."""
        assert self._loop is not None
        if worker.pidfd is None or _has_exited(worker.pidfd):
            self._on_exit(worker)
            return
        self._loop.remove_reader(worker.process.sentinel)
        self._loop.add_reader(worker.pidfd, self._on_exit, worker)
        if not self._forks:
            worker.orphaned = True
            log.warning(
                "forkserver died; its grading worker keeps serving",
                extra={"pid": worker.process.pid},
            )

    def _on_exit(self, worker: _Worker) -> None:
        assert self._loop is not None
        if worker not in self._workers:
            return
        self._loop.remove_reader(worker.process.sentinel)
        if worker.pidfd is not None:
            self._loop.remove_reader(worker.pidfd)
            os.close(worker.pidfd)
            worker.pidfd = None
        for transport in (worker.writer, worker.reader):
            if transport is not None:
                transport.close()
        exitcode = worker.exitcode()
        self._workers.remove(worker)
        if worker.timer is not None:
            worker.timer.cancel()
        running = worker.tasks.popleft() if worker.tasks else None
        if running is not None:
            self._requeue_waiting(worker)
            if running.attempts < 2:
                self._queue.appendleft(running)
            elif not running.future.done():
                running.future.set_exception(WorkerDied(f"exit code {exitcode}"))
        if self._closing:
            self._dispatch()
            self._fail_stranded()
            return
        cause = worker.exit_cause or "died"
        spare = self._is_spare(worker)
        if cause == "died":
            log.warning(
                "spare grading worker died" if spare else "grading worker died; replacing it",
                extra={
                    "pid": worker.process.pid,
                    "exitcode": exitcode,
                    "retried": running is not None and running.attempts < 2,
                    **(running.context if running is not None else {}),
                },
            )
        if spare:
            if worker.ready:
                self._on_spare("retired")
        else:
            self._on_restart(cause)
            self._free_slots.append(worker.slot)
            delay = _RESPAWN_BACKOFF_S if cause == "died" and not worker.ready else 0.0
            self._loop.call_later(delay, self._respawn)
        self._dispatch()

    def _respawn(self) -> None:
        if not self._closing:
            self._start(self._free_slots.pop(0))

    def _start(self, slot: int) -> None:
        assert self._loop is not None
        spawning = self._loop.create_task(self._spawn(slot))
        self._spawning[spawning] = slot
        spawning.add_done_callback(functools.partial(self._spawned, slot))
        if self._is_spare_slot(slot) and self._idle_check is None:
            self._idle_check = self._loop.call_later(SPARE_CHECK_S, self._check_idle_spares)

    def _spawned(self, slot: int, spawning: asyncio.Task[None]) -> None:
        """A spawn ended; a worker's that failed (say, the forkserver died mid-spawn) is retried,
        a spare's is not: the next look at the CPUs past `_RESPAWN_BACKOFF_S` starts one if one
        is still called for."""
        assert self._loop is not None
        del self._spawning[spawning]
        if not spawning.cancelled() and spawning.exception() is not None:
            spare = self._is_spare_slot(slot)
            log.error(
                "could not start a grading worker" + ("" if spare else "; retrying"),
                exc_info=spawning.exception(),
            )
            if spare:
                self._spares_paused_s = time.monotonic() + _RESPAWN_BACKOFF_S
            else:
                self._free_slots.append(slot)
                self._loop.call_later(_RESPAWN_BACKOFF_S, self._respawn)
        self._dispatch()

    def _fail_queued(self) -> None:
        for task in self._queue:
            if not task.future.done():
                task.future.set_exception(PoolClosed("worker pool closed"))
        self._queue.clear()

    def _fail_stranded(self) -> None:
        """While closing: fail the queued tasks once no worker is left to start them."""
        if not any(w.ready and w.exit_cause is None for w in self._workers):
            self._fail_queued()

    async def close(self, timeout_s: float = 5.0) -> None:
        """Let workers finish the tasks they hold, then stop them.

        When it returns, every task's future has resolved: with its result,
        or with `PoolClosed` for a task that no worker will run (the
        queued ones at once; those of a worker that dies while closing run on
        another if one is left).
        """
        self._closing = True
        for timer in (self._look, self._idle_check):
            if timer is not None:
                timer.cancel()
        self._look = self._idle_check = None
        self._fail_queued()
        if self._spawning:
            await asyncio.wait(set(self._spawning))
        deadline = time.monotonic() + timeout_s
        while self.busy and time.monotonic() < deadline:
            await asyncio.sleep(0.02)
        for worker in list(self._workers):
            self._retire(worker, "closing")
        self._fail_stranded()
        while self._workers and time.monotonic() < deadline + 1:
            await asyncio.sleep(0.02)
        for worker in list(self._workers):
            self._kill(worker)
            self._on_exit(worker)
