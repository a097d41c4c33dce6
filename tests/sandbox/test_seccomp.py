"""The seccomp filter's argument checks and metadata refusals, each in a forked child of the test.

Every probe aims at the child itself or at a temporary file of its own: if the
filter failed open, the probe changes nothing that matters (a signal owner
that is the child, a mode or owner set to what it was, a size kept).
"""

from __future__ import annotations

import base64
import ctypes
import errno
import fcntl
import functools
import os
import signal
import struct
import tempfile
import zlib
from collections.abc import Callable
from pathlib import Path

import pytest

from reward_service.sandbox import linux, seccomp
from reward_service.sandbox.seccomp import SyscallFilter
from tests.sandbox.test_layers import errno_of, in_child

pytestmark = pytest.mark.skipif(linux.ARCH is None, reason="no syscall table for this arch")

F_SETSIG, F_SETOWN_EX, F_OWNER_PID, F_SETLEASE, F_NOTIFY = 10, 15, 1, 1024, 1026
FIOASYNC, FIOSETOWN, SIOCSPGRP = 0x5452, 0x8901, 0x8902
FS_IOC_GETFLAGS, FS_IOC_SETFLAGS = 0x80086601, 0x40086602
FS_IOC_FSGETXATTR, FS_IOC_FSSETXATTR = 0x801C581F, 0x401C5820
FILE_GETATTR, FILE_ATTR_SIZE = 468, 24
AT_FDCWD = -100
NUMBERS = {
    "memfd_secret": (447, 447),
    "openat2": (437, 437),
    "fchmodat2": (452, 452),
    "setxattrat": (463, 463),
    "removexattrat": (466, 466),
    "file_setattr": (469, 469),
    "chmod": (90, None),
    "chown": (92, None),
    "lchown": (94, None),
    "utime": (132, None),
    "utimes": (235, None),
    "futimesat": (261, None),
}
"""The kernel's numbers (arch/x86/entry/syscalls/syscall_64.tbl, scripts/syscall.tbl), kept
apart from `linux.SYSCALLS` so that a wrong number there fails here."""

_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long


def raw(number: int, *args: int | bytes | ctypes.Array[ctypes.c_char] | None) -> int:
    """A system call with every integer passed as a long; raises OSError on failure."""
    converted = [ctypes.c_long(a) if isinstance(a, int) else a for a in args]
    result = int(_libc.syscall(ctypes.c_long(number), *converted))
    if result < 0:
        code = ctypes.get_errno()
        raise OSError(code, os.strerror(code))
    return result


def nr(name: str) -> int:
    number = NUMBERS[name][0 if linux.ARCH == "x86_64" else 1]
    assert number is not None, name
    return number


def install(read_only_files: bool = False) -> Callable[[], None]:
    syscall_filter = SyscallFilter(read_only_files=read_only_files)
    return lambda: syscall_filter.install(os.getpid())


