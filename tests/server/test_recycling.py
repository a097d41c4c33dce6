"""Connection recycling: keep-alive clients re-spread over replicas, losing nothing."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import threading
from collections.abc import Iterator

import httpx
import pytest

from reward_service.testing import LiveServer, free_port, live_server
from tests.conftest import FAKE_SCORER

RECYCLE = {"REWARD_EXTRA_SCORERS": FAKE_SCORER, "REWARD_CONNECTION_MAX_REQUESTS": "5"}


@pytest.fixture(scope="module")
def replicas() -> Iterator[tuple[LiveServer, LiveServer]]:
    """Two recycling replicas, as the autoscaler would run them."""
    with live_server(workers=1, env=RECYCLE) as one, live_server(workers=1, env=RECYCLE) as two:
        yield one, two


def test_connection_close_after_configured_count(
    replicas: tuple[LiveServer, LiveServer],
) -> None:
    """Every 5th response on a connection says `Connection: close`; no request fails."""
    with httpx.Client(base_url=replicas[0].url) as client:
        responses = [client.post("/score/fake", json={"response": "0.5"}) for _ in range(12)]
    assert [r.json() for r in responses] == [0.5] * 12
    closing = [i for i, r in enumerate(responses, 1) if r.headers.get("connection") == "close"]
    assert closing == [5, 10]


class RoundRobinProxy:
    """A TCP proxy on loopback that sends each new connection to the next backend."""

    def __init__(self, backends: list[int]) -> None:
        self.port = free_port()
        self._backends = itertools.cycle(backends)
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    async def _pipe(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(ConnectionError):
            while data := await reader.read(65536):
                writer.write(data)
                await writer.drain()
        writer.close()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        up_reader, up_writer = await asyncio.open_connection("127.0.0.1", next(self._backends))
        try:
            await asyncio.gather(self._pipe(reader, up_writer), self._pipe(up_reader, writer))
        finally:  # also when cancelled at shutdown: a writer left open warns once the loop is gone
            up_writer.close()
            writer.close()

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        server = self._loop.run_until_complete(
            asyncio.start_server(self._handle, "127.0.0.1", self.port)
        )
        self._ready.set()
        self._loop.run_forever()
        server.close()
        pending = asyncio.all_tasks(self._loop)
        for task in pending:
            task.cancel()
        self._loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
        self._loop.close()

    def __enter__(self) -> RoundRobinProxy:
        self._thread.start()
        self._ready.wait(5)
        return self

    def __exit__(self, *exc: object) -> None:
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(5)


def _scored(server: LiveServer) -> float:
    text = httpx.get(f"{server.url}/metrics").text
    return sum(
        float(line.rsplit(" ", 1)[1])
        for line in text.splitlines()
        if line.startswith('reward_outcomes_total{scorer="fake"')
    )


def test_one_keep_alive_client_reaches_both_replicas(
    replicas: tuple[LiveServer, LiveServer],
) -> None:
    """Behind a round-robin proxy, one keep-alive connection's requests spread over both."""
    ports = [int(server.url.rsplit(":", 1)[1]) for server in replicas]
    before = [_scored(server) for server in replicas]
    with (
        RoundRobinProxy(ports) as proxy,
        httpx.Client(
            base_url=f"http://127.0.0.1:{proxy.port}", limits=httpx.Limits(max_connections=1)
        ) as client,
    ):
        rewards = [client.post("/score/fake", json={"response": "1"}).json() for _ in range(40)]
    after = [_scored(server) for server in replicas]
    assert rewards == [1.0] * 40
    served = [a - b for a, b in zip(after, before, strict=True)]
    assert sum(served) == 40
    assert min(served) >= 15, served
