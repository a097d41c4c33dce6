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

Two variants serve compiled languages (`toolchains`): a run that becomes its
program by exec (`exec_fd`) may call `execveat` only with that descriptor
and exactly `AT_EMPTY_PATH`, never `execve` nor `seccomp` (a filter sees no
path: an absolute path given with them is followed). With `exec_once` that
`execveat` goes to a listener instead (SECCOMP_RET_USER_NOTIF, `install_listening`),
which lets the run's own exec through and no later one (`exec_once`);
without it what holds the exec to the program's own file is landlock's
execute right (`landlock.Ruleset`). A build (`processes`) may fork and exec
the compiler's own helpers, and write files.
A runtime may need a denied call (`allowed`: the JVM's `socketpair`, a
connected pair of unix sockets that reaches nothing outside the process).
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
_JA = 0x05

_ALLOW = 0x7FFF0000
_KILL_PROCESS = 0x80000000
_EPERM = 0x00050000 | errno.EPERM
_EACCES = 0x00050000 | errno.EACCES
_ENOSYS = 0x00050000 | errno.ENOSYS
USER_NOTIF = 0x7FC00000
"""SECCOMP_RET_USER_NOTIF: the call waits for its filter's listener (ENOSYS without one)."""
_SET_MODE_FILTER = 1
_FILTER_FLAG_NEW_LISTENER = 1 << 3

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
_EXECS = ("execve", "execveat")
_PROCESS_CALLS = ("fork", "vfork", *_EXECS)
"""Denied to every run but a build's (a run that execs its program: `execveat` on its fd)."""
_SPECIAL = (
    *_OWN_PID_IN_ARG0,
    *_OPEN_FLAGS_ARG,
    *FILE_WRITES,
    *_ENOSYS_CALLS,
    "clone",
    "ioctl",
    "fcntl",
    "seccomp",  # refused to a run that execs (a listener of its own would answer its exec)
)
DENIED = tuple(name for name in linux.SYSCALLS if name not in (*_SPECIAL, "prlimit64"))
"""Calls that answer EPERM whatever their arguments."""
TEMPLATE_RELAXED = ("clone", "setsid", "pidfd_open", *_OWN_PID_IN_ARG0)
"""What a template (`template`) may call that its runs may not: fork (`clone` without
CLONE_THREAD), a run's `setsid` before its own filter, a pidfd of the run it forked (for
the zygote, which kills the run by it), signals to any pid. A template's filter leaves
their rules out, and its runs' filter holds those rules alone: stacked, the two hold a run
to exactly the whole filter's rules, for the cost of a short filter per run."""
PARTS = ("whole", "template", "template_run")

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


class _PidCheck:
    """Where the run's own pid goes: `JEQ pid, jt=0, jf=1` once it is known."""


_Item = _Instruction | _PidCheck