def test_the_filter_refuses_every_way_to_make_the_kernel_signal_a_files_owner() -> None:
    """F_SETOWN, F_SETOWN_EX, F_SETSIG, F_SETLEASE, F_NOTIFY, O_ASYNC by F_SETFL or FIOASYNC, and
    FIOSETOWN/SIOCSPGRP answer EPERM (aimed at the child itself); other fcntls still work."""
    with tempfile.TemporaryDirectory() as scratch:
        Path(scratch, "f").write_text("x")

        def probe() -> dict[str, int]:
            r, w = os.pipe()
            me = os.getpid()
            file = os.open(Path(scratch, "f"), os.O_RDONLY)
            directory = os.open(scratch, os.O_RDONLY)
            nonblocking = fcntl.fcntl(r, fcntl.F_GETFL) | os.O_NONBLOCK
            return {
                "F_SETOWN": errno_of(lambda: fcntl.fcntl(r, fcntl.F_SETOWN, me)),
                "F_SETOWN group": errno_of(lambda: fcntl.fcntl(r, fcntl.F_SETOWN, -os.getpgid(0))),
                "F_SETOWN_EX": errno_of(
                    lambda: fcntl.fcntl(r, F_SETOWN_EX, struct.pack("ii", F_OWNER_PID, me))
                ),
                "F_SETSIG": errno_of(lambda: fcntl.fcntl(r, F_SETSIG, signal.SIGUSR1)),
                "F_SETLEASE": errno_of(lambda: fcntl.fcntl(file, F_SETLEASE, fcntl.F_RDLCK)),
                "F_NOTIFY": errno_of(lambda: fcntl.fcntl(directory, F_NOTIFY, 2)),
                "F_SETFL O_ASYNC": errno_of(
                    lambda: fcntl.fcntl(r, fcntl.F_SETFL, nonblocking | os.O_ASYNC)
                ),
                "FIOASYNC": errno_of(lambda: fcntl.ioctl(r, FIOASYNC, struct.pack("i", 1))),
                "FIOSETOWN": errno_of(lambda: fcntl.ioctl(r, FIOSETOWN, struct.pack("i", me))),
                "SIOCSPGRP": errno_of(lambda: fcntl.ioctl(r, SIOCSPGRP, struct.pack("i", me))),
                "honest F_SETFL O_NONBLOCK": errno_of(
                    lambda: fcntl.fcntl(r, fcntl.F_SETFL, nonblocking)
                ),
                "honest F_GETOWN": errno_of(lambda: fcntl.fcntl(r, fcntl.F_GETOWN)),
                "honest F_DUPFD_CLOEXEC": errno_of(lambda: fcntl.fcntl(w, fcntl.F_DUPFD_CLOEXEC)),
                "honest set_inheritable": errno_of(lambda: os.set_inheritable(w, True)),
                "honest FIONREAD": errno_of(lambda: fcntl.ioctl(r, 0x541B, b"\0" * 4)),
                "honest pipe I/O": errno_of(lambda: (os.write(w, b"x"), os.read(r, 1))),
            }

        results = in_child(install(), probe)
    assert results == {k: 0 if k.startswith("honest") else errno.EPERM for k in results}


def test_the_filter_refuses_memory_files_and_unseen_files() -> None:
    """memfd_create and memfd_secret answer EPERM, O_TMPFILE EPERM, openat2 ENOSYS; named files
    in scratch, tempfile's temporary files and ftruncate still work."""
    with tempfile.TemporaryDirectory() as scratch:
        Path(scratch, "f").write_text("x")
        how = struct.pack("=QQQ", os.O_RDONLY, 0, 0)

        def temporary_file() -> None:
            with tempfile.TemporaryFile(dir=scratch) as f:
                f.write(b"data")
                f.seek(0)
                assert f.read() == b"data"

        def named_file() -> None:
            with open(Path(scratch, "named"), "w+b") as f:
                f.write(b"0123456789")
                os.posix_fallocate(f.fileno(), 0, 1 << 16)
                os.ftruncate(f.fileno(), 4)
                assert os.fstat(f.fileno()).st_size == 4

        results = in_child(
            install(),
            lambda: {
                "memfd_create": errno_of(lambda: os.memfd_create("hostile")),
                "memfd_secret": errno_of(lambda: raw(nr("memfd_secret"), 0)),
                "O_TMPFILE": errno_of(lambda: os.open(scratch, os.O_TMPFILE | os.O_RDWR, 0o600)),
                "O_TMPFILE write only": errno_of(
                    lambda: os.open(scratch, os.O_TMPFILE | os.O_WRONLY, 0o600)
                ),
                "openat2": errno_of(
                    lambda: raw(nr("openat2"), AT_FDCWD, str(Path(scratch, "f")).encode(), how, 24)
                ),
                "honest tempfile.TemporaryFile": errno_of(temporary_file),
                "honest named file, fallocate, ftruncate": errno_of(named_file),
            },
        )
    assert results == {
        "memfd_create": errno.EPERM,
        "memfd_secret": errno.EPERM,
        "O_TMPFILE": errno.EPERM,
        "O_TMPFILE write only": errno.EPERM,
        "openat2": errno.ENOSYS,
        "honest tempfile.TemporaryFile": 0,
        "honest named file, fallocate, ftruncate": 0,
    }


def _set_flags(fd: int, get: int, put: int, size: int) -> None:
    """Read an inode-flag structure with `get` and write it back unchanged with `put`."""
    buffer = bytearray(size)
    fcntl.ioctl(fd, get, buffer)
    fcntl.ioctl(fd, put, bytes(buffer))


