"""Chaos under load: workers SIGKILLed, then SIGTERM mid-flight; no accepted answer is wrong."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import os
import random
import signal
import threading
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest

from reward_service.bench.workload import grpo_workload, hostile_workload, request_body
from reward_service.testing import LiveServer, live_server
from tests.conftest import gradings_in_flight

CHAOS_S = 14.0
KILL_EVERY_S = 2.0
AFTER_SIGTERM_S = 3.0
CONCURRENCY = 32
ANSWERS = 8_000
"""Distinct answers, posted round and round until the server has stopped for a while."""
IN_FLIGHT_WAIT_S = 60.0


@dataclass(frozen=True)
class Outcome:
    """What one request got.

    `kind` is `reward`, `http <status>`, `refused` (never written: the
    connection was refused) or `dropped` (written, then the connection
    closed with no answer).
    """

    kind: str
    written_before_sigterm: bool
    reward: float | None = None
    expected: float | None = None
    drained: bool = False
    """Written before SIGTERM, answered after it."""


class Chaos:
    """Kills a grading worker every few seconds, then SIGTERMs the server with gradings in
    flight (its own gauge says so, however slow or fast the host)."""

    def __init__(self, server: LiveServer) -> None:
        self.server = server
        self.killed: list[int] = []
        self.sigterm_at: float | None = None
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        end = time.monotonic() + CHAOS_S
        while time.monotonic() < end:
            time.sleep(KILL_EVERY_S)
            pids = self.server.worker_pids()
            if pids:
                victim = pids[len(self.killed) % len(pids)]
                with contextlib.suppress(ProcessLookupError):
                    os.kill(victim, signal.SIGKILL)
                    self.killed.append(victim)
        self._wait_for_gradings_in_flight()
        self.sigterm_at = time.monotonic()
        self.server.process.send_signal(signal.SIGTERM)

    def _wait_for_gradings_in_flight(self) -> None:
        """Until the server has at least half the load's requests in grading (or a minute)."""
        deadline = time.monotonic() + IN_FLIGHT_WAIT_S
        with httpx.Client(base_url=self.server.url, timeout=10) as probe:
            while time.monotonic() < deadline:
                if gradings_in_flight(probe.get("/metrics").text) >= CONCURRENCY // 2:
                    return
                time.sleep(0.05)

    def start(self) -> None:
        self._thread.start()

    def join(self) -> None:
        self._thread.join()

    def written_before_sigterm(self, written_at: float | None) -> bool:
        return written_at is not None and (self.sigterm_at is None or written_at < self.sigterm_at)

    def load_over(self) -> bool:
        """True once new requests have met the stopped server for a while."""
        return self.sigterm_at is not None and time.monotonic() > self.sigterm_at + AFTER_SIGTERM_S


async def _post(client: httpx.AsyncClient, chaos: Chaos, item: dict[str, Any]) -> Outcome:
    """POST one answer; note when its request line actually went on the wire."""
    written_at: float | None = None

    async def trace(event: str, info: dict[str, Any]) -> None:
        nonlocal written_at
        if event == "http11.send_request_headers.started":
            written_at = time.monotonic()

    try:
        response = await client.post("/score", json=request_body(item), extensions={"trace": trace})
    except httpx.ConnectError:
        return Outcome("refused", False)
    except (httpx.RemoteProtocolError, httpx.ReadError, httpx.WriteError):
        return Outcome("dropped", chaos.written_before_sigterm(written_at))
    before = chaos.written_before_sigterm(written_at)
    if response.status_code != 200:
        return Outcome(f"http {response.status_code}", before)
    drained = before and chaos.sigterm_at is not None
    return Outcome("reward", before, response.json(), item["expected"], drained)


async def _load(url: str, chaos: Chaos, items: list[dict[str, Any]]) -> list[Outcome]:
    queue = itertools.cycle(items)
    outcomes: list[Outcome] = []

    async def user(client: httpx.AsyncClient) -> None:
        for item in queue:
            if chaos.load_over():
                return
            outcomes.append(await _post(client, chaos, item))

    limits = httpx.Limits(max_connections=CONCURRENCY)
    async with httpx.AsyncClient(base_url=url, timeout=60, limits=limits) as client:
        await asyncio.gather(*(user(client) for _ in range(CONCURRENCY)))
    return outcomes


def _mixed_items() -> list[dict[str, Any]]:
    items = grpo_workload(seed=71, answers=ANSWERS, max_chars=6_000)
    items += hostile_workload(seed=71, answers=ANSWERS // 100)
    random.Random(71).shuffle(items)
    return items


@pytest.fixture
def chaos_server() -> Iterator[LiveServer]:
    """A private two-worker server with the default settings: this test kills it."""
    with live_server(workers=2) as running:
        yield running


@pytest.mark.slow
@pytest.mark.heavy
@pytest.mark.timeout(240)
def test_killed_workers_and_sigterm_lose_no_accepted_answer(chaos_server: LiveServer) -> None:
    """Workers SIGKILLed every 2 s, then SIGTERM: each answer is right or cleanly refused."""
    chaos = Chaos(chaos_server)
    chaos.start()
    outcomes = asyncio.run(_load(chaos_server.url, chaos, _mixed_items()))
    chaos.join()
    exit_code = chaos_server.process.wait(timeout=60)

    kinds = Counter((o.kind, "before" if o.written_before_sigterm else "after") for o in outcomes)
    print(f"outcomes by kind and SIGTERM: {dict(kinds)}; killed {len(chaos.killed)} workers;")
    drained = sum(o.drained for o in outcomes)
    print(f"{drained} answered during the drain; exit code {exit_code}")
    assert len(chaos.killed) >= CHAOS_S // KILL_EVERY_S - 1
    assert drained > 0, "SIGTERM came with no request in flight"
    assert [o for o in outcomes if o.kind == "reward" and o.reward != o.expected] == []
    assert {o.kind for o in outcomes if o.written_before_sigterm} == {"reward"}
    # After SIGTERM a keep-alive request may meet its connection's close
    # ("dropped"): the server never read it and a client retries it.
    assert {o.kind for o in outcomes if not o.written_before_sigterm} <= {
        "reward",
        "refused",
        "dropped",
        "http 503",
    }
    assert exit_code == 0
