"""Thousands of judge answers in flight at a slow judge: the bound holds, the loop stays free.

The stand-in judge runs as a process of its own, so neither it nor the load
client shares an interpreter with the probe that times `/livez`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import httpx
import pytest

from reward_service.testing import LivenessProbe, LiveServer, live_server, stand_in_judge

CAP = 250
"""The judge's concurrency cap: 2,500 answers at 1-3 s each take about ten rounds. The issue's
5,000 would take 40 s at this cap; a higher cap spends more of this shared 2-CPU machine on
the loop (about 2 ms of CPU per judge call, docs/judge.md)."""
IN_FLIGHT, PER_BATCH, LATENCY_S = 2500, 50, 2.0


@pytest.fixture(scope="module")
def judge_url() -> Iterator[str]:
    """A stand-in judge process answering after 1-3 s."""
    with stand_in_judge(LATENCY_S) as url:
        yield url


@pytest.fixture(scope="module")
def service(judge_url: str) -> Iterator[LiveServer]:
    env = {
        "REWARD_JUDGE__BASE_URL": judge_url,
        "REWARD_JUDGE__MODEL": "judge",
        "REWARD_JUDGE__CONCURRENCY": str(CAP),
        "REWARD_MAX_QUEUE": str(2 * IN_FLIGHT),
        "REWARD_MAX_BATCH_ITEMS": str(PER_BATCH),
        "REWARD_ACCESS_LOG": "off",
    }
    with live_server(workers=1, env=env) as server:
        yield server


@pytest.mark.alone
def test_thousands_of_answers_in_flight_leave_the_loop_free(
    service: LiveServer, judge_url: str
) -> None:
    """2,500 distinct answers in flight (two rounds of 25 batches of 50, 0.04 s apart, as
    rollouts arrive) at a judge taking 1-3 s each: every one graded, never more than the cap at
    the endpoint, /livez under 50 ms (95% of probes; every one under 1 s on this shared
    machine: a round's first burst starts 250 calls at once, ~2 ms of loop each), and the
    service's memory flat from the first round to the second."""

    async def load(first: int) -> list[float]:
        async with httpx.AsyncClient(timeout=120) as client:

            async def batch(b: int) -> list[float]:
                await asyncio.sleep(0.04 * (b - first))
                items = [
                    {"prompt": "p", "response": str(n if n % 2 else 4), "label": "4"}
                    for n in range(b * PER_BATCH, (b + 1) * PER_BATCH)
                ]
                for i, item in enumerate(items):
                    item["prompt"] = f"question {b}-{i}"  # no two answers share a cache key
                answer = await client.post(
                    f"{service.url}/score/judge/batch", json={"items": items}
                )
                return [float(r) for r in answer.json()["rewards"]]

            rounds = range(first, first + IN_FLIGHT // PER_BATCH // 2)
            batches = await asyncio.gather(*(batch(b) for b in rounds))
            return [reward for rewards in batches for reward in rewards]

    with LivenessProbe(service.url) as probe:
        rewards = asyncio.run(load(0))
        after_first = service.rss_bytes()
        rewards += asyncio.run(load(IN_FLIGHT // PER_BATCH // 2))
        after_second = service.rss_bytes()
    assert rewards == [1.0 if n % 2 == 0 else 0.0 for n in range(IN_FLIGHT)]
    stats = httpx.get(f"{judge_url}/stats", timeout=10).json()
    assert stats["calls"] == IN_FLIGHT
    assert CAP // 2 < stats["most"] <= CAP, stats
    seen = f"livez p95 {probe.p95_s * 1000:.1f} ms, max {probe.slowest_s * 1000:.1f} ms"
    assert probe.failures == 0 and probe.p95_s < 0.05 and probe.slowest_s < 1.0, seen
    assert after_second < after_first * 1.1, (after_first, after_second)