@pytest.mark.parametrize("read_only_files", [False, True], ids=["with landlock", "without"])
def test_the_filter_refuses_every_change_to_a_files_metadata(read_only_files: bool) -> None:
    """Modes, owners, extended attributes, times, inode flags and truncate by path answer EPERM
    in both modes (each set to what it was); reading them still works."""
    with tempfile.TemporaryDirectory() as scratch:
        path = Path(scratch, "f")
        path.write_text("kept")
        os.setxattr(path, "user.kept", b"1")
        name = str(path).encode()
        st = os.stat(path)
        xattr_value = ctypes.create_string_buffer(b"1")
        xattr_args = struct.pack("=QII", ctypes.addressof(xattr_value), 1, 0)
        attr = ctypes.create_string_buffer(FILE_ATTR_SIZE)
        times = struct.pack("=qq", int(st.st_atime), int(st.st_mtime))
        timevals = struct.pack("=qqqq", int(st.st_atime), 0, int(st.st_mtime), 0)

        def probe() -> dict[str, int]:
            fd = os.open(path, os.O_RDONLY)
            calls: dict[str, Callable[[], object]] = {
                "os.chmod": lambda: os.chmod(path, st.st_mode & 0o7777),
                "fchmod": lambda: os.fchmod(fd, st.st_mode & 0o7777),
                "fchmodat2": lambda: raw(nr("fchmodat2"), AT_FDCWD, name, st.st_mode & 0o7777, 0),
                "os.chown": lambda: os.chown(path, st.st_uid, st.st_gid),
                "os.lchown": lambda: os.lchown(path, st.st_uid, st.st_gid),
                "fchown": lambda: os.fchown(fd, st.st_uid, st.st_gid),
                "setxattr": lambda: os.setxattr(path, "user.new", b"x"),
                "lsetxattr": lambda: os.setxattr(path, "user.new", b"x", follow_symlinks=False),
                "fsetxattr": lambda: os.setxattr(fd, "user.new", b"x"),
                "removexattr": lambda: os.removexattr(path, "user.kept"),
                "fremovexattr": lambda: os.removexattr(fd, "user.kept"),
                "setxattrat": lambda: raw(
                    nr("setxattrat"), AT_FDCWD, name, 0, b"user.new", xattr_args, 16
                ),
                "removexattrat": lambda: raw(nr("removexattrat"), AT_FDCWD, name, 0, b"user.kept"),
                "file_setattr": lambda: (
                    raw(FILE_GETATTR, AT_FDCWD, name, attr, FILE_ATTR_SIZE, 0),
                    raw(nr("file_setattr"), AT_FDCWD, name, attr, FILE_ATTR_SIZE, 0),
                ),
                "FS_IOC_SETFLAGS": lambda: _set_flags(fd, FS_IOC_GETFLAGS, FS_IOC_SETFLAGS, 4),
                "FS_IOC_FSSETXATTR": lambda: _set_flags(
                    fd, FS_IOC_FSGETXATTR, FS_IOC_FSSETXATTR, 28
                ),
                "os.utime": lambda: os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns)),
                "futimens": lambda: os.utime(fd, ns=(st.st_atime_ns, st.st_mtime_ns)),
                "truncate": lambda: os.truncate(path, st.st_size),
            }
            if linux.ARCH == "x86_64":
                legacy: dict[str, tuple[int | bytes, ...]] = {
                    "chmod": (name, st.st_mode & 0o7777),
                    "chown": (name, st.st_uid, st.st_gid),
                    "lchown": (name, st.st_uid, st.st_gid),
                    "utime": (name, times),
                    "utimes": (name, timevals),
                    "futimesat": (AT_FDCWD, name, timevals),
                }
                for call, args in legacy.items():
                    calls[call] = functools.partial(raw, nr(call), *args)
            honest: dict[str, Callable[[], object]] = {
                "honest stat": lambda: os.stat(path),
                "honest getxattr": lambda: os.getxattr(path, "user.kept"),
                "honest listxattr": lambda: os.listxattr(fd),
                "honest file_getattr": lambda: raw(
                    FILE_GETATTR, AT_FDCWD, name, attr, FILE_ATTR_SIZE, 0
                ),
                "honest FS_IOC_GETFLAGS": lambda: fcntl.ioctl(fd, FS_IOC_GETFLAGS, bytearray(4)),
                "honest read": lambda: os.pread(fd, 4, 0),
            }
            return {call: errno_of(attempt) for call, attempt in {**calls, **honest}.items()}

        results = in_child(install(read_only_files), probe)
        assert path.read_text() == "kept"
        assert os.listxattr(path) == ["user.kept"]
    assert results == {k: 0 if k.startswith("honest") else errno.EPERM for k in results}


