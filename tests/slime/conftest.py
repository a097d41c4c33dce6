"""Fixtures for the SLIME integration: a live reward service and a scripted stand-in."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from reward_service.testing import Reply, StandIn, live_server


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
