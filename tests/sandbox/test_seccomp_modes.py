"""The seccomp filter's variants for compiled languages, decided by a cBPF interpreter.

A run that execs its program (`exec_fd`) may call `execveat` on that fd with
exactly `AT_EMPTY_PATH` and nothing else that execs or forks (under
`exec_once` that call goes to the listener, which answers it once); a build
(`processes`) may fork and exec but no more than that; a runtime's `allowed`
call is let through alone. Every other rule stays as a Python run has it.
"""

from __future__ import annotations

import errno

import pytest

from reward_service.sandbox import linux
from reward_service.sandbox.confine import EXEC_FD, Confinement
from reward_service.sandbox.seccomp import USER_NOTIF, SyscallFilter
from tests.sandbox.test_seccomp import _AUDIT, _SECCOMP_DATA, run_bpf

pytestmark = pytest.mark.skipif(linux.ARCH is None, reason="no syscall table for this arch")

ALLOW, EPERM, EACCES = 0x7FFF0000, 0x00050000 | errno.EPERM, 0x00050000 | errno.EACCES
AT_EMPTY_PATH, AT_SYMLINK_NOFOLLOW, SIGCHLD = 0x1000, 0x100, 17
PID = 4242


def verdict(syscall_filter: SyscallFilter, name: str, *args: int) -> int:
    """What the filter answers `name(*args)` from process `PID`, on this architecture."""
    number = linux.syscall_number(name)
    assert number is not None and linux.ARCH is not None, name
    padded = (*args, *(0,) * (6 - len(args)))
    data = _SECCOMP_DATA.pack(number, _AUDIT[linux.ARCH], 0x7F0000001000, *padded)
    return run_bpf(syscall_filter.program(PID), data)[0]


THREAD = linux.CLONE_THREAD | 0x100 | 0x200 | 0x400 | 0x800  # with VM, FS, FILES, SIGHAND


@pytest.mark.parametrize("read_only_files", [False, True])
def test_a_run_that_execs_its_program_may_exec_only_the_exec_fd(read_only_files: bool) -> None:
    """`execveat(EXEC_FD, "", ..., AT_EMPTY_PATH)` only: not by path, not another fd, not other
    flags; no process of its own; threads, sockets and writes as for Python."""
    runs = SyscallFilter(read_only_files, exec_fd=EXEC_FD)
    assert verdict(runs, "execveat", EXEC_FD, 0x1000, 0x2000, 0x3000, AT_EMPTY_PATH) == ALLOW
    assert verdict(runs, "execveat", 3, 0x1000, 0x2000, 0x3000, AT_EMPTY_PATH) == EPERM
    assert verdict(runs, "execveat", EXEC_FD, 0x1000, 0x2000, 0x3000, 0) == EPERM
    flags = AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW
    assert verdict(runs, "execveat", EXEC_FD, 0x1000, 0x2000, 0x3000, flags) == EPERM
    assert verdict(runs, "execve", 0x1000, 0x2000, 0x3000) == EPERM
    assert verdict(runs, "seccomp", 1, 0, 0x1000) == EPERM
    if linux.ARCH == "x86_64":
        assert verdict(runs, "fork") == EPERM
        assert verdict(runs, "vfork") == EPERM
    assert verdict(runs, "clone", SIGCHLD) == EPERM
    assert verdict(runs, "clone", THREAD) == ALLOW
    assert verdict(runs, "socket", 2, 1, 0) == EPERM
    assert verdict(runs, "openat", 0xFFFFFF9C, 0x1000, 1) == (EACCES if read_only_files else ALLOW)