# The filter, instruction by instruction: a small classic-BPF interpreter compares today's
# filter with the filter as it was built before its binary search (a linear scan, 879a334 ..
# 28d8f8a), kept below for both architectures and both modes, with 4242 as the run's pid.

OLD_PID = 4242
OLD_FILTERS = {
    ("x86_64", False): (
        "eNqV1t9LU3EYx/Hnu50TI4ROwXAXE3YluIb9oKkzmMdf0EVX4YVoeleREKQUgsFSEKKLJLwTLyL87aZLxQjR"
        "6qIs6CLox1/gXd10FZYX63vONtx5cy7a8OBeez7f5zzbvttZTEQMfYRFSVrk7Qlxb+Ox4n9Jii6I2OXHw9oN"
        "+o5jJaY4TsJx+AJ8ET4Lx5TXCdQ/wsvIb8Iv4RtY34R6M/wKboFT6NcKX4Y7sP4u6ndgC/lL8ALyi/As/Bxe"
        "Q78cvA7n4RfwBrwDf4Xb4Tj8F/Mewn/gFaxfhbNwJ/wI/X7DNvIrqOfhFF8v1OfgJe5veB4+4OcN53uG+hZ8"
        "C56BE+h3Dj4P38b6IXgYHoHvw6PwGPwAvgdn4Bz3P/wNfgJ/gp/CU/w+wOtzhLqgXgvXId/F/Qj/gtvQ7w0/"
        "H8hn4atwH9wP16D/O/g68oPwAGxg/S7qe/Br+D28D3+AP+N8X+Dv8CTW/4RN5CPwVsn1JW97bbbo+8712NJH"
        "j3sZDmbcfaP/itflwsOKfmaj8uYL+lbMi1/+9JVS/4j7O0BUCPOfgk9y/xpeBypc0TdolM7jHN1OOXacK8+l"
        "c5aFec70ePtH4Wuweox56Jsh2/N7ozdq+8xhBCrmcOcV229eQyk8L/+cmRb/92Xa8n1fzB9V5ieqzDeo/8+X"
        "/Q9IjobP"
    ),
    ("x86_64", True): (
        "eNqV1s1LFHEcx/Hvb3fHJwonQfSgMKfAB3wITc3QMQs6eLI1xdKbRkKgkgQKamBEB0W8SYeQtDLXLCWJyPKg"
        "KXQQevgLutWlU2gd7Dezszjzdglddth97ef7+85vnpafJSIRvWWLkjqR9RRxX6NW/FMqRQciduL3bO0C/cWx"
        "EkMcV8KFcDl8Bi6CLRV0MfJt+Bnql+FVuAvjzyKvgt/A1XAN+p2Da+ELGN+L/BZsor4CnkP9E/ghPAMvol8M"
        "fgEvwS/hV/Bb+AvcABfCfzDfXXgPnsf45/AC3AjfR7/fsI36eeRLcA3PF/LH8FPe3/As/J3PG/b3CPkKfAOe"
        "hovRrxQug29ifA/cB/fDA/AdeBAegm/Dw3CM9z/8FR6HP8GT8AT/D3B+/iIX5DlwPuov8n6Ef8H16PeBzwfq"
        "F+AmuB2+Bp9A/w34Ouo74Q44gvHvkK/B7+FN+CO8Be9gf5/hb/AYxv+EDdTnwiueT3t+Dbd4/U56vgKHVNBR"
        "5K1wKuqbkachPw9fRX068jbkGcjvIQ8Hc6Naf3fWH6beou6yIzzsPif6HV+H7I/4zp9RooL1+/oVr5dk9acu"
        "e/1z3XWPPl5cr0w4g89rJOiQz76+4Yi3H2e75MTWQV1iXrrONDGfrGiwfx7cDKsHmA/dnWYH1ldteXaSeaSG"
        "fPNw5yv2oeNyfm8MHVwv/3ilcLwYb/1/vFEnya/jlJn0Oho/jll/95j1Bero9Qn/Ax8yjoc="
    ),
    ("aarch64", False): (
        "eNqV1blKA1EUgOE7JqMxiFlATCRKKpfCyhWxSOMLSIqINjaiVhYuYOFaKeISEUUQ0UrjvksKFRFXUFAs3EBf"
        "wO0F4kwy4uRnQDLMMPPNOffcc4eQ6xVCmJUrQ0hiT4ijZBE9eryxu/JeSKfKXX0vCTnqM/gKPocv4Ev4G76G"
        "++AFKd6b8C7chvHpiNvgfdgOv6CeG/EZxKfhejgN4/MRz4ML4CJ4BfWW4VV4DV6HN+AwfAe74C/09wQ/wI/w"
        "IuqF4CU4C65DvUY4F/nDiDfBDuQ3I14Dv8JvcAhuga1cL+KVcCtcASejngVOhYMYPwqPwSPwODwBT8JT8Cxc"
        "CzvhIbgT7oDbWQ/rz0H8Hf6Aj+EwfABvw5mY/xCeQ/48XAgXwyXwCeqXIV4Ky/w9wSn8v4VtsB2+QT+38D0c"
        "wPgtLZ6reSfe8rPyrO5v6rz+6C5n6lLz1DO2/0W6dfVkWYrPjyhHLF8Y5TvcWn2Xtn9a/lm/FVY3ZL2TdNbV"
        "NZm1edSrSg17//J++1Ly7Nnox+mPr++Bq2FpAP3QDRaf3t6Ax2fQh7mc/QqfUb9yrzD+3kG74feW+xPMH0ww"
        "/zOB/F//ACA/fVY="
    ),
    ("aarch64", True): (
        "eNqV1rlKA1EUgOE76pgYXKIoLkSJW9TCyhWxCIgvICki2tiIWlm4gIVrpYgroggiWrnvGxYqIq6goFi4gb6A"
        "2wvoTDLBmZ+AZMgw+eace+bc3JAbuxAiRDnjhCR2hTgKFZ6j0+69KveFdKpc1fuSkD0+g6/gc/gCvoS/4Wu4"
        "G56TjN6Ad+BmjI9EPAreg63wC+olIj6F+CRcA4djfDbiWXAOnAcvo94SvAKvwmvwOrwP38EJ8Bf6e4If4Ed4"
        "HvUW4EU4Ca5GvTrYgfwBxOvhaOQ3IF4Jv8Jv8ALcCFs4X8RL4Sa4BA5FPTMcBo9g/BA8DA/Co/AYPA5PwNNw"
        "FRwD98NtcCvcwnqYfwri7/AHfAzvwwfwFhyP5x/CM8ifhXPhfLgAPkH9IsQLYZnfJ9jE31s4CrbCN+jnFr6H"
        "3Ri/qcUdmrfhNC0/QnM67IBjJaMzEc+AU42Wn5X36n6qztPl2VWD29U89eXdb386dP3LsmTM/1EOb77wlx+d"
        "qNVP0PZr8z+ftwVW/wDoHaSzrm5wiPYc9SxXw/a/PF9fSp41Gf3EuIz1bXAFLPWiH7rW7NTb7rY5/fRhKma/"
        "wmmYl+9+WdDfeunGy13C/zqMWP2ug9wTYH5fgPmfAeT7/AtNOYBo"
    ),
}
"""zlib + base64 of the old filter's instructions (`struct sock_filter`, native byte order)."""

