"""Nothing an answer does can hang the service, lose a request or kill it."""

from __future__ import annotations

import asyncio
import os
import signal
import threading
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from reward_service.bench.workload import HOSTILE_ANSWERS, grpo_workload, request_body
from reward_service.testing import LivenessProbe, LiveServer, live_server
from tests.conftest import TEST_ENV

DEADLINE_S = 4.0

PATHOLOGICAL = [*HOSTILE_ANSWERS, "The final answer is $10^{10^{10}}$"]


@pytest.fixture(scope="module")
def _shared_faults_server() -> Iterator[LiveServer]:
    with live_server(workers=2, env=TEST_ENV) as running:
        yield running


@pytest.fixture
def faults_server(_shared_faults_server: LiveServer) -> LiveServer:
    """The module's two-worker server, ready with both workers: these tests kill workers,
    and each starts where the last one's recovery left the server (a start per test cost
    more than the tests)."""
    _wait_ready(_shared_faults_server)
    _wait_workers(_shared_faults_server, 2)
    return _shared_faults_server


def _wait_ready(server: LiveServer, timeout_s: float = 30.0) -> None:
    deadline = time.monotonic() + timeout_s
    while httpx.get(f"{server.url}/readyz").status_code != 200:
        assert time.monotonic() < deadline, "readiness did not recover"
        time.sleep(0.1)


def _wait_workers(server: LiveServer, count: int, timeout_s: float = 30.0) -> None:
    deadline = time.monotonic() + timeout_s
    while len(server.worker_pids()) != count:
        assert time.monotonic() < deadline, f"not back to {count} workers"
        time.sleep(0.1)


async def _timed_post(
    client: httpx.AsyncClient, path: str, body: dict[str, Any]
) -> tuple[float, dict[str, Any]]:
    started = time.perf_counter()
    response = await client.post(path, json=body, params={"detail": "1"})
    response.raise_for_status()
    return time.perf_counter() - started, response.json()


async def _send(
    url: str, requests: list[tuple[str, dict[str, Any]]]
) -> list[tuple[float, dict[str, Any]]]:
    limits = httpx.Limits(max_connections=64)
    async with httpx.AsyncClient(base_url=url, timeout=120, limits=limits) as client:
        results: list[tuple[float, dict[str, Any]]] = await asyncio.gather(
            *(_timed_post(client, p, b) for p, b in requests)
        )
        return results


def test_pathological_answers_never_starve_normal_traffic(faults_server: LiveServer) -> None:
    """Hostile answers, more than workers, get 0.0; the rest grade right; /livez never hangs."""
    normal = grpo_workload(seed=11, answers=64, max_chars=4_000)
    hostile = [("/score", {"response": r, "label": "1"}) for r in PATHOLOGICAL * 2]
    requests = hostile + [("/score", request_body(item)) for item in normal]
    with LivenessProbe(faults_server.url) as probe:
        results = asyncio.run(_send(faults_server.url, requests))
    for _, detail in results[: len(hostile)]:
        assert (detail["reward"], detail["status"]) in {(0.0, "timeout"), (0.0, "no_answer")}
    assert [d["reward"] for _, d in results[len(hostile) :]] == [i["expected"] for i in normal]
    assert probe.failures == 0
    assert probe.answers > 0


def test_stalled_grader_is_killed_at_the_deadline(faults_server: LiveServer) -> None:
    """An answer that holds the GIL in C gets `timeout` after the deadline; the pool heals."""
    stalls = [("/score/fake", {"response": "stall", "label": 1})] * 2
    with LivenessProbe(faults_server.url) as probe:
        results = asyncio.run(_send(faults_server.url, stalls))
    for elapsed, detail in results:
        assert (detail["reward"], detail["status"]) == (0.0, "timeout")
        assert detail["reason"] == f"deadline {DEADLINE_S} s"
        assert elapsed > DEADLINE_S - 0.5  # not killed early; a slow machine only adds time
    assert probe.failures == 0
    assert probe.answers > 0
    [(_, after)] = asyncio.run(_send(faults_server.url, [("/score/fake", {"response": "0.5"})]))
    assert (after["reward"], after["status"]) == (0.5, "ok")


@pytest.mark.parametrize(
    ("command", "status"), [("raise", "error"), ("crash", "error"), ("hog", "error")]
)
def test_scorer_failures_become_statuses(
    faults_server: LiveServer, command: str, status: str
) -> None:
    """A scorer that raises, kills its worker or exhausts memory costs one fallback reward."""
    [(_, detail)] = asyncio.run(_send(faults_server.url, [("/score/fake", {"response": command})]))
    assert (detail["reward"], detail["status"]) == (0.0, status)
    _wait_ready(faults_server)


def test_a_failing_screen_leaves_the_answer_to_a_worker(faults_server: LiveServer) -> None:
    """A scorer whose server-side `screen` raises still has its answer graded, not a 500."""
    [(_, detail)] = asyncio.run(
        _send(faults_server.url, [("/score/fake", {"response": "screen-raise"})])
    )
    assert (detail["reward"], detail["status"], detail["graded_by"]) == (1.0, "ok", "worker")


def test_sigkilled_worker_loses_no_request(faults_server: LiveServer) -> None:
    """SIGKILL a worker under load: every request answered (right, or `error` for one hit
    twice), readiness recovers."""
    items = grpo_workload(seed=13, answers=400, max_chars=8_000)
    requests = [("/score", request_body(item)) for item in items]

    kills: list[int] = []

    def kill_workers() -> None:
        for _ in range(3):
            time.sleep(0.3)
            pids = faults_server.worker_pids()
            if pids:
                os.kill(pids[0], signal.SIGKILL)
                kills.append(pids[0])

    killer = threading.Thread(target=kill_workers)
    killer.start()
    results = asyncio.run(_send(faults_server.url, requests))
    killed_under_load = len(kills)
    killer.join()
    assert killed_under_load >= 1, "no worker was killed while requests were in flight"
    # A task is retried once (a second death is taken for a poison answer), and with three
    # kills one task can be on two of the victims: it, and only it, is `error`, not lost.
    wrong = [
        (d["reward"], d["status"], d.get("reason", ""))
        for (_, d), item in zip(results, items, strict=True)
        if d["reward"] != item["expected"]
    ]
    assert len(wrong) <= killed_under_load - 1, wrong
    assert all(
        r == 0.0 and s == "error" and why.startswith("worker died") for r, s, why in wrong
    ), wrong
    _wait_ready(faults_server)
    _wait_workers(faults_server, 2)


def test_a_scorer_can_have_its_own_deadline() -> None:
    """`REWARD_SCORER_DEADLINES` gives one scorer a shorter (or longer) deadline."""
    env = {**TEST_ENV, "REWARD_SCORER_DEADLINES": '{"fake": 1.5}'}
    with live_server(workers=1, env=env) as server:
        [(_, detail)] = asyncio.run(_send(server.url, [("/score/fake", {"response": "stall"})]))
    assert (detail["status"], detail["reason"]) == ("timeout", "deadline 1.5 s")
