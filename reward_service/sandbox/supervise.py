"""Watching one run from the zygote: its pipes, its deadline, its output cap, its scratch
dir, its threads; and removing scratch trees.

Stdlib only (the zygote imports it). What a run writes is read straight into
private buffers (`protocol.private_buffer`: a later fork does not inherit
them) and leaves the zygote only as a frame's payload, so no copy of it
stays in the heap that later runs are forked with.
"""

from __future__ import annotations

import contextlib
import fcntl
import mmap
import os
import select
import stat
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from reward_service.sandbox import protocol
from reward_service.sandbox.confine import thread_count

SCRATCH_PREFIX = "reward-sandbox-"
"""How a zygote's scratch root on the host is named (where no mount namespace holds it):
`reward-sandbox-<pid>-<random>`, locked by its zygote while it lives."""
ENTRY_QUOTA = 10_000
"""Files and directories a run's scratch dir may hold (on a tmpfs, its inode count)."""
REMOVE_MAX_ENTRIES = 200_000
"""The most entries `remove_tree` goes through in one call."""
STALE_S = 5.0
"""A scratch root nobody holds is swept only once unmodified this long (the moment between
its zygote making it and locking it)."""
STDERR_WINDOW = 64 * 1024
"""Of a long stderr, at least this much of its end is kept (its last kilobyte is answered)."""
_CHUNK = 65536
_DRAIN_S = 1.0


class Sink:
    """Bytes read from a pipe into a private buffer: the first `capacity`, or with
    `windowed` the last `capacity // 2` at least."""

    def __init__(self, capacity: int, windowed: bool = False) -> None:
        self.capacity, self.windowed, self.size = capacity, windowed, 0
        free = _FREE.get((capacity, windowed))
        if free:
            self.buffer, self.view = free.pop()
        else:
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

    def contains(self, text: bytes) -> bool:
        """Whether `text` is in what the sink holds, searched in place."""
        return self.buffer.find(text, 0, self.size) >= 0

    def close(self) -> None:
        """Give the buffer back for a later sink of the same shape (its pages stay faulted in),
        or free it once `_FREE_MAX` wait in all. Only `size` bytes of a buffer are ever read."""
        if self.size < 0:
            return  # closed already: a buffer goes back once, or two sinks would share it
        self.size = -1
        if sum(map(len, _FREE.values())) < _FREE_MAX:
            _FREE.setdefault((self.capacity, self.windowed), []).append((self.buffer, self.view))
        else:
            self.view.release()
            self.buffer.close()


_FREE: dict[tuple[int, bool], list[tuple[mmap.mmap, memoryview]]] = {}
"""Closed sinks' buffers (MADV_DONTFORK: no run is forked with them), by capacity and kind."""
_FREE_MAX = 12
"""Four runs' sinks (three each): the most a zygote keeps for later runs."""


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
    threads_exceeded: bool = False
    """It ran more threads than its budget (where runs share the service's uid)."""
    build_exceeded: str | None = None
    """A build's processes together passed its cap: "memory" or "processes" (`BuildWatch`)."""
    ended: float = field(default_factory=time.monotonic)

    def close(self) -> None:
        for sink in (self.stdout, self.stderr, self.report):
            sink.close()


class ScratchWatch:
    """Where no tmpfs bounds a run's scratch dir: its file system's free space and free
    inodes, polled while it runs.

    A drop past the quota is confirmed by counting the dir itself (bytes
    allocated, entries). Files the run unlinked but holds open count nowhere
    but in the free space: a drop that the live scratch roots on the file
    system do not explain (counting what each holds: another zygote's run
    may be writing at the same time) is treated as over quota too once it
    passes one quota per live root (what each run may hide, or something
    else on the file system may write).
    """

    INTERVAL_S = 0.05

    def __init__(self, workdir: str, scratch_mb: int, entries: int = ENTRY_QUOTA) -> None:
        self.workdir = workdir
        self.quota = scratch_mb * 1024 * 1024
        self.entries = entries
        self.free, self.free_inodes = _free(workdir)
        self.next = time.monotonic() + self.INTERVAL_S

    def exceeded(self, final: bool = False) -> bool:
        now = time.monotonic()
        if not final and now < self.next:
            return False
        self.next = now + self.INTERVAL_S
        if final:
            return self._over(*scratch_usage(self.workdir, self.quota, self.entries))
        free, free_inodes = _free(self.workdir)
        dropped, inodes_dropped = self.free - free, self.free_inodes - free_inodes
        if dropped <= self.quota and inodes_dropped <= self.entries:
            return False
        if self._over(*scratch_usage(self.workdir, self.quota, self.entries)):
            return True
        if dropped <= self.quota:
            return False
        live = live_scratch_roots(os.path.dirname(os.path.dirname(self.workdir)))
        seen = sum(scratch_usage(root, dropped, 4 * self.entries)[0] for root in live)
        return dropped - seen > max(1, len(live)) * self.quota

    def _over(self, used: int, entries: int) -> bool:
        return used > self.quota or entries > self.entries


