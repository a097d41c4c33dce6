"""The seccomp layer: a classic-BPF syscall filter written by hand, installed per run.

Stdlib only (the zygote imports it). The filter allows by default and denies
what a solution never needs: sockets; signals to any process but the run's
own, sent or left for the kernel to send to a file's owner (`fcntl`
F_SETOWN, F_SETOWN_EX, F_SETSIG, F_SETLEASE, F_NOTIFY, and F_SETFL with
O_ASYNC; `ioctl` FIOSETOWN, SIOCSPGRP, FIOASYNC); tracing; new processes
(threads stay allowed: `clone` with CLONE_THREAD and no namespace flag),
exec, sessions and process groups, namespaces and mounts; System V IPC
objects and message queues (they would outlive the run); memory no limit
counts (`memfd_create`, `memfd_secret`) and files no directory shows
(O_TMPFILE); every change to a file's metadata: modes, owners, extended
attributes, times, inode flags (FS_IOC_SETFLAGS, FS_IOC_FSSETXATTR,
`file_setattr`) and `truncate` by path (landlock covers none of them, and
truncation only from ABI 3; `ftruncate` stays); typing into a terminal
(TIOCSTI, TIOCLINUX); and the kernel's administrative calls. `clone3` and
`openat2` answer ENOSYS, so that glibc falls back to `clone` and callers to
`openat`, whose flags the filter can read. A call from another ABI (i386 or
x32 on x86_64) kills the run.

Where no landlock confines the file system, the filter can also refuse
every file write (`read_only_files`): opening for writing or creating,
creating, removing, renaming, linking. It cannot tell the scratch directory
from the rest (a filter sees no paths), so such a run writes no file at all.
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
_JSET_K = 0x45
_AND_K = 0x54
_RET_K = 0x06

_ALLOW = 0x7FFF0000
_KILL_PROCESS = 0x80000000
_EPERM = 0x00050000 | errno.EPERM
_EACCES = 0x00050000 | errno.EACCES
_ENOSYS = 0x00050000 | errno.ENOSYS

_NR = 0
_ARCH = 4
_ARGS_LOW = 16  # seccomp_data.args[0], low 32 bits on a little-endian machine; 8 bytes apart

_OWN_PID_IN_ARG0 = ("kill", "tgkill", "rt_sigqueueinfo", "rt_tgsigqueueinfo")
_OPEN_FLAGS_ARG = {"open": 1, "openat": 2}
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC
_O_TMPFILE = 0o20000000  # __O_TMPFILE, the same on x86_64 and aarch64 (alone: EINVAL)
_O_ASYNC = 0o20000
_F_SETFL = 4
_SIGNAL_OWNER_FCNTLS = (8, 15, 10, 1024, 1026)
"""F_SETOWN, F_SETOWN_EX (who gets a file's SIGIO: any process of the uid), F_SETSIG, F_SETLEASE,
F_NOTIFY (their signals go to that owner)."""
_REFUSED_IOCTLS = (
    0x5412,  # TIOCSTI: type into a terminal
    0x541C,  # TIOCLINUX
    0x5452,  # FIOASYNC: O_ASYNC by another name
    0x8901,  # FIOSETOWN: F_SETOWN by another name
    0x8902,  # SIOCSPGRP: the same
    0x40086602,  # FS_IOC_SETFLAGS: inode flags (chattr)
    0x401C5820,  # FS_IOC_FSSETXATTR: the same, and more
)
FILE_WRITES = (
    "creat", "mkdir", "mkdirat", "rmdir", "unlink", "unlinkat", "rename", "renameat",
    "renameat2", "link", "linkat", "symlink", "symlinkat", "mknod", "mknodat",
)  # fmt: skip
"""Calls that answer EACCES under `read_only_files`."""
_ENOSYS_CALLS = ("clone3", "openat2")
_SPECIAL = (
    *_OWN_PID_IN_ARG0,
    *_OPEN_FLAGS_ARG,
    *FILE_WRITES,
    *_ENOSYS_CALLS,
    "clone",
    "ioctl",
    "fcntl",
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
_Instruction = tuple[int, int, int, int]


class _SockFprog(ctypes.Structure):
    _fields_ = (("len", ctypes.c_ushort), ("filter", ctypes.c_char_p))


def _op(code: int, k: int, jt: int = 0, jf: int = 0) -> _Instruction:
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
        refused = [(name, _EPERM) for name in DENIED]
        refused += [(name, _ENOSYS) for name in _ENOSYS_CALLS]
        if read_only_files:
            refused += [(name, _EACCES) for name in FILE_WRITES]
        for name, denial in refused:
            number = linux.syscall_number(name)
            if number is not None:
                program += [_op(_JEQ_K, number, jf=1), _op(_RET_K, denial)]
        program += _only_if("clone", 0, linux.CLONE_THREAD | _NAMESPACE_FLAGS, linux.CLONE_THREAD)
        program += _only_if("prlimit64", 0, 0xFFFFFFFF, 0)
        program += _checked(
            "fcntl",
            _equals_any(1, _SIGNAL_OWNER_FCNTLS, _EPERM)
            + _if_equals(1, _F_SETFL, _has_bits(2, _O_ASYNC, _EPERM)),
        )
        program += _checked("ioctl", _equals_any(1, _REFUSED_IOCTLS, _EPERM))
        for name, arg in _OPEN_FLAGS_ARG.items():
            checks = _has_bits(arg, _O_TMPFILE, _EPERM)
            if read_only_files:
                checks += _has_bits(arg, _WRITE_FLAGS, _EACCES)
            program += _checked(name, checks)
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


def _checked(name: str, checks: list[_Instruction]) -> list[_Instruction]:
    """For `name`, `checks` (each refuses or falls through), then allow; the accumulator holds
    nr. Nothing where the architecture has no such call."""
    number = linux.syscall_number(name)
    if number is None:
        return []
    body = [*checks, _op(_RET_K, _ALLOW)]
    return [_op(_JEQ_K, number, jf=len(body)), *body]


def _equals_any(arg: int, values: tuple[int, ...], denial: int) -> list[_Instruction]:
    """`denial` when `args[arg]` (low 32 bits) is one of `values`."""
    program = [_op(_LD_W_ABS, _ARGS_LOW + 8 * arg)]
    for value in values:
        program += [_op(_JEQ_K, value, jf=1), _op(_RET_K, denial)]
    return program


def _if_equals(arg: int, value: int, then: list[_Instruction]) -> list[_Instruction]:
    """The checks `then` only when `args[arg]` (low 32 bits) is `value`."""
    return [_op(_LD_W_ABS, _ARGS_LOW + 8 * arg), _op(_JEQ_K, value, jf=len(then)), *then]


def _has_bits(arg: int, bits: int, denial: int) -> list[_Instruction]:
    """`denial` when `args[arg]` has any of `bits` (low 32 bits)."""
    return [
        _op(_LD_W_ABS, _ARGS_LOW + 8 * arg),
        _op(_JSET_K, bits, jf=1),
        _op(_RET_K, denial),
    ]


def _only_if(
    name: str, arg: int, mask: int, equals: int, denial: int = _EPERM
) -> list[_Instruction]:
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
