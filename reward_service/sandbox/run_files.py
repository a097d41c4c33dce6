"""A program's files: written into a run's (and a build's) directory, read back after the run.

Stdlib only (the zygote imports it). The zygote writes a request's files
into each fresh directory before the fork, after the runner's own (the
source wins a name both want), and reads the files asked for once the run
and everything it left are dead. Reading never follows a link and takes
regular files only, each opened component by component from the
directory's descriptor: a run that leaves `out.txt -> /etc/shadow`, or a
directory swapped for a link, gets nothing read for it.
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from reward_service.sandbox import protocol

Files = Sequence[tuple[str, memoryview]]
"""(relative path, content) of each file a run starts with."""
_DIRECTORY = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_FILE = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_NEW_FILE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


def unpack(
    view: memoryview, offset: int, request: Mapping[str, Any]
) -> tuple[list[tuple[str, memoryview]], list[str], int]:
    """The files (`files`: [path bytes, content bytes] each) and the paths to fetch (`fetch`:
    path bytes each) that follow `offset` in a request's payload, and the offset after them."""
    files: list[tuple[str, memoryview]] = []
    for path_bytes, data_bytes in request.get("files", []):
        path = os.fsdecode(bytes(view[offset : offset + path_bytes]))
        offset += path_bytes
        files.append((path, view[offset : offset + data_bytes]))
        offset += data_bytes
    fetch: list[str] = []
    for path_bytes in request.get("fetch", []):
        fetch.append(os.fsdecode(bytes(view[offset : offset + path_bytes])))
        offset += path_bytes
    return files, fetch, offset


def digest(name: str, source: memoryview, files: Files) -> str:
    """What tells one build from another: `name` (language, dialect), source and files."""
    import hashlib  # here: only a zygote that builds maps OpenSSL's libcrypto

    hashed = hashlib.sha256(f"{name}\0{len(source)}\0".encode())
    hashed.update(source)
    for path, data in files:
        encoded = os.fsencode(path)
        hashed.update(b"%d %d\0" % (len(encoded), len(data)) + encoded)
        hashed.update(data)
    return hashed.hexdigest()


def parts(path: str) -> list[str] | None:
    """The components of a relative path inside a directory (`..` taken lexically: no link
    is ever followed), None for any other path."""
    if path.startswith("/") or "\0" in path:
        return None
    names: list[str] = []
    for name in path.split("/"):
        if name == "..":
            if not names:
                return None
            names.pop()
        elif name not in ("", "."):
            names.append(name)
    return names or None


def write_files(workdir: str, files: Files) -> None:
    """Each file at its path under `workdir`, its directories made (never through a link:
    the runner's own may be among them); one whose place is taken (the program's source, a
    file where a directory should be) is left out."""
    for path, data in files:
        names = parts(path)
        if names is None:
            continue
        with contextlib.suppress(OSError), _parent(workdir, names, make=True) as parent:
            write_file(names[-1], data, parent)


def write_file(path: str, data: memoryview, dir_fd: int | None = None, prefix: bytes = b"") -> None:
    """A new file holding `prefix` then `data`, written from where it is (no buffered file
    object: its write buffer would keep a copy of a small file in the heap every later run
    is forked with; nor `prefix + data`, a copy too)."""
    fd = os.open(path, _NEW_FILE, 0o644, dir_fd=dir_fd)
    try:
        for chunk in (prefix, data):
            left = memoryview(chunk)
            while left:
                left = left[os.write(fd, left) :]
    finally:
        os.close(fd)


def hand_over(workdir: str, uid: int) -> None:
    """Everything inside `workdir` to `uid`, links themselves and never their targets."""
    for root, directories, names in os.walk(workdir):
        for name in (*directories, *names):
            os.chown(os.path.join(root, name), uid, uid, follow_symlinks=False)


def read_files(workdir: str, paths: Sequence[str], max_bytes: int) -> list[tuple[int, memoryview]]:
    """(index in `paths`, content) of each regular file found, in order, while their bytes
    in all fit in `max_bytes`; a file missing, not regular, linked or too big is left out."""
    found: list[tuple[int, memoryview]] = []
    left = max_bytes
    for index, path in enumerate(paths):
        names = parts(path)
        data = None
        if names is not None:
            with contextlib.suppress(OSError), _parent(workdir, names, make=False) as parent:
                data = _read(os.open(names[-1], _FILE, dir_fd=parent), left)
        if data is not None:
            found.append((index, data))
            left -= len(data)
    return found


@contextlib.contextmanager
def _parent(workdir: str, names: list[str], make: bool) -> Iterator[int]:
    """The directory that holds `names`' last component, opened from `workdir` one component
    at a time without following a link (each made first, with `make`)."""
    descriptors = [os.open(workdir, _DIRECTORY)]
    try:
        for name in names[:-1]:
            if make:
                with contextlib.suppress(FileExistsError):
                    os.mkdir(name, 0o755, dir_fd=descriptors[-1])
            descriptors.append(os.open(name, _DIRECTORY, dir_fd=descriptors[-1]))
        yield descriptors[-1]
    finally:
        for fd in descriptors:
            os.close(fd)


def _read(fd: int, most: int) -> memoryview | None:
    """The content of the file open at `fd` (closed here), if it is a regular file of one
    link and at most `most` bytes: read into a buffer no run is forked with (a run's
    files may be an answer's outputs), never into the heap."""
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_nlink != 1 or info.st_size > most:
            return None
        view = memoryview(protocol.private_buffer(min(info.st_size, most) + 1))
        got = 0
        while got < len(view):
            n = os.readv(fd, [view[got:]])
            if n == 0:
                break
            got += n
    finally:
        os.close(fd)
    return view[:got] if got <= most else None
