"""The seccomp layer: a classic-BPF syscall filter written by hand, installed per run.

Stdlib only (the zygote imports it). The filter allows by default and denies
what a solution never needs: sockets, signals to any process but the run's
own, tracing, new processes (threads stay allowed: `clone` with
CLONE_THREAD and no namespace flag), exec, sessions and process groups,
namespaces and mounts, and the kernel's administrative calls. `clone3`
answers ENOSYS so that glibc falls back to `clone`, whose flags the filter
can read. A call from another ABI (i386 or x32 on x86_64) kills the run.
"""

from __future__ import annotations

import ctypes
import errno
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
_ARG0_LOW = 16  # seccomp_data.args[0], low 32 bits on a little-endian machine

_OWN_PID_IN_ARG0 = ("kill", "tgkill", "rt_sigqueueinfo", "rt_tgsigqueueinfo")
_SPECIAL = (*_OWN_PID_IN_ARG0, "clone", "clone3", "prlimit64")
DENIED = tuple(name for name in linux.SYSCALLS if name not in _SPECIAL)
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

    def __init__(self) -> None:
        if linux.ARCH is None:
            raise OSError(errno.ENOTSUP, "seccomp filter: unsupported architecture")
        program = [
            _op(_LD_W_ABS, _ARCH),
            _op(_JEQ_K, _AUDIT_ARCH[linux.ARCH], jt=1),
            _op(_RET_K, _KILL_PROCESS),
            _op(_LD_W_ABS, _NR),
        ]
        if linux.ARCH == "x86_64":
            program += [_op(_JGE_K, _X32_SYSCALL_BIT, jf=1), _op(_RET_K, _KILL_PROCESS)]
        for name in DENIED:
            number = linux.syscall_number(name)
            if number is not None:
                program += [_op(_JEQ_K, number, jf=1), _op(_RET_K, _EPERM)]
        program += [_op(_JEQ_K, _number("clone3"), jf=1), _op(_RET_K, _ENOSYS)]
        program += self._only_if_arg0(
            "clone", mask=linux.CLONE_THREAD | _NAMESPACE_FLAGS, equals=linux.CLONE_THREAD
        )
        program += self._only_if_arg0("prlimit64", mask=0xFFFFFFFF, equals=0)
        self._pid_slots: list[int] = []
        for name in _OWN_PID_IN_ARG0:
            self._pid_slots.append(len(program) + 3)
            program += self._only_if_arg0(name, mask=0xFFFFFFFF, equals=_PID_PLACEHOLDER)
        program.append(_op(_RET_K, _ALLOW))
        self._template = b"".join(struct.pack("=HBBI", *instruction) for instruction in program)
        self.length = len(program)

    @staticmethod
    def _only_if_arg0(name: str, mask: int, equals: int) -> list[tuple[int, int, int, int]]:
        """Allow `name` when `arg0 & mask == equals`, else EPERM (the accumulator holds nr)."""
        return [
            _op(_JEQ_K, _number(name), jf=5),
            _op(_LD_W_ABS, _ARG0_LOW),
            _op(_AND_K, mask),
            _op(_JEQ_K, equals, jf=1),
            _op(_RET_K, _ALLOW),
            _op(_RET_K, _EPERM),
        ]

    def install(self, own_pid: int) -> None:
        """Confine the calling (single-threaded) process; `own_pid` may still be signalled."""
        program = bytearray(self._template)
        for slot in self._pid_slots:
            struct.pack_into("=HBBI", program, slot * 8, _JEQ_K, 0, 1, own_pid)
        buffer = ctypes.create_string_buffer(bytes(program), len(program))
        fprog = _SockFprog(self.length, ctypes.cast(buffer, ctypes.c_char_p))
        linux.prctl(linux.PR_SET_NO_NEW_PRIVS, 1)
        linux.prctl(linux.PR_SET_SECCOMP, 2, ctypes.c_void_p(ctypes.addressof(fprog)))


def _number(name: str) -> int:
    number = linux.syscall_number(name)
    assert number is not None, name
    return number
