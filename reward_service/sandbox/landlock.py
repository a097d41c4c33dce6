"""The landlock layer: a ruleset built once in the zygote, applied by every run.

Stdlib only (the zygote imports it). A run may read (and execute) only the
paths it is given to read (a run that execs its program: execute only that
program and its loader), write only beneath its scratch root, bind or
connect no TCP port (ABI 4+), and signal or reach through abstract unix
sockets nothing outside its own domain (ABI 6+). Each piece is handled only
where the kernel's ABI has it; `pieces` says which.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Iterable

from reward_service.sandbox import linux

_EXECUTE = 1 << 0
_WRITE_FILE = 1 << 1
_READ_FILE = 1 << 2
_READ_DIR = 1 << 3
_TRUNCATE = 1 << 14
_IOCTL_DEV = 1 << 15
_FS_BY_ABI = {1: (1 << 13) - 1, 2: (1 << 14) - 1, 3: (1 << 15) - 1, 5: (1 << 16) - 1}
_FILE_ONLY = _EXECUTE | _WRITE_FILE | _READ_FILE | _TRUNCATE | _IOCTL_DEV
_NET_TCP = (1 << 0) | (1 << 1)
_SCOPES = (1 << 0) | (1 << 1)  # abstract unix sockets, signals
_RULE_PATH_BENEATH = 1
_CREATE_RULESET_VERSION = 1


def abi() -> int:
    """The kernel's Landlock ABI version; 0 when Landlock is absent or disabled."""
    try:
        return linux.syscall(linux.LANDLOCK_CREATE_RULESET, None, 0, _CREATE_RULESET_VERSION)
    except OSError:
        return 0


_HELD: dict[str, tuple[int, bool]] = {}
"""Read paths opened (O_PATH) once per process, with whether each is a directory: a rule
names the inode the path had then (a path replaced since is not readable, not the new one).
Runs close them (`confine._own_fds`)."""
_ABI: list[int] = []


class Ruleset:
    """A ruleset fd: `read` paths readable, `write` paths fully usable, the rest denied.

    With `execute` (a run that execs its program) only those files may be executed
    (the program, its loader), nothing read or written; else whatever is readable."""

    def __init__(
        self,
        read: Iterable[str],
        write: Iterable[str],
        execute: Iterable[str] | None = None,
        read_once: Iterable[str] = (),
    ) -> None:
        if not _ABI:
            _ABI.append(abi())
        version = _ABI[0]
        if version < 1:
            raise OSError(95, "landlock unavailable")
        handled_fs = _FS_BY_ABI[max(v for v in _FS_BY_ABI if v <= version)]
        attributes = struct.pack("=Q", handled_fs)
        self.pieces = ["fs"]
        if version >= 4:
            attributes += struct.pack("=Q", _NET_TCP)
            self.pieces.append("tcp")
        if version >= 6:
            attributes += struct.pack("=Q", _SCOPES)
            self.pieces.append("scope")
        self.fd = linux.syscall(linux.LANDLOCK_CREATE_RULESET, attributes, len(attributes), 0)
        read_access = _READ_FILE | _READ_DIR | (_EXECUTE if execute is None else 0)
        write_access = handled_fs & ~(_EXECUTE if execute is not None else 0)
        for path in read:
            self._allow(path, read_access, held=True)
        for path in read_once:
            self._allow(path, read_access)
        for path in write:
            self._allow(path, write_access)
        for path in execute or ():
            self._allow(path, _EXECUTE | _READ_FILE)

    def _allow(self, path: str, access: int, held: bool = False) -> None:
        if held:
            opened = _HELD.get(path)
            if opened is None:
                try:
                    fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
                except OSError:
                    return
                opened = _HELD[path] = (fd, os.path.isdir(path))
            fd, is_dir = opened
            if not is_dir:
                access &= _FILE_ONLY
            rule = struct.pack("=Qi", access, fd)
            linux.syscall(linux.LANDLOCK_ADD_RULE, self.fd, _RULE_PATH_BENEATH, rule, 0)
            return
        try:
            fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
        except OSError:
            return
        try:
            if not os.path.isdir(path):
                access &= _FILE_ONLY
            rule = struct.pack("=Qi", access, fd)
            linux.syscall(linux.LANDLOCK_ADD_RULE, self.fd, _RULE_PATH_BENEATH, rule, 0)
        finally:
            os.close(fd)

    def restrict_self(self, fd: int) -> None:
        """Confine the calling thread with this ruleset, now held as `fd` (no_new_privs set)."""
        linux.syscall(linux.LANDLOCK_RESTRICT_SELF, fd, 0)