class SyscallFilter:
    """The filter for this architecture, built once; `install` fills in the run's pid.

    After the architecture checks, the syscall number picks its rule by a binary search
    over the numbers that have one (every other number is allowed): about log2(rules)
    comparisons for any call, so that the kernel's emulation of the filter for each
    syscall number at install (its always-allowed cache) and each filtered call stay short.
    """

    def __init__(
        self,
        read_only_files: bool = False,
        exec_fd: int | None = None,
        processes: bool = False,
        allowed: tuple[str, ...] = (),
        exec_once: bool = False,
        part: str = "whole",
    ) -> None:
        if linux.ARCH is None:
            raise OSError(errno.ENOTSUP, "seccomp filter: unsupported architecture")
        read_only_files = read_only_files and not processes
        self.read_only_files = read_only_files
        self.exec_once = exec_once and exec_fd is not None and not processes
        """Its one exec waits for a listener (`install_listening`)."""
        header: list[_Item] = [
            _op(_LD_W_ABS, _ARCH),
            _op(_JEQ_K, _AUDIT_ARCH[linux.ARCH], jt=1),
            _op(_RET_K, _KILL_PROCESS),
            _op(_LD_W_ABS, _NR),
        ]
        if linux.ARCH == "x86_64":
            header += [_op(_JGE_K, _X32_SYSCALL_BIT, jf=1), _op(_RET_K, _KILL_PROCESS)]
        rules: dict[int, list[_Item]] = {}

        def rule(name: str, block: list[_Item]) -> None:
            number = linux.syscall_number(name)
            if number is not None:
                if number in rules:  # one rule per number: none may silently replace another
                    raise ValueError(f"seccomp filter: two rules for syscall {number}")
                rules[number] = block

        let_through = {*allowed, *(_PROCESS_CALLS if processes else ())}
        let_through |= set(_EXECS) if exec_fd is not None else set()
        for name in DENIED:
            if name not in let_through:
                rule(name, [_op(_RET_K, _EPERM)])
        if exec_fd is not None and not processes:
            rule("execve", [_op(_RET_K, _EPERM)])
            rule("execveat", _execveat_of(exec_fd, USER_NOTIF if self.exec_once else _ALLOW))
            rule("seccomp", [_op(_RET_K, _EPERM)])
        for name in _ENOSYS_CALLS:
            rule(name, [_op(_RET_K, _ENOSYS)])
        if read_only_files:
            for name in FILE_WRITES:
                rule(name, [_op(_RET_K, _EACCES)])
        if processes:
            rule("clone", _allow_if(0, _NAMESPACE_FLAGS, 0))
        else:
            rule("clone", _allow_if(0, linux.CLONE_THREAD | _NAMESPACE_FLAGS, linux.CLONE_THREAD))
        rule("prlimit64", _allow_if(0, 0xFFFFFFFF, 0))
        rule(
            "fcntl",
            [
                *_equals_any(1, _SIGNAL_OWNER_FCNTLS, _EPERM),
                *_if_equals(1, _F_SETFL, _has_bits(2, _O_ASYNC, _EPERM)),
                _op(_RET_K, _ALLOW),
            ],
        )
        rule("ioctl", [*_equals_any(1, _REFUSED_IOCTLS, _EPERM), _op(_RET_K, _ALLOW)])
        for name, arg in _OPEN_FLAGS_ARG.items():
            checks = _has_bits(arg, _O_TMPFILE, _EPERM)
            if read_only_files:
                checks += _has_bits(arg, _WRITE_FLAGS, _EACCES)
            rule(name, [*checks, _op(_RET_K, _ALLOW)])
        for name in _OWN_PID_IN_ARG0:
            rule(
                name,
                [_op(_LD_W_ABS, _ARGS_LOW), _PidCheck(), _op(_RET_K, _ALLOW), _op(_RET_K, _EPERM)],
            )
        relaxed = {linux.syscall_number(name) for name in TEMPLATE_RELAXED}
        if part == "template":
            rules = {number: block for number, block in rules.items() if number not in relaxed}
        elif part == "template_run":
            rules = {number: block for number, block in rules.items() if number in relaxed}
        elif part != "whole":
            raise ValueError(f"seccomp filter: no part {part!r} (one of {PARTS})")
        self.part = part
        items = header + _search(_ranges(rules))
        self._pid_slots = [i for i, item in enumerate(items) if isinstance(item, _PidCheck)]
        program = [
            _op(_JEQ_K, _PID_PLACEHOLDER, jf=1) if isinstance(item, _PidCheck) else item
            for item in items
        ]
        self._template = b"".join(struct.pack("=HBBI", *instruction) for instruction in program)
        self.length = len(program)
        self._buffer = ctypes.create_string_buffer(self._template, len(self._template))
        self._fprog = _SockFprog(self.length, ctypes.cast(self._buffer, ctypes.c_char_p))
        self._launch: list[str] | None = None

    def launch_options(self) -> list[str]:
        """The filter as the launcher takes it (`run_launcher.c`): its program with the pid
        slots at 0, where the launcher writes its own pid, and `listen` under `exec_once`."""
        if self._launch is None:
            self._launch = [
                f"filter={self._template.hex()}",
                *(f"pid={slot}" for slot in self._pid_slots),
                *(["listen"] if self.exec_once else []),
            ]
        return self._launch

    def install(self, own_pid: int) -> None:
        """Confine the calling (single-threaded) process; `own_pid` may still be signalled.

        Writes the pid into the filter built in the zygote: a forked run changes its own
        copy only."""
        linux.prctl(linux.PR_SET_SECCOMP, 2, self._prepare(own_pid))

    def install_listening(self, own_pid: int) -> int:
        """`install`, with a new listener for the filter's notifications: its fd
        (close-on-exec). Fails with EBUSY where a filter above has a listener."""
        fprog = self._prepare(own_pid)
        return linux.syscall("seccomp", _SET_MODE_FILTER, _FILTER_FLAG_NEW_LISTENER, fprog)

    def _prepare(self, own_pid: int) -> ctypes.c_void_p:
        """The program with `own_pid` in it, to install after no-new-privileges."""
        self._set_pid(own_pid)
        linux.prctl(linux.PR_SET_NO_NEW_PRIVS, 1)
        return ctypes.c_void_p(ctypes.addressof(self._fprog))

    def program(self, own_pid: int) -> bytes:
        """The instructions `install` hands the kernel, with `own_pid` filled in."""
        self._set_pid(own_pid)
        return self._buffer.raw

    def _set_pid(self, own_pid: int) -> None:
        for slot in self._pid_slots:
            struct.pack_into("=HBBI", self._buffer, slot * 8, _JEQ_K, 0, 1, own_pid)


