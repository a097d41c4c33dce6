"""SIGTERM or SIGINT under load: readiness fails at once, every accepted request is answered."""

from __future__ import annotations

import asyncio
import itertools
import signal

import httpx
import pytest

from reward_service.testing import LiveServer, live_server
from tests.conftest import FAKE_SCORER, gradings_in_flight

REFUSED = "refused"


async def _readiness_until_refused(url: str) -> list[int | str]:
    """/readyz statuses, polled on fresh connections, until connecting fails."""
    readiness: list[int | str] = []
    # A fresh connection per probe: uvicorn closes idle keep-alive ones when it shuts down.
    limits = httpx.Limits(max_keepalive_connections=0)
    async with httpx.AsyncClient(base_url=url, timeout=5, limits=limits) as probe:
        while readiness[-1:] != [REFUSED] and len(readiness) < 500:
            try:
                readiness.append((await probe.get("/readyz")).status_code)
            except httpx.TransportError:  # refused, or reset as the listener closed
                readiness.append(REFUSED)
            await asyncio.sleep(0.02)
    return readiness


async def _signal_under_load(
    server: LiveServer, sig: signal.Signals
) -> tuple[list[httpx.Response], list[int | str]]:
    limits = httpx.Limits(max_connections=64)
    async with (
        httpx.AsyncClient(base_url=server.url, timeout=60, limits=limits) as client,
        httpx.AsyncClient(base_url=server.url, timeout=10) as metrics,
    ):
        requests = [
            asyncio.create_task(client.post("/score/fake", json={"response": "sleep:0.2"}))
            for _ in range(64)
        ]
        for _ in range(600):  # the signal comes once all 64 are accepted, however slow the host
            if gradings_in_flight((await metrics.get("/metrics")).text) >= 64:
                break
            await asyncio.sleep(0.05)
        else:
            raise AssertionError("the 64 requests were never in flight together")
        server.process.send_signal(sig)
        readiness = await _readiness_until_refused(server.url)
        return await asyncio.gather(*requests), readiness


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_a_stop_signal_with_64_in_flight_loses_nothing(sig: signal.Signals) -> None:
    """64 requests in flight at SIGTERM, or at SIGINT (Ctrl-C), all get their reward; /readyz
    says 503 before refusing; the server exits 0."""
    env = {"REWARD_EXTRA_SCORERS": FAKE_SCORER, "REWARD_DRAIN_S": "30"}
    with live_server(workers=2, env=env) as server:
        responses, readiness = asyncio.run(_signal_under_load(server, sig))
        assert [r.status_code for r in responses] == [200] * 64
        assert [r.json() for r in responses] == [1.0] * 64
        assert [status for status, _ in itertools.groupby(readiness)] == [503, REFUSED], readiness
        assert server.process.wait(60) == 0


def test_a_sub_second_drain_ends_instead_of_waiting_for_ever() -> None:
    """With REWARD_DRAIN_S=0.5, a grading still running when the drain ends is cut off."""
    env = {"REWARD_EXTRA_SCORERS": FAKE_SCORER, "REWARD_DRAIN_S": "0.5"}
    with live_server(workers=1, env=env) as server:

        async def sigterm_during_a_slow_grading() -> tuple[httpx.Response | BaseException]:
            async with httpx.AsyncClient(base_url=server.url, timeout=60) as client:
                slow = asyncio.create_task(client.post("/score/fake", json={"response": "sleep:8"}))
                await asyncio.sleep(0.5)
                server.process.send_signal(signal.SIGTERM)
                return await asyncio.gather(slow, return_exceptions=True)

        [outcome] = asyncio.run(sigterm_during_a_slow_grading())
        # Unbounded, the drain would wait the 8 s and answer 200; cut off, it is 500 or a reset.
        if isinstance(outcome, httpx.Response):
            assert outcome.status_code == 500
        else:
            assert isinstance(outcome, httpx.TransportError), outcome
        assert server.process.wait(60) == 0
