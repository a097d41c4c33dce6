"""Watching one run from the zygote: its pipes, its deadline, its output cap, its scratch dir.

Stdlib only (the zygote imports it). What a run writes is read straight into
private buffers (`protocol.private_buffer`: a later fork does not inherit
them) and leaves the zygote only as a frame's payload, so no copy of it
stays in the heap that later runs are forked with.
"""

from __future__ import annotations

import contextlib
import os
import select
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from reward_service.sandbox import protocol

SCRATCH_PREFIX = "reward-sandbox-"
"""How a zygote's scratch root on the host is named (where no mount namespace holds it)."""
STDERR_WINDOW = 64 * 1024
"""Of a long stderr, at least this much of its end is kept (its last kilobyte is answered)."""
_CHUNK = 65536
_DRAIN_S = 1.0


class Sink:
    """Bytes read from a pipe into a private buffer: the first `capacity`, or with
    `windowed` the last `capacity // 2` at least."""

    def __init__(self, capacity: int, windowed: bool = False) -> None:
        self.capacity, self.windowed, self.size = capacity, windowed, 0
        self.buffer = protocol.private_buffer(capacity)
        self.view = memoryview(self.buffer)

    def read_from(self, fd: int) -> bool:
        """Read what `fd` has; False at end of file. A full plain sink reads no more."""
        if self.size == self.capacity:
            if not self.windowed:
                return True
            keep = self.capacity // 2
            self.buffer.move(0, self.size - keep, keep)
            self.size = keep
        n = os.readv(fd, [self.view[self.size : self.capacity]])
        self.size += n
        return n > 0

    def head(self, n: int) -> memoryview:
        return self.view[: min(n, self.size)]

    def tail(self, n: int) -> memoryview:
        return self.view[max(0, self.size - n) : self.size]

    def last_line_starts(self, prefix: bytes) -> bool:
        """Whether the last non-empty line starts with `prefix`, read in place."""
        end = self.size
        while end > 0 and self.buffer[end - 1] == ord("\n"):
            end -= 1
        start = self.buffer.rfind(b"\n", 0, end) + 1
        return self.buffer.find(prefix, start, end) == start

    def close(self) -> None:
        self.view.release()
        self.buffer.close()


@dataclass
class Seen:
    """What the zygote saw of a run."""

    stdout: Sink
    stderr: Sink
    report: Sink
    output_exceeded: bool = False
    timed_out: bool = False
    scratch_exceeded: bool = False
    """Its scratch directory outgrew the quota (where no tmpfs bounds it)."""
    ended: float = field(default_factory=time.monotonic)

    def close(self) -> None:
        for sink in (self.stdout, self.stderr, self.report):
            sink.close()


class ScratchWatch:
    """Where no tmpfs bounds a run's scratch dir: its file system's free space, polled while
    it runs; a drop past the quota is confirmed by counting the dir itself."""

    INTERVAL_S = 0.05

    def __init__(self, workdir: str, scratch_mb: int) -> None:
        self.workdir = workdir
        self.quota = scratch_mb * 1024 * 1024
        self.free = _free_bytes(workdir)
        self.next = time.monotonic() + self.INTERVAL_S

    def exceeded(self, final: bool = False) -> bool:
        now = time.monotonic()
        if not final and now < self.next:
            return False
        self.next = now + self.INTERVAL_S
        if not final and self.free - _free_bytes(self.workdir) <= self.quota:
            return False
        return disk_usage(self.workdir, self.quota) > self.quota


def supervise(
    pid: int,
    stdin: memoryview,
    fds: tuple[int, int, int, int],
    deadline: float,
    output_bytes: int,
    watch: ScratchWatch | None,
    kill: Callable[[], None],
) -> Seen:
    """Feed stdin, collect the outputs until the run ends or breaks a limit; `kill` ends it.

    Takes ownership of `fds` (stdin's write end, stdout's, stderr's and the
    report's read ends) and closes them.
    """
    stdin_w, stdout_r, stderr_r, report_r = fds
    seen = Seen(Sink(output_bytes + 1), Sink(2 * STDERR_WINDOW, True), Sink(4096, True))
    sinks = {stdout_r: seen.stdout, stderr_r: seen.stderr, report_r: seen.report}
    pidfd = os.pidfd_open(pid)
    poller = select.poll()
    for fd in (*sinks, pidfd):
        poller.register(fd, select.POLLIN)
    pending = stdin
    if pending:
        os.set_blocking(stdin_w, False)
        poller.register(stdin_w, select.POLLOUT)
    else:
        os.close(stdin_w)
    exited = False
    while not exited or sinks:
        if exited:  # the run is over: its group and strays are killed, drain what is left
            timeout = _DRAIN_S
        else:
            timeout = deadline - time.monotonic()
            if timeout <= 0:
                seen.timed_out = True
                break
            if watch is not None:
                timeout = min(timeout, ScratchWatch.INTERVAL_S)
        events = poller.poll(timeout * 1000)
        if not events and exited:
            break
        for fd, _ in events:
            if fd == pidfd:
                exited, seen.ended = True, time.monotonic()
                poller.unregister(pidfd)
                kill()
            elif fd == stdin_w:
                pending = _feed(stdin_w, pending, poller)
            elif not sinks[fd].read_from(fd):
                poller.unregister(fd)
                os.close(fd)
                del sinks[fd]
        if seen.stdout.size > output_bytes:
            seen.output_exceeded = True
            break
        if watch is not None and not exited and watch.exceeded():
            seen.scratch_exceeded = True
            break
    if not exited:
        seen.ended = time.monotonic()
        kill()
    for fd in (*sinks, pidfd, *([stdin_w] if pending else [])):
        os.close(fd)
    return seen


def _feed(fd: int, pending: memoryview, poller: select.poll) -> memoryview:
    try:
        pending = pending[os.write(fd, pending[:_CHUNK]) :]
    except BlockingIOError:
        return pending
    except BrokenPipeError:
        pending = pending[len(pending) :]
    if not pending:
        poller.unregister(fd)
        os.close(fd)
    return pending


def _free_bytes(path: str) -> int:
    stat = os.statvfs(path)
    return stat.f_bavail * stat.f_frsize


def disk_usage(path: str, limit: int) -> int:
    """Bytes allocated beneath `path`, counted until they pass `limit` (no symlink followed).

    A directory the run made unreadable counts as over the limit."""
    total, directories = 0, [path]
    while directories and total <= limit:
        try:
            with os.scandir(directories.pop()) as entries:
                for entry in entries:
                    total += entry.stat(follow_symlinks=False).st_blocks * 512
                    if entry.is_dir(follow_symlinks=False):
                        directories.append(entry.path)
        except OSError:
            return limit + 1
    return total


def remove_tree(path: str) -> None:
    """Remove a scratch dir, also when its run took the permissions off its directories."""
    shutil.rmtree(path, ignore_errors=True)
    if not os.path.lexists(path):
        return
    for parent, directories, _ in os.walk(path):
        for name in directories:
            directory = os.path.join(parent, name)
            if not os.path.islink(directory):
                with contextlib.suppress(OSError):
                    os.chmod(directory, 0o700)
    shutil.rmtree(path, ignore_errors=True)
