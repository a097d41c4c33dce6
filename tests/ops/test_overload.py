"""Overload is refused at once with 503 + Retry-After, and the service recovers."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import httpx
import pytest

from reward_service.testing import LiveServer, live_server
from tests.conftest import FAKE_SCORER
from tests.test_faults import LivenessProbe

CAPACITY = 8


@pytest.fixture
def small() -> Iterator[LiveServer]:
    """One worker and room for 8 requests at a time."""
    env = {"REWARD_EXTRA_SCORERS": FAKE_SCORER, "REWARD_MAX_QUEUE": str(CAPACITY)}
    with live_server(workers=1, env=env) as running:
        yield running


async def _burst(url: str, count: int) -> list[httpx.Response]:
    limits = httpx.Limits(max_connections=count)
    async with httpx.AsyncClient(base_url=url, timeout=60, limits=limits) as client:
        body = {"response": "sleep:0.05"}
        return await asyncio.gather(*(client.post("/score/fake", json=body) for _ in range(count)))


def test_ten_times_capacity_gets_503_with_retry_after(small: LiveServer) -> None:
    """At 10x capacity the excess is refused fast; accepted ones are right; /livez stays fast."""
    baseline = small.rss_bytes()
    with LivenessProbe(small.url) as probe:
        rounds = [asyncio.run(_burst(small.url, CAPACITY * 10)) for _ in range(3)]
    responses = [r for burst in rounds for r in burst]
    refused = [r for r in responses if r.status_code == 503]
    accepted = [r for r in responses if r.status_code == 200]
    assert len(refused) + len(accepted) == len(responses)
    assert refused, "nothing was refused at 10x capacity"
    assert all(int(r.headers["retry-after"]) >= 1 for r in refused)
    assert all(r.json() == 1.0 for r in accepted)
    assert probe.slowest_s < 1.0
    assert small.rss_bytes() < baseline + 200 * 1024 * 1024


def test_service_recovers_after_overload(small: LiveServer) -> None:
    """After a burst, requests within capacity all succeed."""
    asyncio.run(_burst(small.url, CAPACITY * 10))
    after = asyncio.run(_burst(small.url, CAPACITY))
    assert [r.status_code for r in after] == [200] * CAPACITY
