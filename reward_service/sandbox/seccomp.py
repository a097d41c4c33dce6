"""The seccomp layer: a classic-BPF syscall filter written by hand, installed per run.

Stdlib only (the zygote imports it). The filter allows by default and denies
what a solution never needs: sockets, signals to any process but the run's
own, tracing, new processes (threads stay allowed: `clone` with
CLONE_THREAD and no namespace flag), exec, sessions and process groups,
namespaces and mounts, System V IPC objects and message queues (they would
outlive the run), typing into a terminal (TIOCSTI), and the kernel's
administrative calls. `clone3`
answers ENOSYS so that glibc falls back to `clone`, whose flags the filter
can read. A call from another ABI (i386 or x32 on x86_64) kills the run.

Where no landlock confines the file system, the filter can also refuse
every file write (`read_only_files`): opening for writing or creating,
removing, renaming, linking, truncating, changing modes, owners or extended
attributes. It cannot tell the scratch directory from the rest (a filter
sees no paths), so such a run writes no file at all.
"""

from __future__ import annotations

import ctypes
import errno
import os
import struct

from reward_service.sandbox import linux

_AUDIT_ARCH = {"x86_64": 0xC000003E, "aarch64": 0xC00000B7}
_X32_SYSCALL_BIT = 0x40000000

_LD_W_ABS = 0x20
_JEQ_K = 0x15
_JGE_K = 0x35
_AND_K = 0x54
_RET_K = 0x06

_ALLOW = 0x7FFF0000
_KILL_PROCESS = 0x80000000
_EPERM = 0x00050000 | errno.EPERM
_ENOSYS = 0x00050000 | errno.ENOSYS

_NR = 0
_ARCH = 4
_ARGS_LOW = 16  # seccomp_data.args[0], low 32 bits on a little-endian machine; 8 bytes apart

_EACCES = 0x00050000 | errno.EACCES

_OWN_PID_IN_ARG0 = ("kill", "tgkill", "rt_sigqueueinfo", "rt_tgsigqueueinfo")
_OPEN_FLAGS_ARG = {"open": 1, "openat": 2}
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC
FILE_WRITES = (
    "creat", "mkdir", "mkdirat", "rmdir", "unlink", "unlinkat", "rename", "renameat",
    "renameat2", "link", "linkat", "symlink", "symlinkat", "truncate", "chmod", "fchmod",
    "fchmodat", "fchmodat2", "chown", "lchown", "fchown", "fchownat", "mknod", "mknodat",
    "setxattr", "lsetxattr", "fsetxattr", "removexattr", "lremovexattr", "fremovexattr",
)  # fmt: skip
"""Calls that answer EACCES under `read_only_files`."""
_TERMINAL_IOCTLS = (0x5412, 0x541C)  # TIOCSTI (type into a terminal), TIOCLINUX
_SPECIAL = (
    *_OWN_PID_IN_ARG0,
    *_OPEN_FLAGS_ARG,
    *FILE_WRITES,
    "openat2",
    "clone",
    "clone3",
    "ioctl",
)
DENIED = tuple(name for name in linux.SYSCALLS if name not in (*_SPECIAL, "prlimit64"))
"""Calls that answer EPERM whatever their arguments."""

_NAMESPACE_FLAGS = (
    linux.CLONE_NEWNS
    | linux.CLONE_NEWCGROUP
    | linux.CLONE_NEWUTS
    | linux.CLONE_NEWIPC
    | linux.CLONE_NEWUSER
    | linux.CLONE_NEWPID
    | linux.CLONE_NEWNET
)
_PID_PLACEHOLDER = 0


class _SockFprog(ctypes.Structure):
    _fields_ = (("len", ctypes.c_ushort), ("filter", ctypes.c_char_p))


def _op(code: int, k: int, jt: int = 0, jf: int = 0) -> tuple[int, int, int, int]:
    return (code, jt, jf, k)


