"""The processes visible in this PID namespace, read from /proc (no psutil in the test path)."""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass
from pathlib import Path

PAGE = os.sysconf("SC_PAGE_SIZE")


@dataclass(frozen=True)
class Proc:
    """One process as /proc shows it."""

    pid: int
    ppid: int
    pgid: int
    sid: int
    state: str
    comm: str
    cmdline: str
    rss_bytes: int
    uid: int

    @property
    def alive(self) -> bool:
        """Running or sleeping: not a zombie waiting to be reaped, not dead."""
        return self.state not in ("Z", "X")

    def describe(self) -> str:
        return (
            f"pid {self.pid} ppid {self.ppid} sid {self.sid} uid {self.uid} state {self.state} "
            f"comm {self.comm!r} cmdline {self.cmdline[:120]!r}"
        )


def read(pid: int, proc: Path = Path("/proc")) -> Proc | None:
    """The process `pid`, or None when it is gone."""
    base = proc / str(pid)
    try:
        stat = (base / "stat").read_text()
        uid = (base).stat().st_uid
        cmdline = (base / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except (OSError, ValueError):
        return None
    comm = stat[stat.index("(") + 1 : stat.rindex(")")]
    fields = stat[stat.rindex(")") + 2 :].split()
    return Proc(
        pid=pid,
        ppid=int(fields[1]),
        pgid=int(fields[2]),
        sid=int(fields[3]),
        state=fields[0],
        comm=comm,
        cmdline=cmdline.strip(),
        rss_bytes=int(fields[21]) * PAGE,
        uid=uid,
    )


def pids(proc: Path = Path("/proc")) -> list[int]:
    """Every PID listed in `proc`."""
    with contextlib.suppress(OSError):
        return sorted(int(name) for name in os.listdir(proc) if name.isdigit())
    return []


def processes(proc: Path = Path("/proc")) -> list[Proc]:
    """Every live (non-zombie) process listed in `proc`."""
    found = (read(pid, proc) for pid in pids(proc))
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
