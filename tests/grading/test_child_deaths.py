"""The server outlives every process it starts: workers, the forkserver, the resource tracker."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import os
import select
import signal
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from reward_service.bench.workload import grpo_workload, request_body
from reward_service.testing import LiveServer, _children, live_server
from tests.conftest import TEST_ENV

RECOVERY_S = 60.0
"""How long the pool may take to be whole again: a worker killed with no forkserver left
relaunches it, which preloads and warms math_verify at the workers' niceness; alone that
takes a second or two, but in a full suite run beside the other modules it took over 20 s
once. The other worker serves meanwhile, so this bounds a hang, not the answers."""
SCENARIO_S = 300.0

pytestmark = [
    pytest.mark.heavy,
    pytest.mark.skipif(not hasattr(os, "pidfd_open"), reason="needs Linux pidfds"),
]


def _cmdline(pid: int) -> str:
    with contextlib.suppress(OSError):
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    return ""


def _child(server: LiveServer, module: str) -> int:
    """The server's child process running `multiprocessing.<module>`."""
    [pid] = [
        p for p in _children(server.process.pid) if f"multiprocessing.{module} " in _cmdline(p)
    ]
    return pid


class PinnedProcess:
    """A process held by pidfd: signalled and watched without any risk of a reused pid."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.fd = os.pidfd_open(pid)

    def exited(self) -> bool:
        return bool(select.select([self.fd], [], [], 0)[0])

    def kill(self) -> None:
        signal.pidfd_send_signal(self.fd, signal.SIGKILL)
        deadline = time.monotonic() + 10
        while not self.exited():
            assert time.monotonic() < deadline, f"pid {self.pid} outlived SIGKILL"
            time.sleep(0.01)

    def close(self) -> None:
        os.close(self.fd)


@dataclass
class Load:
    """SLIME-shaped traffic: one session, 64 connections, every request counted, no retries;
    it runs until `stop`, so every kill meets it however fast the host grades."""

    url: str
    stop: asyncio.Event = field(default_factory=asyncio.Event)
    answered: int = 0
    failures: list[str] = field(default_factory=list)
    wrong: list[tuple[float, Any]] = field(default_factory=list)

    async def run(self, requests: list[tuple[str, dict[str, Any], float]]) -> None:
        work = itertools.cycle(requests)
        connector = aiohttp.TCPConnector(limit=64)
        timeout = aiohttp.ClientTimeout(total=120)
        async with aiohttp.ClientSession(connector=connector, timeout=timeout) as session:
            await asyncio.gather(*(self._client(session, work) for _ in range(64)))

    async def _client(self, session: aiohttp.ClientSession, work: Any) -> None:
        for path, body, expected in work:
            if self.stop.is_set():
                return
            try:
                async with session.post(self.url + path, json=body) as response:
                    if response.status != 200:
                        self.failures.append(f"{response.status}: {await response.text()}")
                        continue
                    reward = await response.json()
            except (aiohttp.ClientError, asyncio.TimeoutError) as exc:
                self.failures.append(repr(exc))
                continue
            self.answered += 1
            if reward != expected:
                self.wrong.append((expected, reward))


async def _eventually(
    what: str, check: Callable[[], Awaitable[bool]], timeout_s: float = RECOVERY_S
) -> None:
    deadline = time.monotonic() + timeout_s
    while not await check():
        assert time.monotonic() < deadline, f"not within {timeout_s} s: {what}"
        await asyncio.sleep(0.1)


async def _scenario(server: LiveServer) -> tuple[Load, list[str]]:
    items = grpo_workload(seed=17, answers=200, max_chars=4_000)
    requests = [("/score", request_body(item), float(item["expected"])) for item in items]
    busy = ("/score/fake", {"prompt": "", "response": "sleep:0.05", "label": 1}, 1.0)
    requests = [r for pair in zip(requests, itertools.repeat(busy)) for r in pair]
    load = Load(server.url)
    traffic = asyncio.create_task(load.run(requests))
    log: list[str] = []
    probes = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=5))

    async def ready() -> bool:
        assert server.process.poll() is None, f"server exited with {server.process.returncode}"
        with contextlib.suppress(aiohttp.ClientError, asyncio.TimeoutError):
            async with probes.get(f"{server.url}/readyz") as response:
                return response.status == 200
        return False

    async def two_workers() -> bool:
        async with probes.get(f"{server.url}/metrics") as response:
            text = await response.text()
        return "\nreward_workers_alive 2.0\n" in text

    async def more_answers() -> None:
        """Wait for 40 more answers, the load still running."""
        target, deadline = load.answered + 40, time.monotonic() + 60
        while load.answered < target:
            assert not traffic.done(), f"load ended after {load.answered} answers"
            assert time.monotonic() < deadline, f"answers stalled at {load.answered}"
            await asyncio.sleep(0.05)

    async def kill(kind: str, process: PinnedProcess) -> None:
        await more_answers()
        await asyncio.to_thread(process.kill)
        log.append(f"killed the {kind} (pid {process.pid}) after {load.answered} answers")
        assert server.process.poll() is None, f"server exited with {server.process.returncode}"
        await _eventually(f"/readyz 200 after killing the {kind}", ready)
        await _eventually(f"2 workers after killing the {kind}", two_workers)

    held: list[PinnedProcess] = []
    try:
        held.append(PinnedProcess(server.worker_pids()[0]))
        await kill("worker", held[-1])
        survivors = [PinnedProcess(pid) for pid in server.worker_pids()]
        held += survivors
        forkserver = _child(server, "forkserver")
        held.append(PinnedProcess(forkserver))
        await kill("forkserver", held[-1])
        assert not any(w.exited() for w in survivors), "the forkserver took its workers along"
        tracker = _child(server, "resource_tracker")
        held.append(PinnedProcess(tracker))
        await kill("resource tracker", held[-1])
        await kill("worker, with no forkserver or tracker", survivors[0])
        assert _child(server, "resource_tracker") != tracker, "no new resource tracker"
        assert _child(server, "forkserver") != forkserver, "no new forkserver"
        await more_answers()
    finally:
        load.stop.set()
        await traffic
        await probes.close()
        for process in held:
            process.close()
    return load, log


def test_killing_any_child_loses_no_request() -> None:
    """SIGKILL a worker, the forkserver, the resource tracker, then a worker: no request fails."""
    with live_server(workers=2, env=TEST_ENV) as server:
        load, log = asyncio.run(asyncio.wait_for(_scenario(server), SCENARIO_S))
        assert server.process.poll() is None, f"server exited with {server.process.returncode}"
        server.wait_ready(RECOVERY_S)
        assert server.stop() == 0
    print("\n".join(log), f"\n{load.answered} answered")
    assert len(log) == 4, log
    assert load.failures == [], load.failures[:5]
    assert load.wrong == [], load.wrong[:5]
    assert load.answered >= 200
