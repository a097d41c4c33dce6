"""SIGTERM under load: readiness fails at once, every accepted request is answered."""

from __future__ import annotations

import asyncio
import signal
import time

import httpx

from reward_service.testing import live_server
from tests.conftest import FAKE_SCORER


def test_sigterm_with_64_in_flight_loses_nothing() -> None:
    """64 requests in flight at SIGTERM all get their reward; the process exits 0."""
    env = {"REWARD_EXTRA_SCORERS": FAKE_SCORER, "REWARD_DRAIN_S": "30"}
    with live_server(workers=2, env=env) as server:

        async def scenario() -> tuple[list[httpx.Response], list[int | str]]:
            limits = httpx.Limits(max_connections=64)
            async with httpx.AsyncClient(base_url=server.url, timeout=60, limits=limits) as client:
                requests = [
                    asyncio.create_task(client.post("/score/fake", json={"response": "sleep:0.1"}))
                    for _ in range(64)
                ]
                await asyncio.sleep(0.5)
                server.process.send_signal(signal.SIGTERM)
                readiness: list[int | str] = []
                async with httpx.AsyncClient(base_url=server.url, timeout=2) as probe:
                    while server.process.poll() is None and len(readiness) < 50:
                        try:
                            readiness.append((await probe.get("/readyz")).status_code)
                        except httpx.TransportError:
                            readiness.append("refused")
                        await asyncio.sleep(0.05)
                return await asyncio.gather(*requests), readiness

        started = time.monotonic()
        responses, readiness = asyncio.run(scenario())
        assert [r.status_code for r in responses] == [200] * 64
        assert [r.json() for r in responses] == [1.0] * 64
        assert readiness and 200 not in readiness, readiness
        assert server.process.wait(30) == 0
        assert time.monotonic() - started < 30
