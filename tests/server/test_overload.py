"""Overload is refused at once with 503 + Retry-After, and the service recovers."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator

import httpx
import pytest

from reward_service.testing import LivenessProbe, LiveServer, live_server
from tests.conftest import FAKE_SCORER

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
    """At 10x capacity the excess is refused; accepted ones are right; /livez keeps answering."""
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
    assert (probe.failures, probe.answers > 0) == (0, True)
    assert small.rss_bytes() < baseline + 200 * 1024 * 1024


def test_service_recovers_after_overload(small: LiveServer) -> None:
    """After a burst, requests within capacity all succeed."""
    asyncio.run(_burst(small.url, CAPACITY * 10))
    after = asyncio.run(_burst(small.url, CAPACITY))
    assert [r.status_code for r in after] == [200] * CAPACITY


MiB = 1024 * 1024
BUDGET = 3 * MiB
LARGE = int(0.9 * MiB)


@pytest.fixture
def budget() -> Iterator[LiveServer]:
    """One worker, bodies of up to 1 MiB, and 3 MiB of body bytes held at a time."""
    env = {
        "REWARD_EXTRA_SCORERS": FAKE_SCORER,
        "REWARD_MAX_BODY_BYTES": str(MiB),
        "REWARD_MAX_PENDING_BYTES": str(BUDGET),
    }
    with live_server(workers=1, env=env) as running:
        yield running


def _padded(response: str, size: int) -> bytes:
    """A fake-scorer body of exactly `size` bytes, the padding in the prompt."""
    head = f'{{"response": "{response}", "prompt": "'.encode()
    return head + b"x" * (size - len(head) - 2) + b'"}'


async def _in_flight(client: httpx.AsyncClient) -> float:
    text = (await client.get("/metrics")).text
    [line] = [line for line in text.splitlines() if line.startswith("reward_gradings_in_flight ")]
    return float(line.split()[1])


async def _past_the_budget(url: str) -> dict[str, list[httpx.Response]]:
    """Hold 2.7 MiB with three slow bodies, then send more, declared and chunked."""
    headers = {"content-type": "application/json"}
    async with httpx.AsyncClient(base_url=url, timeout=60) as client:
        holding = [
            asyncio.ensure_future(
                client.post("/score/fake", content=_padded("sleep:3", LARGE), headers=headers)
            )
            for _ in range(3)
        ]
        for _ in range(100):
            if await _in_flight(client) == 3:
                break
            await asyncio.sleep(0.05)

        async def chunked() -> AsyncIterator[bytes]:
            body = _padded("1", MiB // 2)
            for start in range(0, len(body), 64 * 1024):
                yield body[start : start + 64 * 1024]

        during = [
            await client.post("/score/fake", content=_padded("1", MiB // 2), headers=headers),
            await client.post("/score/fake", content=chunked(), headers=headers),
            await client.post("/score/fake", json={"response": "1"}),
        ]
        held = await asyncio.gather(*holding)
        after = [
            await client.post("/score/fake", content=_padded("1", MiB // 2), headers=headers),
            await client.post("/score/fake", content=chunked(), headers=headers),
        ]
    return {"held": held, "during": during, "after": after}


def test_bodies_past_the_byte_budget_get_503(budget: LiveServer) -> None:
    """With 2.7 of 3 MiB held, half-MiB bodies (declared or chunked) get 503 + Retry-After."""
    answers = asyncio.run(_past_the_budget(budget.url))
    declared, chunked, small = answers["during"]
    for refused in (declared, chunked):
        assert refused.status_code == 503, refused.text
        assert int(refused.headers["retry-after"]) >= 1
        assert "body bytes" in refused.json()["error"]
    assert (small.status_code, small.json()) == (200, 1.0), "the budget counts bytes, not requests"
    assert [(r.status_code, r.json()) for r in answers["held"]] == [(200, 1.0)] * 3
    assert [(r.status_code, r.json()) for r in answers["after"]] == [(200, 1.0)] * 2