_SECCOMP_DATA = struct.Struct("=IIQ6Q")  # nr, arch, instruction_pointer, args[6]
_AUDIT = {"x86_64": 0xC000003E, "aarch64": 0xC00000B7}
_I386 = 0x40000003
_CLONE_THREAD = 0x00010000
_NAMESPACE_FLAGS = (
    0x00020000,
    0x02000000,
    0x04000000,
    0x08000000,
    0x10000000,
    0x20000000,
    0x40000000,
)
"""CLONE_NEWNS, NEWCGROUP, NEWUTS, NEWIPC, NEWUSER, NEWPID, NEWNET."""
_OPEN_FLAGS = (
    0, 0o1, 0o2, 0o100, 0o200, 0o1000, 0o2000, 0o4000, 0o20000, 0o40000, 0o200000, 0o400000,
    0o2000000, 0o20000000, 0o20200000, 0o20000002, 0o20000001, 0o101, 0o1102, 0o2000100,
)  # fmt: skip
"""Open flags as x86_64 and aarch64 spell them: each write flag, O_TMPFILE (with and without
O_DIRECTORY, O_RDWR, O_WRONLY), O_ASYNC, O_NONBLOCK, O_CLOEXEC, O_DIRECTORY of either arch."""
_ARG0 = (
    0, 1, 17, OLD_PID, OLD_PID + 1, OLD_PID - 1, 0xFFFFFFFF, 0xFFFFFFFE, 1 << 32 | OLD_PID,
    0xFFFFFFFF_00000000, _CLONE_THREAD, 0x003D0F00, 0x003D0F00 & ~_CLONE_THREAD, 0x01200011,
    *_NAMESPACE_FLAGS, *(flag | 0x003D0F00 for flag in _NAMESPACE_FLAGS),
)  # fmt: skip
"""kill's and the sigqueue calls' pids (the run's, its neighbours, groups, -1, high words);
clone's flags (a thread as glibc makes one, fork's, each namespace flag); prlimit64's pid."""
_ARG1 = (
    *range(0, 21), 1024, 1025, 1026, 1027, 1 << 32 | 8,
    0x5412, 0x541C, 0x5452, 0x8901, 0x8902, 0x40086602, 0x401C5820, 0x541B, 0x5413,
    0x80086601, 0x801C581F, 0x5421, 0x1 << 32 | 0x5412, *_OPEN_FLAGS,
)  # fmt: skip
"""fcntl commands (every one to F_NOTIFY, the leases), each refused ioctl and neighbours
(FIONBIO, the getters), open's flags."""
_ARG2 = (*_OPEN_FLAGS, 0o20000 | 0o4000, 0o4000, 1 << 32 | 0o20000, 0xFFFFFFFF)
"""openat's flags; fcntl F_SETFL's (O_ASYNC alone, with O_NONBLOCK, in the high word)."""


