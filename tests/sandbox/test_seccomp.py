"""The seccomp filter's argument checks and metadata refusals, each in a forked child of the test.

Every probe aims at the child itself or at a temporary file of its own: if the
filter failed open, the probe changes nothing that matters (a signal owner
that is the child, a mode or owner set to what it was, a size kept).
"""

from __future__ import annotations

import ctypes
import errno
import fcntl
import functools
import os
import signal
import struct
import tempfile
from collections.abc import Callable
from pathlib import Path

import pytest

from reward_service.sandbox import linux
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