class ThreadWatch:
    """Where runs share the service's uid (RLIMIT_NPROC counts the whole uid): the run's
    threads, polled while it runs, against its budget."""

    INTERVAL_S = 0.01

    def __init__(self, pid: int, budget: int) -> None:
        self.pid, self.budget = pid, budget
        self.next = time.monotonic() + self.INTERVAL_S

    def exceeded(self) -> bool:
        now = time.monotonic()
        if now < self.next:
            return False
        self.next = now + self.INTERVAL_S
        try:
            return thread_count(self.pid) > self.budget
        except (OSError, ValueError, IndexError):
            return False


class BuildWatch:
    """A build's processes together (the compiler and every tool it starts, orphans
    included: they are all the zygote's descendants while a build runs), polled while it
    runs: their count against `processes`, their resident memory summed against
    `memory_bytes`. RLIMIT_AS bounds each process alone; a build that starts many (a
    Go build runs a compiler per package) would otherwise hold that much in each. Where
    the zygote has no /proc it measures nothing (each process's RLIMIT_AS still holds)."""

    INTERVAL_S = 0.01

    def __init__(self, root: int, memory_bytes: int, processes: int) -> None:
        self.root, self.memory_bytes, self.processes = root, memory_bytes, processes
        self.next = time.monotonic() + self.INTERVAL_S

    def exceeded(self) -> str | None:
        now = time.monotonic()
        if now < self.next:
            return None
        self.next = now + self.INTERVAL_S
        try:
            found = descendants(self.root)
        except OSError:
            return None
        if len(found) > self.processes:
            return "processes"
        if sum(map(_resident, found)) > self.memory_bytes:
            return "memory"
        return None


def descendants(root: int) -> list[int]:
    """Every process below `root` (each of its threads' children, then theirs); OSError when
    `root`'s own are unreadable (no /proc)."""
    os.listdir(f"/proc/{root}/task")
    found: list[int] = []
    parents = [root]
    while parents:
        pid = parents.pop()
        with contextlib.suppress(OSError):
            for task in os.listdir(f"/proc/{pid}/task"):
                with open(f"/proc/{pid}/task/{task}/children", "rb") as f:
                    children = [int(child) for child in f.read().split()]
                found += children
                parents += children
    return found


def _resident(pid: int) -> int:
    """Bytes of `pid` resident in memory, 0 once it is gone."""
    try:
        with open(f"/proc/{pid}/statm", "rb") as f:
            return int(f.read().split()[1]) * _PAGE
    except (OSError, IndexError, ValueError):
        return 0


_PAGE = os.sysconf("SC_PAGE_SIZE")


def supervise(
    pid: int,
    stdin: memoryview,
    fds: tuple[int, int, int, int],
    deadline: float,
    output_bytes: int,
    watch: ScratchWatch | None,
    threads: ThreadWatch | None,
    kill: Callable[[], None],
    pidfd: int | None = None,
    build: BuildWatch | None = None,
) -> Seen:
    """Feed stdin, collect the outputs until the run ends or breaks a limit; `kill` ends it.

    Takes ownership of `fds` (stdin's write end, stdout's, stderr's and the
    report's read ends) and `pidfd` (the run's, opened here if None) and closes them.
    """
    stdin_w, stdout_r, stderr_r, report_r = fds
    seen = Seen(Sink(output_bytes + 1), Sink(2 * STDERR_WINDOW, True), Sink(4096, True))
    sinks = {stdout_r: seen.stdout, stderr_r: seen.stderr, report_r: seen.report}
    pidfd = os.pidfd_open(pid) if pidfd is None else pidfd
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
            if threads is not None:
                timeout = min(timeout, ThreadWatch.INTERVAL_S)
            if build is not None:
                timeout = min(timeout, BuildWatch.INTERVAL_S)
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
        if threads is not None and not exited and threads.exceeded():
            seen.threads_exceeded = True
            break
        if build is not None and not exited and (over := build.exceeded()):
            seen.build_exceeded = over
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


def _free(path: str) -> tuple[int, int]:
    """Bytes and inodes free to an unprivileged writer on `path`'s file system."""
    found = os.statvfs(path)
    return found.f_bavail * found.f_frsize, found.f_favail