def _allow_if(arg: int, mask: int, equals: int, denial: int = _EPERM) -> list[_Item]:
    """Allow when `args[arg] & mask == equals` (low 32 bits), else `denial`."""
    return [
        _op(_LD_W_ABS, _ARGS_LOW + 8 * arg),
        _op(_AND_K, mask),
        _op(_JEQ_K, equals, jf=1),
        _op(_RET_K, _ALLOW),
        _op(_RET_K, denial),
    ]


def _execveat_of(fd: int, verdict: int) -> list[_Item]:
    """`verdict` for `execveat(fd, ..., AT_EMPTY_PATH)` (its flags exactly), else EPERM."""
    return [
        _op(_LD_W_ABS, _ARGS_LOW),
        _op(_JEQ_K, fd, jf=3),
        _op(_LD_W_ABS, _ARGS_LOW + 8 * 4),
        _op(_JEQ_K, linux.AT_EMPTY_PATH, jf=1),
        _op(_RET_K, verdict),
        _op(_RET_K, _EPERM),
    ]


def _ranges(rules: dict[int, list[_Item]]) -> list[tuple[int, list[_Item]]]:
    """(first number, block) of consecutive ranges covering every number from 0: a number
    with a rule alone, or with its neighbours when they refuse alike; allowed in between."""
    allow: list[_Item] = [_op(_RET_K, _ALLOW)]
    ranges: list[tuple[int, list[_Item]]] = []
    free = 0
    for number in sorted(rules):
        block = rules[number]
        if number > free:
            ranges.append((free, allow))
        elif ranges and len(block) == 1 and ranges[-1][1] == block:
            free = number + 1
            continue
        ranges.append((number, block))
        free = number + 1
    ranges.append((free, allow))
    return ranges


def _search(ranges: list[tuple[int, list[_Item]]]) -> list[_Item]:
    """A binary search over `ranges` (the accumulator holds nr): each range's block."""
    if len(ranges) == 1:
        return list(ranges[0][1])
    middle = len(ranges) // 2
    low, high = _search(ranges[:middle]), _search(ranges[middle:])
    if len(low) <= 255:
        return [_op(_JGE_K, ranges[middle][0], jt=len(low)), *low, *high]
    return [_op(_JGE_K, ranges[middle][0], jf=1), _op(_JA, len(low)), *low, *high]


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
