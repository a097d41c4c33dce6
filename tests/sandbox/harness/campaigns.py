"""A module's per-profile confined campaigns, run a few at a time from the module's start.

A campaign (one profile's confined runner: hostile programs, residue checks; or a confined
live server that hostile answers are posted to) mostly waits: its programs sleep or spin
out their time limits one after another. Run in turn, each
profile's campaign waited for the tests of the one before; started together, later profiles'
campaigns run while earlier ones' tests read their reports. Campaigns cannot see one another:
each has its own PID and mount namespaces, `/tmp`, listeners, report files (and port).
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Generic, TypeVar

import pytest

from tests.sandbox.harness import platforms

AT_ONCE = 2
"""Campaigns running at once: two keep both cores busy while most programs wait."""

T = TypeVar("T")


def selected(session: pytest.Session, module: Path, fixture: str) -> list[str]:
    """The profiles, in `platforms.PROFILES` order, that this run holds tests of `module` for
    through `fixture`'s parameter (`-m "not slow"` keeps `full` alone)."""
    chosen = set()
    for item in session.items:
        callspec = getattr(item, "callspec", None)
        if item.path == module and callspec is not None and fixture in callspec.params:
            chosen.add(callspec.params[fixture])
    return [profile for profile in platforms.PROFILES if profile in chosen]


class Campaigns(Generic[T]):
    """`run(profile)` for every profile given that this platform can set up, `AT_ONCE` at a
    time, started in the order given; `result(profile)` waits for one."""

    def __init__(self, run: Callable[[str], T], profiles: list[str], wait_s: float) -> None:
        self._pool = ThreadPoolExecutor(AT_ONCE, thread_name_prefix="campaign")
        self._wait_s = wait_s
        self._started: dict[str, Future[T]] = {
            profile: self._pool.submit(run, profile)
            for profile in profiles
            if platforms.unavailable(profile) is None
        }

    def result(self, profile: str) -> T:
        """The campaign's outcome; what it raised, raised here."""
        return self._started[profile].result(timeout=self._wait_s)

    def close(self) -> None:
        """Cancel what has not started; wait for what has."""
        self._pool.shutdown(wait=True, cancel_futures=True)

    def __enter__(self) -> Campaigns[T]:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
