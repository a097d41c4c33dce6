"""Shared fixtures: a real reward-service process on a loopback port."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from reward_service.testing import LiveServer, live_server

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