@pytest.mark.parametrize("read_only_files", [False, True])
def test_under_exec_once_the_one_exec_goes_to_the_listener(read_only_files: bool) -> None:
    """The exec the filter lets through waits for the listener's answer instead (the kernel
    answers ENOSYS once there is none); every other exec, `seccomp` (a listener of the
    program's own) and every other rule stay as without."""
    once = SyscallFilter(read_only_files, exec_fd=EXEC_FD, exec_once=True)
    allowing = SyscallFilter(read_only_files, exec_fd=EXEC_FD)
    assert verdict(once, "execveat", EXEC_FD, 0x1000, 0x2000, 0x3000, AT_EMPTY_PATH) == USER_NOTIF
    assert verdict(once, "execveat", 3, 0x1000, 0x2000, 0x3000, AT_EMPTY_PATH) == EPERM
    assert verdict(once, "execveat", EXEC_FD, 0x1000, 0x2000, 0x3000, 0) == EPERM
    assert verdict(once, "execve", 0x1000, 0x2000, 0x3000) == EPERM
    assert verdict(once, "seccomp", 1, 8, 0x1000) == EPERM
    for name, args in (("clone", (SIGCHLD,)), ("clone", (THREAD,)), ("socket", (2, 1, 0))):
        assert verdict(once, name, *args) == verdict(allowing, name, *args), name
    assert verdict(once, "openat", 0xFFFFFF9C, 0x1000, 1) == verdict(
        allowing, "openat", 0xFFFFFF9C, 0x1000, 1
    )


@pytest.mark.parametrize("exec_once", [False, True])
def test_a_confinement_gives_exec_runs_exec_once_only_where_it_works(exec_once: bool) -> None:
    """`Confinement.exec_once` (the zygote's probe) picks the exec variant's verdict; without
    it the exec is allowed outright, as before; a Python run's filter has no exec at all."""
    confinement = Confinement(1, None, None, SyscallFilter(), exec_once=exec_once)
    runs = confinement.filter_for("exec")
    assert runs is not None and runs.exec_once is exec_once
    expected = USER_NOTIF if exec_once else ALLOW
    assert verdict(runs, "execveat", EXEC_FD, 0x1000, 0x2000, 0x3000, AT_EMPTY_PATH) == expected
    python = confinement.filter_for("program")
    assert python is not None and not python.exec_once
    assert verdict(python, "execveat", EXEC_FD, 0x1000, 0x2000, 0x3000, AT_EMPTY_PATH) == EPERM
    build = confinement.filter_for("build")
    assert build is not None and not build.exec_once


def test_a_build_may_fork_and_exec_and_write_but_no_more() -> None:
    """A compiler's run: processes, execs and file writes (even where landlock is off), but
    no namespace, socket, signal to another process or session of its own."""
    build = SyscallFilter(read_only_files=True, processes=True)
    assert verdict(build, "clone", SIGCHLD) == ALLOW
    assert verdict(build, "clone", 0x4000 | 0x100 | SIGCHLD) == ALLOW  # vfork's flags
    assert verdict(build, "clone", linux.CLONE_NEWUSER | SIGCHLD) == EPERM
    assert verdict(build, "clone", linux.CLONE_NEWNET | THREAD) == EPERM
    assert verdict(build, "execve", 0x1000, 0x2000, 0x3000) == ALLOW
    assert verdict(build, "execveat", 3, 0x1000, 0x2000, 0x3000, 0) == ALLOW
    assert verdict(build, "openat", 0xFFFFFF9C, 0x1000, 0o1 | 0o100) == ALLOW
    assert verdict(build, "unlink", 0x1000) == ALLOW
    for name, args in (
        ("socket", (2, 1, 0)),
        ("kill", (PID + 1, 9)),
        ("kill", (0xFFFFFFFF, 9)),
        ("setsid", ()),
        ("unshare", (linux.CLONE_NEWNET,)),
        ("ptrace", (16, PID + 1)),
    ):
        assert verdict(build, name, *args) == EPERM, name
    assert verdict(build, "kill", PID, 9) == ALLOW


def test_a_runtimes_allowed_call_is_the_only_one_let_through() -> None:
    """The JVM's `socketpair` is allowed; `socket` and every other refusal stand."""
    jvm = SyscallFilter(exec_fd=EXEC_FD, allowed=("socketpair",))
    assert verdict(jvm, "socketpair", 1, 1, 0, 0x1000) == ALLOW
    assert verdict(jvm, "socket", 1, 1, 0) == EPERM
    assert verdict(jvm, "connect", 3, 0x1000, 16) == EPERM
    assert verdict(SyscallFilter(exec_fd=EXEC_FD), "socketpair", 1, 1, 0, 0x1000) == EPERM
