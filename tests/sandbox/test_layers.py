"""The seccomp filter and the landlock ruleset, each installed in a forked child of the test.

Every probe is benign: it asks for something the layer should refuse and
reports the errno; if a layer failed open, the probe does nothing harmful.
"""

from __future__ import annotations

import ctypes
import errno
import fcntl
import json
import os
import socket
import sys
import tempfile
import termios
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from reward_service.sandbox import landlock, linux
from reward_service.sandbox.landlock import Ruleset
from reward_service.sandbox.seccomp import SyscallFilter


def in_child(confine: Callable[[], None], probe: Callable[[], Any]) -> Any:
    """`probe()`'s JSON result, computed in a forked child after `confine()`."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(r)
            confine()
            os.write(w, json.dumps(probe()).encode())
        finally:
            os._exit(0)
    os.close(w)
    with os.fdopen(r, "rb") as reader:
        data = reader.read()
    os.waitpid(pid, 0)
    return json.loads(data)


def errno_of(call: Callable[[], object]) -> int:
    try:
        call()
    except OSError as e:
        return e.errno or -1
    return 0


needs_seccomp = pytest.mark.skipif(linux.ARCH is None, reason="no syscall table for this arch")


@needs_seccomp
def test_the_filter_denies_what_a_solution_never_needs() -> None:
    """Sockets, signals to others, fork, exec and setsid answer EPERM under the filter."""
    syscall_filter = SyscallFilter()
    results = in_child(
        lambda: syscall_filter.install(os.getpid()),
        lambda: {
            "socket": errno_of(socket.socket),
            "socketpair": errno_of(socket.socketpair),
            "kill parent": errno_of(lambda: os.kill(os.getppid(), 0)),
            "kill -1": errno_of(lambda: os.kill(-1, 0)),
            "kill group": errno_of(lambda: os.kill(0, 0)),
            "fork": errno_of(os.fork),
            "exec": errno_of(lambda: os.execv("/bin/true", ["true"])),
            "setsid": errno_of(os.setsid),
            "unshare": errno_of(lambda: linux.unshare(linux.CLONE_NEWUSER)),
        },
    )
    assert results == {name: errno.EPERM for name in results}


def _shm_segment() -> None:
    """Create a System V shared memory segment (and remove it again if that worked)."""
    libc = ctypes.CDLL(None, use_errno=True)
    segment = libc.shmget(0, 4096, 0o600 | 0o1000)  # IPC_PRIVATE, IPC_CREAT
    if segment < 0:
        raise OSError(ctypes.get_errno(), "shmget")
    libc.shmctl(segment, 0, None)  # IPC_RMID


def _type_into(fd: int) -> None:
    fcntl.ioctl(fd, termios.TIOCSTI, b"x")


@needs_seccomp
def test_the_filter_refuses_objects_that_outlive_the_run_and_terminal_typing() -> None:
    """System V segments answer EPERM, and TIOCSTI answers EPERM rather than ENOTTY."""
    syscall_filter = SyscallFilter()
    r, w = os.pipe()
    try:
        results = in_child(
            lambda: syscall_filter.install(os.getpid()),
            lambda: {"shmget": errno_of(_shm_segment), "TIOCSTI": errno_of(lambda: _type_into(r))},
        )
    finally:
        os.close(r)
        os.close(w)
    assert results == {"shmget": errno.EPERM, "TIOCSTI": errno.EPERM}


@needs_seccomp
def test_the_filter_allows_signals_to_itself_threads_and_rlimits() -> None:
    """A run may signal itself, start threads and lower its own rlimits."""
    import resource

    def probe() -> dict[str, int]:
        thread = threading.Thread(target=lambda: None)
        return {
            "kill self": errno_of(lambda: os.kill(os.getpid(), 0)),
            "thread": errno_of(lambda: (thread.start(), thread.join())),
            "setrlimit": errno_of(lambda: resource.setrlimit(resource.RLIMIT_CORE, (0, 0))),
        }

    syscall_filter = SyscallFilter()
    results = in_child(lambda: syscall_filter.install(os.getpid()), probe)
    assert results == {"kill self": 0, "thread": 0, "setrlimit": 0}


@needs_seccomp
def test_without_landlock_the_filter_refuses_every_file_write() -> None:
    """read_only_files: reading works; opening to write, creating, removing answer EACCES (a
    mode change EPERM, as in every mode)."""
    with tempfile.TemporaryDirectory() as scratch:
        existing = Path(scratch, "existing")
        existing.write_text("kept")
        syscall_filter = SyscallFilter(read_only_files=True)
        results = in_child(
            lambda: syscall_filter.install(os.getpid()),
            lambda: {
                "read": errno_of(existing.read_text),
                "write": errno_of(lambda: Path(scratch, "new").write_text("x")),
                "append": errno_of(lambda: open(existing, "a").close()),
                "mkdir": errno_of(lambda: os.mkdir(Path(scratch, "d"))),
                "unlink": errno_of(existing.unlink),
                "rename": errno_of(lambda: existing.rename(Path(scratch, "moved"))),
                "chmod": errno_of(lambda: existing.chmod(0o777)),
            },
        )
        assert sorted(os.listdir(scratch)) == ["existing"]
        assert existing.read_text() == "kept"
    expected = {k: errno.EACCES for k in results if k != "read"}
    assert results == {**expected, "read": 0, "chmod": errno.EPERM}


needs_landlock = pytest.mark.skipif(landlock.abi() < 1, reason="landlock unavailable")


@needs_landlock
def test_the_ruleset_confines_writes_to_the_scratch_dir_and_reads_to_its_list() -> None:
    """Under the ruleset, scratch is writable, listed paths readable, all else refused."""
    python = sorted({sys.base_prefix, sys.prefix, *(p for p in sys.path if os.path.isdir(p))})
    with tempfile.TemporaryDirectory() as scratch, tempfile.TemporaryDirectory() as elsewhere:
        ruleset = Ruleset(["/usr", *python], [scratch])

        def confine() -> None:
            linux.prctl(linux.PR_SET_NO_NEW_PRIVS, 1)
            ruleset.restrict_self(ruleset.fd)

        results = in_child(
            confine,
            lambda: {
                "write scratch": errno_of(lambda: Path(scratch, "f").write_text("x")),
                "write elsewhere": errno_of(lambda: Path(elsewhere, "f").write_text("x")),
                "read /usr": errno_of(lambda: os.listdir("/usr")),
                "read /proc": errno_of(lambda: Path("/proc/1/status").read_bytes()),
                "read /etc": errno_of(lambda: os.listdir("/etc")),
            },
        )
        assert not Path(elsewhere, "f").exists()
    assert results == {
        "write scratch": 0,
        "write elsewhere": errno.EACCES,
        "read /usr": 0,
        "read /proc": errno.EACCES,
        "read /etc": errno.EACCES,
    }


@needs_landlock
def test_the_ruleset_refuses_tcp_where_the_abi_has_it() -> None:
    """With ABI 4 or later, connecting to a loopback TCP port is refused by landlock."""
    if landlock.abi() < 4:
        pytest.skip("landlock ABI < 4: no network rules")
    ruleset = Ruleset(["/usr"], [])
    assert "tcp" in ruleset.pieces
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        port = listener.getsockname()[1]

        def confine() -> None:
            linux.prctl(linux.PR_SET_NO_NEW_PRIVS, 1)
            ruleset.restrict_self(ruleset.fd)

        def probe() -> int:
            with socket.socket() as client:
                return errno_of(lambda: client.connect(("127.0.0.1", port)))

        assert in_child(confine, probe) == errno.EACCES
