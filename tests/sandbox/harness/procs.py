"""The processes visible in this PID namespace, read from /proc (no psutil in the test path)."""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass
from pathlib import Path

PAGE = os.sysconf("SC_PAGE_SIZE")


@dataclass(frozen=True)
class Stat:
    """One process as its `/proc/PID/stat` line shows it: all that the loops which watch a
    namespace many times a second read (a scan reads one file per process, not three)."""

    pid: int
    ppid: int
    pgid: int
    sid: int
    state: str
    comm: str
    rss_bytes: int

    @property
    def alive(self) -> bool:
        """Running or sleeping: not a zombie waiting to be reaped, not dead."""
        return self.state not in ("Z", "X")


@dataclass(frozen=True)
class Proc(Stat):
    """One process as /proc shows it: its stat line, its owner and its command line."""

    cmdline: str
    uid: int

    def describe(self) -> str:
        return (
            f"pid {self.pid} ppid {self.ppid} sid {self.sid} uid {self.uid} state {self.state} "
            f"comm {self.comm!r} cmdline {self.cmdline[:120]!r}"
        )


def stat(pid: int, proc: Path = Path("/proc")) -> Stat | None:
    """The process `pid` as its stat line shows it, or None when it is gone."""
    try:
        fd = os.open(f"{proc}/{pid}/stat", os.O_RDONLY)
        try:
            line = os.read(fd, 4096).decode(errors="replace")
        finally:
            os.close(fd)
    except OSError:
        return None
    comm = line[line.index("(") + 1 : line.rindex(")")]
    fields = line[line.rindex(")") + 2 :].split()
    return Stat(
        pid=pid,
        ppid=int(fields[1]),
        pgid=int(fields[2]),
        sid=int(fields[3]),
        state=fields[0],
        comm=comm,
        rss_bytes=int(fields[21]) * PAGE,
    )


def read(pid: int, proc: Path = Path("/proc")) -> Proc | None:
    """The process `pid`, or None when it is gone."""
    seen = stat(pid, proc)
    if seen is None:
        return None
    base = proc / str(pid)
    try:
        uid = base.stat().st_uid
        cmdline = (base / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except (OSError, ValueError):
        return None
    return Proc(**vars(seen), cmdline=cmdline.strip(), uid=uid)


def pids(proc: Path = Path("/proc")) -> list[int]:
    """Every PID listed in `proc`."""
    with contextlib.suppress(OSError):
        return sorted(int(name) for name in os.listdir(proc) if name.isdigit())
    return []


def processes(proc: Path = Path("/proc")) -> list[Proc]:
    """Every live (non-zombie) process listed in `proc`."""
    found = (read(pid, proc) for pid in pids(proc))
    return [p for p in found if p is not None and p.alive]


def stats(proc: Path = Path("/proc")) -> list[Stat]:
    """Every live (non-zombie) process listed in `proc`, from its stat line alone."""
    found = (stat(pid, proc) for pid in pids(proc))
    return [p for p in found if p is not None and p.alive]


def descendants(root: int, proc: Path = Path("/proc")) -> list[Proc]:
    """The live processes below `root` (not `root` itself)."""
    everything = processes(proc)
    below, frontier = [], {root}
    while frontier:
        step = [p for p in everything if p.ppid in frontier]
        below += step
        frontier = {p.pid for p in step}
    return below