def _vectors() -> list[tuple[int, ...]]:
    vectors: set[tuple[int, ...]] = {(0,) * 6, (0xFFFFFFFF_FFFFFFFF,) * 6}
    for position, values in enumerate((_ARG0, _ARG1, _ARG2)):
        for value in values:
            args = [0] * 6
            args[position] = value
            vectors.add(tuple(args))
            vectors.add((value,) * 6)
    for command in (4, 8, 10, 15, 1024, 1026, 3):  # F_SETFL with each flag; the others too
        vectors.update((0, command, flags, 0, 0, 0) for flags in _ARG2)
    for fd in (0, 3, 0xFFFFFF9C):  # openat with AT_FDCWD
        vectors.update((fd, 0, flags, 0, 0, 0) for flags in _OPEN_FLAGS)
    return sorted(vectors)


VECTORS = _vectors()
NUMBERS_TRIED = (
    *range(0, 501),
    *(0x40000000 | n for n in (0, 1, 2, 56, 59, 62, 257, 435, 437, 512, 545)),
    0x3FFFFFFF, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFF,
)  # fmt: skip
"""Every number to 500 (the tables end at 469), x32's (kill), every other number's bit."""


def run_bpf(program: bytes, data: bytes) -> tuple[int, bool, int]:
    """(verdict, whether it read past nr and arch, instructions run) of a seccomp cBPF
    program, checked as the kernel checks one (known opcodes, aligned loads inside
    seccomp_data, forward jumps inside the program, a return last)."""
    instructions = list(struct.iter_unpack("=HBBI", program))
    assert 0 < len(instructions) <= 4096
    assert instructions[-1][0] == 0x06, "the last instruction must return"
    accumulator, pc, read_args, steps = 0, 0, False, 0
    while True:
        code, jt, jf, k = instructions[pc]
        steps += 1
        if code == 0x20:  # ld w abs
            assert k % 4 == 0 and k + 4 <= _SECCOMP_DATA.size, k
            read_args |= k >= 8
            (accumulator,) = struct.unpack_from("=I", data, k)
            pc += 1
        elif code == 0x54:  # and k
            accumulator &= k
            pc += 1
        elif code == 0x05:  # ja
            pc += 1 + k
        elif code in (0x15, 0x35, 0x45):  # jeq, jge, jset
            taken = {0x15: accumulator == k, 0x35: accumulator >= k, 0x45: accumulator & k}[code]
            pc += 1 + (jt if taken else jf)
        elif code == 0x06:  # ret k
            return k, read_args, steps
        else:
            raise AssertionError(f"opcode {code:#x} at {pc}")
        assert pc < len(instructions), "a jump out of the program"