def scratch_usage(path: str, byte_limit: int, entry_limit: int) -> tuple[int, int]:
    """Bytes allocated and entries beneath `path`, counted until either passes its limit
    (no symlink followed, at any depth). A directory the run made unreadable counts as
    over the limits."""
    total = count = 0

    def entry(fd: int, found: os.DirEntry[str]) -> bool:
        nonlocal total, count
        count += 1
        total += found.stat(follow_symlinks=False).st_blocks * 512
        return total <= byte_limit and count <= entry_limit

    try:
        with _parent_of(path) as (parent_fd, name):
            _walk(parent_fd, name, entry, None, restore=False)
    except OSError:
        return byte_limit + 1, entry_limit + 1
    return total, count


_DIRECTORY = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_DIRECTORY_PATH = os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def remove_tree(path: str, max_entries: int = REMOVE_MAX_ENTRIES) -> bool:
    """Remove `path` and everything beneath it; True once nothing is left there.

    Iterative and relative to directory fds (`_walk`): the work is
    O(entries), and depth costs neither recursion nor descriptors. No
    symlink is followed (each is removed as itself); a directory whose run
    took away its permissions gets them back. It stops, leaving the rest,
    once it has listed `max_entries` entries (a tree no run can make: its
    scratch quota bounds its entries to `ENTRY_QUOTA`), or at anything it
    cannot remove or a parent that is no longer the one it came from: False.
    """
    seen = 0

    def entry(fd: int, found: os.DirEntry[str]) -> bool:
        nonlocal seen
        seen += 1
        if seen > max_entries:
            return False
        if not found.is_dir(follow_symlinks=False):
            os.unlink(found.name, dir_fd=fd)
        return True

    def leave(parent_fd: int, name: str) -> None:
        os.rmdir(name, dir_fd=parent_fd)

    try:
        with _parent_of(path) as (parent_fd, name):
            found = os.stat(name, dir_fd=parent_fd, follow_symlinks=False)
            if not stat.S_ISDIR(found.st_mode):
                os.unlink(name, dir_fd=parent_fd)
                return True
            return _walk(parent_fd, name, entry, leave, restore=True)
    except FileNotFoundError:
        return not os.path.lexists(path)
    except OSError:
        return False


def remove_contents(path: str) -> bool:
    """Empty directory `path` but keep it (`remove_tree` for each entry); True once empty."""
    try:
        names = os.listdir(path)
    except OSError:
        return False
    return all(remove_tree(os.path.join(path, name)) for name in names)


@contextlib.contextmanager
def _parent_of(path: str) -> Iterator[tuple[int, str]]:
    """An fd of `path`'s directory and `path`'s name in it."""
    parent, name = os.path.split(os.path.abspath(path))
    fd = os.open(parent, _DIRECTORY)
    try:
        yield fd, name
    finally:
        os.close(fd)


@dataclass
class _Level:
    """A directory being walked: its name in its parent, its identity, what is left in it."""

    name: str
    identity: tuple[int, int]
    subdirectories: list[str] | None = None
    """Its subdirectories not yet walked; None until it has been listed."""


