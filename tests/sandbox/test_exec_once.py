"""The exec_once layer, live: a forked child of the test makes its one exec, then no other.

The child confines itself as a run does (a `Supervisor`, the exec filter with a
listener) and execs the interpreter, which tries its way to a second exec and
reports each errno on a pipe. What it would exec, if the layer failed open, is
`/bin/true`.
"""

from __future__ import annotations

import ctypes
import errno
import json
import os
import struct
import sys
from pathlib import Path

import pytest

from reward_service.sandbox import exec_once, linux
from reward_service.sandbox.confine import EXEC_FD
from reward_service.sandbox.exec_once import Supervisor
from reward_service.sandbox.seccomp import SyscallFilter
from tests.sandbox.test_layers import in_child

pytestmark = pytest.mark.skipif(linux.ARCH is None, reason="no syscall table for this arch")
REPO = Path(__file__).resolve().parents[2]
SECOND = """
import ctypes, json, os, sys
sys.path.insert(0, sys.argv[2])
from reward_service.sandbox import linux
from reward_service.sandbox.confine import EXEC_FD
from reward_service.sandbox.seccomp import SyscallFilter

libc = ctypes.CDLL(None, use_errno=True)

def errno_of(call):
    try:
        call()
    except OSError as e:
        return e.errno
    return 0

def by_path(path):
    argv = (ctypes.c_char_p * 2)(b"true", None)
    env = (ctypes.c_char_p * 1)(None)
    number = linux.syscall_number("execveat")
    if libc.syscall(number, EXEC_FD, path, argv, env, linux.AT_EMPTY_PATH) < 0:
        raise OSError(ctypes.get_errno(), "execveat")

os.dup2(os.open("/bin/true", os.O_PATH), EXEC_FD)  # the exec fd was close-on-exec
found = {
    "its fd": errno_of(lambda: linux.execveat(EXEC_FD, ["true"], {})),
    "its fd and a path": errno_of(lambda: by_path(b"/bin/true")),
    "its own interpreter": errno_of(lambda: by_path(sys.executable.encode())),
    "execve": errno_of(lambda: os.execv("/bin/true", ["true"])),
    "a listener of its own": errno_of(
        lambda: SyscallFilter(exec_fd=EXEC_FD, exec_once=True).install_listening(os.getpid())
    ),
}
os.write(int(sys.argv[1]), json.dumps(found).encode())
"""


def _second_execs() -> dict[str, int]:
    """What the exec'd interpreter reports of its tries at a second exec."""
    syscall_filter = SyscallFilter(exec_fd=EXEC_FD, exec_once=True)
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(r)
            os.set_inheritable(w, True)
            os.dup2(os.open(sys.executable, os.O_PATH | os.O_CLOEXEC), EXEC_FD)
            supervisor = Supervisor()
            supervisor.serve(syscall_filter.install_listening(os.getpid()))
            argv = [sys.executable, "-I", "-c", SECOND, str(w), str(REPO)]
            linux.execveat(EXEC_FD, argv, {})
        finally:
            os._exit(1)
    os.close(w)
    with os.fdopen(r, "rb") as reader:
        data = reader.read()
    _, status = os.waitpid(pid, 0)
    assert data, f"the exec'd interpreter reported nothing (wait status {status:#x})"
    found: dict[str, int] = json.loads(data)
    return found


def test_the_first_exec_runs_and_no_later_one_does() -> None:
    """The run's own exec goes through; after it, the same call, its fd with any path, the
    interpreter itself, `execve` and a listener of the program's own all fail."""
    assert _second_execs() == {
        "its fd": errno.ENOSYS,
        "its fd and a path": errno.ENOSYS,
        "its own interpreter": errno.ENOSYS,
        "execve": errno.EPERM,
        "a listener of its own": errno.EPERM,
    }


def _kernel_at_least(major: int, minor: int) -> bool:
    release = os.uname().release.split("-", 1)[0].split(".")
    return (int(release[0]), int(release[1])) >= (major, minor)


@pytest.mark.skipif(not _kernel_at_least(5, 5), reason="SECCOMP_USER_NOTIF_FLAG_CONTINUE: 5.5+")
def test_the_probe_finds_exec_once_on_this_kernel() -> None:
    """On Linux 5.5+ with no listener above, the zygote's probe turns the layer on."""
    assert exec_once.works()


def test_the_probe_turns_exec_once_off_under_a_filter_with_a_listener() -> None:
    """Where a filter above already has a listener (a container runtime's), the run's
    filter could have none: the probe says so, and the layer is reported off."""
    allow_all = struct.pack("=HBBI", 0x06, 0, 0, 0x7FFF0000)
    program = ctypes.create_string_buffer(allow_all, len(allow_all))
    fprog = struct.pack("=HxxxxxxQ", 1, ctypes.addressof(program))

    def listened() -> None:
        linux.prctl(linux.PR_SET_NO_NEW_PRIVS, 1)
        linux.syscall("seccomp", 1, 1 << 3, fprog)  # SET_MODE_FILTER, NEW_LISTENER

    assert in_child(listened, exec_once.works) is False
