"""How much CPU a grading worker and everything it started are using, read from `/proc`.

The pool asks this of its busy workers while tasks wait for a CPU: a worker whose
program sleeps (or waits on input, a lock, a child) holds a process but no CPU, and
need not hold one of the pool's CPU slots (`pool.WorkerPool`, `spare`). A worker's
tree is the worker, its zygote, the zygote's template and the run or the build (a
compiler and its children); the CPU time of the ones already reaped is counted in their
reaper's (`cutime`, `cstime`), so a tree's total only grows while it lives.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

_TICKS_S = 1.0 / os.sysconf("SC_CLK_TCK")
MAX_PROCESSES = 64
"""Processes read per tree at most: a worker's is four or five deep and one wide (a run
cannot fork); past this the rest is not counted, so the tree looks less busy than it is
only when something has gone wrong elsewhere."""
_RUNNING = frozenset("R")


@dataclass(frozen=True)
class TreeUse:
    """A look at one process tree."""

    cpu_s: float
    """CPU seconds used by the tree's processes, the reaped ones included."""
    running: bool
    """Whether one of them is running or waiting only for a CPU (state `R`) now."""


def tree_use(pid: int) -> TreeUse | None:
    """`pid` and its descendants, or None where `/proc` does not tell (no such process, no
    `children` files: a kernel without `CONFIG_PROC_CHILDREN`)."""
    cpu_s, running = 0.0, False
    todo = [(pid, True)]
    seen = 0
    while todo and seen < MAX_PROCESSES:
        process, every_thread = todo.pop()
        stat = _stat(process)
        if stat is None:
            if process == pid:
                return None
            continue  # it ended between its parent's list and now: its time is its reaper's
        seen += 1
        state, ticks = stat
        cpu_s += ticks * _TICKS_S
        running = running or state in _RUNNING
        children = _children(process, every_thread)
        if children is None:
            if process == pid:
                return None
            continue
        todo.extend((child, False) for child in children)
    return TreeUse(cpu_s, running)


def _stat(pid: int) -> tuple[str, int] | None:
    """State and `utime + stime + cutime + cstime` (clock ticks) from `/proc/<pid>/stat`."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            text = f.read()
    except OSError:
        return None
    fields = text[text.rfind(b")") + 2 :].split()
    try:
        return fields[0].decode(), sum(int(field) for field in fields[11:15])
    except (IndexError, ValueError):
        return None


def _children(pid: int, every_thread: bool) -> list[int] | None:
    """The children of `pid`'s threads (all of them for the worker, whose sandbox may have been
    started by any; the main one below it: a zygote, a template and a compiler fork from it)."""
    try:
        threads = os.listdir(f"/proc/{pid}/task") if every_thread else [str(pid)]
    except OSError:
        return None
    found: list[int] = []
    for thread in threads:
        try:
            with open(f"/proc/{pid}/task/{thread}/children", "rb") as f:
                found.extend(int(child) for child in f.read().split())
        except FileNotFoundError:
            if thread == str(pid):
                return None
        except (OSError, ValueError):
            continue
    return found