class SyscallFilter:
    """The filter for this architecture, built once; `install` fills in the run's pid."""

    def __init__(self, read_only_files: bool = False) -> None:
        if linux.ARCH is None:
            raise OSError(errno.ENOTSUP, "seccomp filter: unsupported architecture")
        self.read_only_files = read_only_files
        program = [
            _op(_LD_W_ABS, _ARCH),
            _op(_JEQ_K, _AUDIT_ARCH[linux.ARCH], jt=1),
            _op(_RET_K, _KILL_PROCESS),
            _op(_LD_W_ABS, _NR),
        ]
        if linux.ARCH == "x86_64":
            program += [_op(_JGE_K, _X32_SYSCALL_BIT, jf=1), _op(_RET_K, _KILL_PROCESS)]
        refused = [(name, _EPERM) for name in DENIED] + [("clone3", _ENOSYS)]
        if read_only_files:
            refused += [(name, _EACCES) for name in FILE_WRITES] + [("openat2", _ENOSYS)]
        for name, denial in refused:
            number = linux.syscall_number(name)
            if number is not None:
                program += [_op(_JEQ_K, number, jf=1), _op(_RET_K, denial)]
        program += _only_if("clone", 0, linux.CLONE_THREAD | _NAMESPACE_FLAGS, linux.CLONE_THREAD)
        program += _only_if("prlimit64", 0, 0xFFFFFFFF, 0)
        for request in _TERMINAL_IOCTLS:
            program += _deny_if("ioctl", 1, request)
        if read_only_files:
            for name, arg in _OPEN_FLAGS_ARG.items():
                program += _only_if(name, arg, _WRITE_FLAGS, 0, _EACCES)
        self._pid_slots: list[int] = []
        for name in _OWN_PID_IN_ARG0:
            self._pid_slots.append(len(program) + 3)
            program += _only_if(name, 0, 0xFFFFFFFF, _PID_PLACEHOLDER)
        program.append(_op(_RET_K, _ALLOW))
        self._template = b"".join(struct.pack("=HBBI", *instruction) for instruction in program)
        self.length = len(program)

    def install(self, own_pid: int) -> None:
        """Confine the calling (single-threaded) process; `own_pid` may still be signalled."""
        program = bytearray(self._template)
        for slot in self._pid_slots:
            struct.pack_into("=HBBI", program, slot * 8, _JEQ_K, 0, 1, own_pid)
        buffer = ctypes.create_string_buffer(bytes(program), len(program))
        fprog = _SockFprog(self.length, ctypes.cast(buffer, ctypes.c_char_p))
        linux.prctl(linux.PR_SET_NO_NEW_PRIVS, 1)
        linux.prctl(linux.PR_SET_SECCOMP, 2, ctypes.c_void_p(ctypes.addressof(fprog)))


def _deny_if(name: str, arg: int, value: int) -> list[tuple[int, int, int, int]]:
    """EPERM for `name` when `args[arg]` (low 32 bits) is `value`; nr is reloaded after."""
    return [
        _op(_JEQ_K, _number(name), jf=4),
        _op(_LD_W_ABS, _ARGS_LOW + 8 * arg),
        _op(_JEQ_K, value, jf=1),
        _op(_RET_K, _EPERM),
        _op(_LD_W_ABS, _NR),
    ]


def _number(name: str) -> int:
    number = linux.syscall_number(name)
    assert number is not None, name
    return number


def _only_if(
    name: str, arg: int, mask: int, equals: int, denial: int = _EPERM
) -> list[tuple[int, int, int, int]]:
    """Allow `name` when `args[arg] & mask == equals` (low 32 bits), else `denial`.

    Nothing where the architecture has no such call; the accumulator holds nr."""
    number = linux.syscall_number(name)
    if number is None:
        return []
    return [
        _op(_JEQ_K, number, jf=5),
        _op(_LD_W_ABS, _ARGS_LOW + 8 * arg),
        _op(_AND_K, mask),
        _op(_JEQ_K, equals, jf=1),
        _op(_RET_K, _ALLOW),
        _op(_RET_K, denial),
    ]
