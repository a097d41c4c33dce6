"""Shared fixtures (a real reward-service process on a loopback port) and the suite's rules:
`alone` tests run with no other test beside them, `heavy` ones with no other heavy one, and
in CI (`REWARD_CI=1`, set by `.ci/run`) a tool CI installs that is missing fails its tests
instead of skipping them."""

from __future__ import annotations

import fcntl
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import NoReturn

import pytest

from reward_service.testing import LiveServer, Reply, StandIn, live_server

FAKE_SCORER = '{"fake": "reward_service.testing:FakeScorer"}'
TEST_ENV = {
    "REWARD_EXTRA_SCORERS": FAKE_SCORER,
    "REWARD_DEADLINE_S": "4",
    "REWARD_GRADER_TIMEOUT_S": "2",
}

IN_CI = os.environ.get("REWARD_CI") == "1"


def tool_missing(reason: str) -> NoReturn:
    """Skip for want of a tool `.ci/run` installs; in CI, where it must be there, fail."""
    if IN_CI:
        pytest.fail(f"CI promises this tool: {reason}", pytrace=False)
    pytest.skip(reason)


def pytest_runtest_setup(item: pytest.Item) -> None:
    for mark in item.iter_markers("needs_tool"):
        if mark.args[0]:
            tool_missing(mark.args[0])


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Files of slow tests that take no turns (Ray, the image install) first, so their long
    waits overlap the rest; files that take turns stay spread out, keeping workers busy."""
    turns = {i.path for i in items for mark in ("alone", "heavy") if i.get_closest_marker(mark)}
    slow = {item.path for item in items if item.get_closest_marker("slow")} - turns
    items.sort(key=lambda item: item.path not in slow)


class _Turns:
    """Locks on files shared by one run's xdist workers. Each test holds `turn` shared, an
    `alone` test exclusive (a test waiting to be alone bars new shared holders); a `heavy`
    test also holds `heavy`, so heavy tests take turns and light ones run beside them."""

    def __init__(self, run: str) -> None:
        base = Path(tempfile.gettempdir()) / f"reward-service-tests-{run}"
        self._gate, self._turn, self._heavy = (
            os.open(f"{base}.{name}", os.O_RDWR | os.O_CREAT, 0o600)
            for name in ("gate", "turn", "heavy")
        )

    def take(self, alone: bool, heavy: bool) -> None:
        if heavy:
            fcntl.flock(self._heavy, fcntl.LOCK_EX)
        fcntl.flock(self._gate, fcntl.LOCK_EX)
        try:
            fcntl.flock(self._turn, fcntl.LOCK_EX if alone else fcntl.LOCK_SH)
        finally:
            fcntl.flock(self._gate, fcntl.LOCK_UN)

    def give_back(self) -> None:
        fcntl.flock(self._turn, fcntl.LOCK_UN)
        fcntl.flock(self._heavy, fcntl.LOCK_UN)


_RUN = os.environ.get("PYTEST_XDIST_TESTRUNUID")
_TURNS = _Turns(_RUN) if _RUN else None


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item) -> Iterator[None]:
    if _TURNS is None:
        return (yield)
    alone = item.get_closest_marker("alone") is not None
    _TURNS.take(alone, heavy=alone or item.get_closest_marker("heavy") is not None)
    try:
        return (yield)
    finally:
        _TURNS.give_back()


def gradings_in_flight(metrics: str) -> float:
    """The `reward_gradings_in_flight` gauge in a /metrics text."""
    for line in metrics.splitlines():
        if line.startswith("reward_gradings_in_flight "):
            return float(line.split()[1])
    raise AssertionError("no reward_gradings_in_flight in /metrics")


@pytest.fixture(scope="session")
def server() -> Iterator[LiveServer]:
    """One shared two-worker server for tests that leave it as they found it."""
    with live_server(workers=2, env=TEST_ENV) as running:
        yield running


@pytest.fixture
def stand_in() -> Iterator[StandIn]:
    """A stand-in server that is ready and has no scoring routes yet."""
    with StandIn() as server:
        server.route("/readyz", lambda _: Reply(200, {"status": "ready"}))
        yield server


@pytest.fixture(scope="session")
def reward_url() -> Iterator[str]:
    """The base URL of a real `reward-service serve` with one worker, shared by the session."""
    with live_server(workers=1) as server:
        yield server.url
