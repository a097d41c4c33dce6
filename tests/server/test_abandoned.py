"""Work whose client has gone is dropped: queued answers never run, running ones are stopped."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator

import httpx
import pytest

from reward_service.testing import LiveServer, live_server
from tests.conftest import TEST_ENV, gradings_in_flight

SLEEP_S = 60
"""How long each abandoned answer would hold its worker: far past the test's own waits."""


@pytest.fixture
def patient_server() -> Iterator[LiveServer]:
    """Two workers and a deadline past `SLEEP_S`: only a hang-up can end these gradings."""
    env = {**TEST_ENV, "REWARD_DEADLINE_S": str(SLEEP_S + 30)}
    with live_server(workers=2, env=env) as running:
        yield running


def _metric(text: str, name: str, **labels: str) -> float:
    wanted = ",".join(f'{key}="{value}"' for key, value in labels.items())
    prefix = f"{name}{{{wanted}}} " if labels else f"{name} "
    return sum(float(line.split()[-1]) for line in text.splitlines() if line.startswith(prefix))


async def _post_then_hang_up(url: str, answers: int) -> None:
    """Post `answers` slow answers, each on its own connection; once all are in flight, close
    every connection without reading an answer (verl's client giving up)."""
    body = {"response": f"sleep:{SLEEP_S}", "label": {"scorer": "fake"}}
    async with httpx.AsyncClient(base_url=url, timeout=SLEEP_S * 2) as client:
        posts = [asyncio.ensure_future(client.post("/score", json=body)) for _ in range(answers)]
        async with httpx.AsyncClient(base_url=url, timeout=10) as probe:
            while gradings_in_flight((await probe.get("/metrics")).text) < answers:
                await asyncio.sleep(0.05)
        for post in posts:
            post.cancel()
        await asyncio.gather(*posts, return_exceptions=True)


def test_hung_up_requests_free_their_workers_at_once(patient_server: LiveServer) -> None:
    """Six minute-long answers (two running, four queued) whose client hangs up: within
    seconds nothing is in flight, the two running ones' workers were killed and replaced
    (`abandoned`), the hang-ups are counted, and the next answer is graded at once."""
    asyncio.run(_post_then_hang_up(patient_server.url, 6))
    hung_up = time.monotonic()
    with httpx.Client(base_url=patient_server.url, timeout=10) as client:
        while gradings_in_flight(client.get("/metrics").text) > 0:
            assert time.monotonic() - hung_up < 10, "abandoned gradings still in flight"
            time.sleep(0.1)
        answer = client.post("/score", json={"response": "1.0", "label": {"scorer": "fake"}})
        metrics = client.get("/metrics").text
    assert answer.json() == 1.0
    assert _metric(metrics, "reward_worker_restarts_total", cause="abandoned") == 2
    assert _metric(metrics, "reward_rejected_requests_total", reason="ClientGone") == 6
