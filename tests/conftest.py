"""Shared fixtures: a real reward-service process on a loopback port."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from reward_service.testing import LiveServer, Reply, StandIn, live_server

FAKE_SCORER = '{"fake": "reward_service.testing:FakeScorer"}'
TEST_ENV = {
    "REWARD_EXTRA_SCORERS": FAKE_SCORER,
    "REWARD_DEADLINE_S": "4",
    "REWARD_GRADER_TIMEOUT_S": "2",
}


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