def verdicts(program: bytes, arch: str) -> dict[tuple[int, int, tuple[int, ...]], int]:
    """The program's verdict for each arch value, number and argument vector tried; where a
    number's verdict reads no argument (with all zero) it cannot depend on one: one entry."""
    table: dict[tuple[int, int, tuple[int, ...]], int] = {}
    for audit in (_AUDIT[arch], *(a for a in (*_AUDIT.values(), _I386, 0) if a != _AUDIT[arch])):
        for number in NUMBERS_TRIED if audit == _AUDIT[arch] else (0, 1, 59, 231, 0xFFFFFFFF):
            zero = (0,) * 6
            verdict, read_args, _ = run_bpf(program, _SECCOMP_DATA.pack(number, audit, 0, *zero))
            if not read_args:
                table[audit, number, zero] = verdict
                continue
            for args in VECTORS:
                data = _SECCOMP_DATA.pack(number, audit, 0x7F0000001000, *args)
                table[audit, number, args] = run_bpf(program, data)[0]
    return table


def old_program(arch: str, read_only_files: bool) -> bytes:
    return zlib.decompress(base64.b64decode("".join(OLD_FILTERS[arch, read_only_files])))


def new_program(arch: str, read_only_files: bool, monkeypatch: pytest.MonkeyPatch) -> bytes:
    with monkeypatch.context() as patch:
        patch.setattr(linux, "ARCH", arch)
        syscall_filter = SyscallFilter(read_only_files=read_only_files)
    syscall_filter.program(1)  # a pid written before is overwritten
    return syscall_filter.program(OLD_PID)


def differences(old: bytes, new: bytes, arch: str) -> list[str]:
    """Each (arch, nr, args) on which the two programs disagree (a reading of args by one
    only is compared on every vector)."""
    old_table, new_table = verdicts(old, arch), verdicts(new, arch)
    found = []
    for key in sorted(old_table.keys() | new_table.keys()):
        audit, number, args = key
        zero = (0,) * 6
        a = old_table.get(key, old_table.get((audit, number, zero)))
        b = new_table.get(key, new_table.get((audit, number, zero)))
        if a != b:
            found.append(f"arch {audit:#x} nr {number:#x} args {args}: {a:#x} before, {b:#x} now")
    return found


ARCHES = pytest.mark.parametrize("arch", ["x86_64", "aarch64"])
MODES = pytest.mark.parametrize("read_only_files", [False, True], ids=["landlock", "read-only"])