def _walk(
    top_fd: int,
    name: str,
    entry: Callable[[int, os.DirEntry[str]], bool],
    leave: Callable[[int, str], None] | None,
    restore: bool,
) -> bool:
    """Walk directory `name` of `top_fd` depth first: `entry(fd, entry)` for each entry
    (before any subdirectory of that directory is entered; False stops the walk), then
    `leave(parent_fd, name)` once a directory's subdirectories are done. True when the
    whole tree was walked.

    One directory is open at a time (besides `top_fd` and scandir's own copy): a
    subdirectory is entered by name (never through a symlink) and left through `..`,
    checked to be the directory it came from. Each directory is listed once, its
    subdirectories kept by name, so the work is O(entries). With `restore`, a directory
    without its owner's read, write or search permission gets them back first.
    """
    fd = _open_directory(top_fd, name, restore)
    levels = [_Level(name, _identity(fd))]
    try:
        while True:
            level = levels[-1]
            if level.subdirectories is None:
                level.subdirectories = []
                with os.scandir(fd) as entries:
                    for found in entries:
                        if not entry(fd, found):
                            return False
                        if found.is_dir(follow_symlinks=False):
                            level.subdirectories.append(found.name)
            if level.subdirectories:
                child_name = level.subdirectories.pop()
                child = _open_directory(fd, child_name, restore)
                os.close(fd)
                fd = child
                levels.append(_Level(child_name, _identity(fd)))
                continue
            levels.pop()
            if not levels:
                os.close(fd)
                fd = -1
                if leave is not None:
                    leave(top_fd, name)
                return True
            up = os.open("..", _DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd = up
            if _identity(fd) != levels[-1].identity:
                return False  # moved while we were inside: never touch what lies elsewhere
            if leave is not None:
                leave(fd, level.name)
    finally:
        if fd >= 0:
            os.close(fd)


def _open_directory(dir_fd: int, name: str, restore: bool) -> int:
    """Open directory `name` of `dir_fd` without following a symlink; with `restore`, give
    its owner back read, write and search permission where its run took them away (and
    where a run's uid owns it, take it back first, which `CAP_CHOWN` allows)."""
    try:
        fd = os.open(name, _DIRECTORY, dir_fd=dir_fd)
    except PermissionError:
        if not restore:
            raise
        handle = os.open(name, _DIRECTORY_PATH, dir_fd=dir_fd)
        try:
            with contextlib.suppress(PermissionError):  # root with CAP_CHOWN, no DAC_OVERRIDE:
                os.chown(f"/proc/self/fd/{handle}", os.geteuid(), os.getegid())  # take it back
            os.chmod(f"/proc/self/fd/{handle}", 0o700)
        finally:
            os.close(handle)
        fd = os.open(name, _DIRECTORY, dir_fd=dir_fd)
    if restore:
        with contextlib.suppress(OSError):
            if os.fstat(fd).st_mode & 0o700 != 0o700:
                os.fchmod(fd, 0o700)
    return fd


def _identity(fd: int) -> tuple[int, int]:
    found = os.fstat(fd)
    return found.st_dev, found.st_ino


def scratch_parent() -> str:
    """Where a zygote's scratch root goes: `tempfile.gettempdir()` in the zygote's empty
    environment (`/tmp`, or the first of its fallbacks this uid can write), without
    importing `tempfile` (and with it `shutil`) into every fork."""
    for candidate in ("/tmp", "/var/tmp", "/usr/tmp"):
        if os.path.isdir(candidate) and os.access(candidate, os.W_OK | os.X_OK):
            return candidate
    return os.getcwd()


def make_scratch_root(directory: str, pid: int) -> tuple[str, int]:
    """A fresh scratch root in `directory`, named after its zygote's `pid`, and the fd that
    holds its lock: the root is live exactly as long as that fd is open (`sweep_scratch_roots`)."""
    while True:  # as `tempfile.mkdtemp`: a random name, made 0700, never an existing one
        root = os.path.join(directory, f"{SCRATCH_PREFIX}{pid}-{os.urandom(6).hex()}")
        try:
            os.mkdir(root, 0o700)
            break
        except FileExistsError:
            continue
    fd = os.open(root, _DIRECTORY)
    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    return root, fd


def _scratch_roots(directory: str) -> list[str]:
    """The scratch roots in `directory` named as `make_scratch_root` names them."""
    try:
        names = os.listdir(directory)
    except OSError:
        return []
    return [
        os.path.join(directory, name)
        for name in names
        if name.startswith(SCRATCH_PREFIX)
        and name[len(SCRATCH_PREFIX) :].partition("-")[0].isdigit()
    ]


def _held(root: str) -> bool | None:
    """Whether a live zygote holds `root`'s lock (None: not a directory of ours to judge)."""
    try:
        fd = os.open(root, _DIRECTORY)
    except OSError:
        return None
    try:
        if os.fstat(fd).st_uid != os.geteuid():
            return None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        return False
    finally:
        os.close(fd)  # releases a lock taken here


def live_scratch_roots(directory: str) -> list[str]:
    """The scratch roots in `directory` that a live zygote holds."""
    return [root for root in _scratch_roots(directory) if _held(root) is True]


def sweep_scratch_roots(directory: str) -> list[str]:
    """Remove the scratch roots that dead zygotes left in `directory`; those still there.

    A root counts as dead when nobody holds its lock and it has not changed
    for `STALE_S`; a live zygote's root (of this service or any other on the
    machine, in any PID namespace) is never touched, nor one of another uid
    or named otherwise. Each removal is bounded (`remove_tree`): a root too
    big for one call is left, reported, and the next sweep goes on with it.
    """
    left = []
    for root in _scratch_roots(directory):
        try:
            fd = os.open(root, _DIRECTORY)
        except OSError:
            continue
        try:
            found = os.fstat(fd)
            if found.st_uid != os.geteuid() or time.time() - found.st_mtime < STALE_S:
                continue
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # held while removing
            except BlockingIOError:
                continue
            if not remove_tree(root):
                left.append(root)
        finally:
            os.close(fd)
    return left
