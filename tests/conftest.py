"""Shared fixtures (a real reward-service process on a loopback port) and the suite's rules:
`alone` tests run with no other test beside them, `heavy` ones with no other heavy one, and
in CI (`REWARD_CI=1`, set by `.ci/run`) a tool CI installs that is missing fails its tests
instead of skipping them."""

from __future__ import annotations

import fcntl
import os
import shutil
import sys
import tempfile
from collections import Counter
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
    # A worker's first instruction answer loads the checkers and langdetect's profiles
    # (2 s of CPU): on a loaded test machine more than the tests' short deadline.
    "REWARD_SCORER_DEADLINES": '{"ifeval": 15, "ifbench": 15}',
}

IN_CI = os.environ.get("REWARD_CI") == "1"

# Bytecode written and reused: the suite starts some hundreds of Python processes (xdist
# workers, servers, their grading workers), and with PYTHONDONTWRITEBYTECODE set (as on
# these machines) each compiled the project and rewrote pytest's assertions anew: a fresh
# clone's suite took 657 s where one with bytecode at hand took 584 s.
sys.dont_write_bytecode = False
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)


def tool_missing(reason: str) -> NoReturn:
    """Skip for want of a tool `.ci/run` installs; in CI, where it must be there, fail."""
    if IN_CI:
        pytest.fail(f"CI promises this tool: {reason}", pytrace=False)
    pytest.skip(reason)


def pytest_runtest_setup(item: pytest.Item) -> None:
    for mark in item.iter_markers("needs_tool"):
        if mark.args[0]:
            tool_missing(mark.args[0])


TURNS = "turns"
"""The xdist group of every file holding an `alone` or `heavy` test: one worker runs them one
after another, from the start of the run, while the other workers run the rest."""


@pytest.hookimpl(tryfirst=True)  # before xdist's own hook reads the groups
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Each file an xdist group of its own (`--dist loadgroup`: a module's live server starts
    once), but the files that take turns one group, first in the queue: the chain of turns
    is the run's longest, so it starts at once, its `alone` tests last (each waits for every
    other worker's test in progress, so early they would idle two workers behind a Ray test);
    then the other slow files (Ray, the image install); then the others, most tests first."""
    turns = {i.path for i in items for mark in ("alone", "heavy") if i.get_closest_marker(mark)}
    slow = {item.path for item in items if item.get_closest_marker("slow")} - turns
    sizes = Counter(item.path for item in items)
    items.sort(
        key=lambda item: (
            item.path not in turns,
            item.get_closest_marker("alone") is not None,
            item.path not in slow,
            -sizes[item.path],
        )
    )
    for item in items:
        group = TURNS if item.path in turns else item.path.relative_to(config.rootpath).as_posix()
        item.add_marker(pytest.mark.xdist_group(group))


@pytest.hookimpl(trylast=True)  # after xdist's own hook wrote the groups into the node ids
def pytest_collection_finish(session: pytest.Session) -> None:
    """Stop a run whose groups would be lost: xdist schedules by the `@group` suffix its
    hook adds to each node id, which pytest 9 ignores (its ids are no longer `_nodeid`), and
    then splits every group across workers: module fixtures start once per worker and the
    hostile campaigns run side by side."""
    if not getattr(session.config.option, "loadgroup", False):
        return
    lost = [
        i.nodeid
        for i in session.items
        if i.get_closest_marker("xdist_group") and "@" not in i.nodeid
    ]
    if lost:
        raise pytest.UsageError(
            f"xdist groups lost ({len(lost)} tests, e.g. {lost[0]}): pin pytest<9"
        )


_TURNS_DIR = "REWARD_TEST_TURNS_DIR"


def pytest_configure(config: pytest.Config) -> None:
    """Before any test (in the xdist controller, before its workers): the run launcher built,
    as the service's start-up builds it, so that every sandbox a test starts from the
    settings starts its runs as production does. The controller makes the directory of
    the workers' lock files, and removes it."""
    if hasattr(config, "workerinput"):
        return
    from reward_service.scorers.code.settings import CodeSettings, prepare_launcher

    prepare_launcher(CodeSettings())
    if config.getoption("numprocesses", None):
        directory = tempfile.mkdtemp(prefix="reward-service-turns-")
        os.environ[_TURNS_DIR] = directory  # the workers it starts inherit it
        config.add_cleanup(lambda: shutil.rmtree(directory, ignore_errors=True))


class _Turns:
    """A lock on a file shared by one run's xdist workers: each test holds it shared, an
    `alone` test exclusive (a test waiting to be alone bars new shared holders through
    `gate`). `heavy` tests need no lock: the one worker of group `turns` runs them in turn."""

    def __init__(self, directory: Path) -> None:
        self._gate, self._turn = (
            os.open(directory / name, os.O_RDWR | os.O_CREAT, 0o600) for name in ("gate", "turn")
        )

    def take(self, alone: bool) -> None:
        fcntl.flock(self._gate, fcntl.LOCK_EX)
        try:
            fcntl.flock(self._turn, fcntl.LOCK_EX if alone else fcntl.LOCK_SH)
        finally:
            fcntl.flock(self._gate, fcntl.LOCK_UN)

    def give_back(self) -> None:
        fcntl.flock(self._turn, fcntl.LOCK_UN)


_TURNS = (
    _Turns(Path(os.environ[_TURNS_DIR]))
    if "PYTEST_XDIST_WORKER" in os.environ and _TURNS_DIR in os.environ
    else None
)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item) -> Iterator[None]:
    if _TURNS is None:
        return (yield)
    _TURNS.take(alone=item.get_closest_marker("alone") is not None)
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