@ARCHES
@MODES
def test_the_filter_decides_every_call_as_the_linear_filter_did(
    arch: str, read_only_files: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every syscall number 0..500, x32's and the other bits, the other ABIs' arch values, and
    each argument value a rule tells apart: the same verdict (allow, EPERM, EACCES, ENOSYS,
    kill) from today's filter as from the frozen linear one; and any call in a few steps."""
    new = new_program(arch, read_only_files, monkeypatch)
    assert differences(old_program(arch, read_only_files), new, arch) == []
    audit = _AUDIT[arch]
    steps = [run_bpf(new, _SECCOMP_DATA.pack(n, audit, 0, *[0] * 6))[2] for n in range(501)]
    assert max(steps) <= 30, max(steps)


def _drop(name: str, value: object) -> Callable[[pytest.MonkeyPatch], None]:
    return lambda patch: patch.setattr(seccomp, name, value)


MUTATIONS: dict[str, Callable[[pytest.MonkeyPatch], None]] = {
    "a denied call": _drop("DENIED", tuple(n for n in seccomp.DENIED if n != "ptrace")),
    "the last denied call": _drop("DENIED", seccomp.DENIED[:-1]),
    "clone3's ENOSYS": _drop("_ENOSYS_CALLS", ("openat2",)),
    "a file write": _drop("FILE_WRITES", seccomp.FILE_WRITES[1:]),
    "an ioctl": _drop("_REFUSED_IOCTLS", seccomp._REFUSED_IOCTLS[:-1]),
    "an fcntl": _drop("_SIGNAL_OWNER_FCNTLS", seccomp._SIGNAL_OWNER_FCNTLS[1:]),
    "F_SETFL O_ASYNC": _drop("_O_ASYNC", 0),
    "O_TMPFILE": _drop("_O_TMPFILE", 0),
    "O_TRUNC": _drop("_WRITE_FLAGS", seccomp._WRITE_FLAGS & ~os.O_TRUNC),
    "openat's flags": _drop("_OPEN_FLAGS_ARG", {"open": 1}),
    "a namespace flag": _drop("_NAMESPACE_FLAGS", seccomp._NAMESPACE_FLAGS & ~0x10000000),
    "a signal's own pid": _drop("_OWN_PID_IN_ARG0", ("kill", "tgkill", "rt_sigqueueinfo")),
    "x32": _drop("_X32_SYSCALL_BIT", 0xFFFFFFFF),
    "the arch check": _drop("_AUDIT_ARCH", {"x86_64": 0xC00000B7, "aarch64": 0xC000003E}),
}


@pytest.mark.parametrize("mutation", list(MUTATIONS))
def test_the_comparison_finds_a_rule_dropped(
    mutation: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each rule weakened in turn (x86_64, read-only mode: every rule there) makes a
    difference: the comparison above would see it."""
    MUTATIONS[mutation](monkeypatch)
    new = new_program("x86_64", True, monkeypatch)
    assert differences(old_program("x86_64", True), new, "x86_64") != []


def _verdict(program: bytes, nr: int, args: tuple[int, ...], arch: int) -> int:
    """What classic BPF `program` answers for a call (`seccomp_data`: nr, arch, args)."""
    data = struct.pack("=iI", nr, arch) + struct.pack("=Q", 0) + struct.pack("=6Q", *args)
    accumulator, pc = 0, 0
    instructions = [struct.unpack_from("=HBBI", program, i) for i in range(0, len(program), 8)]
    while True:
        code, jt, jf, k = instructions[pc]
        pc += 1
        if code == 0x20:  # LD W ABS
            accumulator = struct.unpack_from("=I", data, k)[0]
        elif code == 0x54:  # AND K
            accumulator &= k
        elif code in (0x15, 0x35, 0x45):  # JEQ, JGE, JSET K
            taken = {0x15: accumulator == k, 0x35: accumulator >= k, 0x45: accumulator & k}
            pc += jt if taken[code] else jf
        elif code == 0x05:  # JA
            pc += k
        elif code == 0x06:  # RET K
            return k
        else:
            raise AssertionError(f"opcode {code:#x} not emulated")


def _stricter(first: int, second: int) -> int:
    """The verdict the kernel keeps of two stacked filters' (the lower signed action)."""
    action = lambda v: struct.unpack("=i", struct.pack("=I", v & 0xFFFF0000))[0]  # noqa: E731
    return first if action(first) <= action(second) else second


def test_a_templates_filter_and_its_runs_stack_to_the_whole_filter() -> None:
    """For every call number and a spread of arguments (clone flags, pids, fcntl and ioctl
    requests, open flags), the template's part and a run's part, stacked, answer exactly
    what the whole program filter answers; and a run's part is a short program."""
    pid = 4242
    whole = SyscallFilter(part="whole").program(pid)
    template = SyscallFilter(part="template").program(1111)
    run = SyscallFilter(part="template_run").program(pid)
    assert len(run) * 5 < len(whole)
    arch = seccomp._AUDIT_ARCH[linux.ARCH]
    values = [0, 1, 2, 3, 4, 8, 15, 17, pid, 1111, -1 & 0xFFFFFFFF, 0x5452, 0x8901, 0x40086602]
    values += [linux.CLONE_THREAD | 0x11, 0x11, linux.CLONE_NEWNET, os.O_WRONLY, 0o20000000]
    for nr in range(500):
        for first in values:
            for second in (0, 10, 0o20000):
                args = (first, second, second, 0, 0, 0)
                stacked = _stricter(
                    _verdict(run, nr, args, arch), _verdict(template, nr, args, arch)
                )
                assert stacked == _verdict(whole, nr, args, arch), (nr, args)
