"""A third-party package of two scorers, one of each kind, that own their lifecycle.

Installed apart from the venv and found through its entry points, each
scorer declares settings of its own (read from `REWARD_<NAME>__<FIELD>`), a
start-up check and a resource: the CPU-bound one opens a file in each
worker, the I/O-bound one an HTTP client to a slow local endpoint, closed at
shutdown after the drain. Neither the engine nor the server names them.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import os
import random
import signal
import textwrap
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

import httpx
import pytest

from reward_service.testing import LivenessProbe, LiveServer, live_server
from tests.plugins.test_entry_point import build_and_install

PYPROJECT = """\
[build-system]
requires = ["setuptools>=61"]
build-backend = "setuptools.build_meta"

[project]
name = "lifecycle-scorers"
version = "0.1.0"

[project.entry-points."reward_service.scorers"]
greeting = "lifecycle_scorers:GreetingScorer"
slow_judge = "lifecycle_scorers:SlowJudge"
"""

MODULE = '''\
"""Two scorers that own settings, a start-up check and a resource each."""

import os
from collections.abc import Mapping

import httpx

from reward_service.scorers.base import (
    JSON, AsyncScorer, Score, Scorer, ScorerSettings, StartupCheck,
)


class GreetingSettings(ScorerSettings):
    greeting: str = "hello"
    marks: str = ""


class GreetingScorer(Scorer):
    """CPU-bound: 1.0 when the response is the configured greeting."""

    name = "greeting"
    settings_model = GreetingSettings

    @classmethod
    def startup_check(cls, settings, limits):
        return StartupCheck(True, f"greeting is {settings.greeting!r}", True,
                            {"greeting": settings.greeting})

    def open(self):
        self.mark = open(os.path.join(self.settings.marks, f"greeting-open-{os.getpid()}"), "w")

    def score(self, prompt, response, label, options):
        return Score.verdict(response == self.settings.greeting, pid=os.getpid(),
                             opened=not self.mark.closed)


class JudgeSettings(ScorerSettings):
    url: str = ""
    marks: str = ""


class SlowJudge(AsyncScorer):
    """I/O-bound: asks a slow endpoint for the verdict."""

    name = "slow_judge"
    settings_model = JudgeSettings
    concurrency = 64

    @classmethod
    def startup_check(cls, settings, limits):
        return StartupCheck(bool(settings.url), f"judge at {settings.url or 'nowhere'}")

    async def open(self):
        self.client = httpx.AsyncClient(timeout=30)
        open(os.path.join(self.settings.marks, "judge-open"), "w").close()

    async def close(self):
        await self.client.aclose()
        open(os.path.join(self.settings.marks, "judge-closed"), "w").close()

    async def score(self, prompt, response, label, options):
        reply = await self.client.get(self.settings.url, params={"answer": response})
        return Score.verdict(reply.text == str(label), verdict=reply.text)
'''

DELAY_S = (0.3, 0.7)
"""A judge's latency varies: each call waits a time drawn from this range."""
BATCHES, PER_BATCH = 4, 250
CONCURRENCY = 64


class SlowEndpoint:
    """A local judge, in a process of its own (so that its threads never share the test's
    GIL with the /livez probe), that answers `answer` back after a `DELAY_S` wait, counting
    calls in progress."""

    def __init__(self) -> None:
        context = multiprocessing.get_context("spawn")
        self._counts = context.Array("i", 3)  # calls in progress, most at once, all calls
        receive, send = context.Pipe(duplex=False)
        self._process = context.Process(target=_serve, args=(self._counts, send), daemon=True)
        self._process.start()
        port = receive.recv()
        self.url = f"http://127.0.0.1:{port}/verdict"

    @property
    def calls(self) -> int:
        return int(self._counts[2])

    @property
    def most(self) -> int:
        return int(self._counts[1])

    def reset_most(self) -> None:
        with self._counts.get_lock():
            self._counts[1] = 0

    def close(self) -> None:
        self._process.terminate()
        self._process.join()


def _serve(counts: Any, send: Connection) -> None:
    """The endpoint's process: serve until terminated, counting into `counts`."""

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive, as a model server is

        def do_GET(self) -> None:
            with counts.get_lock():
                counts[0] += 1
                counts[2] += 1
                counts[1] = max(counts[1], counts[0])
            time.sleep(random.uniform(*DELAY_S))
            with counts.get_lock():
                counts[0] -= 1
            body = self.path.partition("answer=")[2].encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    send.send(server.server_port)
    server.serve_forever()


@pytest.fixture(scope="module")
def endpoint() -> Iterator[SlowEndpoint]:
    served = SlowEndpoint()
    yield served
    served.close()


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("lifecycle")
    target = root / "site"
    build_and_install(root / "lifecycle-scorers", target, PYPROJECT, textwrap.dedent(MODULE))
    return target


def _env(site: Path, marks: Path, endpoint: SlowEndpoint) -> dict[str, str]:
    path = os.pathsep.join(filter(None, [str(site), os.environ.get("PYTHONPATH")]))
    return {
        "PYTHONPATH": path,
        "REWARD_GREETING__GREETING": "bonjour",
        "REWARD_GREETING__MARKS": str(marks),
        "REWARD_SLOW_JUDGE__URL": endpoint.url,
        "REWARD_SLOW_JUDGE__MARKS": str(marks),
        "REWARD_MAX_QUEUE": str(2 * BATCHES * PER_BATCH),
        "REWARD_MAX_BATCH_ITEMS": str(PER_BATCH),
        "REWARD_SCORER_DEADLINES": '{"slow_judge": 60}',
        "REWARD_ACCESS_LOG": "off",
    }


@pytest.fixture(scope="module")
def served(
    site: Path, endpoint: SlowEndpoint, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[LiveServer, Path]]:
    marks = tmp_path_factory.mktemp("marks")
    with live_server(workers=2, env=_env(site, marks, endpoint)) as server:
        yield server, marks


def test_each_kind_is_served_with_its_own_settings(served: tuple[LiveServer, Path]) -> None:
    """`REWARD_GREETING__GREETING` reaches the CPU-bound scorer in its worker, whose resource
    `open` made; the async one grades through its HTTP client."""
    server, _ = served
    body = {"prompt": "", "response": "bonjour", "label": None}
    cpu = httpx.post(f"{server.url}/score/greeting?detail=1", json=body, timeout=30).json()
    assert (cpu["reward"], cpu["opened"]) == (1.0, True), cpu
    assert cpu["pid"] in server.worker_pids()
    io = httpx.post(
        f"{server.url}/score/slow_judge?detail=1", json={**body, "label": "bonjour"}, timeout=30
    ).json()
    assert (io["reward"], io["status"], io["verdict"]) == (1.0, "ok", "bonjour"), io
    boxed = {**body, "response": "\\boxed{bonjour}", "label": "bonjour"}
    assert httpx.post(f"{server.url}/score/boxed_slow_judge", json=boxed, timeout=30).json() == 1.0


def test_start_up_checks_are_reported(served: tuple[LiveServer, Path]) -> None:
    """GET /scorers lists each plugin's check, its own words, whether it is required, configured
    and serving in full."""
    server, marks = served
    checks = httpx.get(f"{server.url}/scorers", timeout=10).json()["checks"]
    assert checks["greeting"] == {
        "ok": True,
        "required": True,
        "configured": True,
        "degraded": False,
        "summary": "greeting is 'bonjour'",
        "greeting": "bonjour",
    }
    assert checks["slow_judge"]["ok"] is True and checks["slow_judge"]["required"] is False
    assert len(list(marks.glob("greeting-open-*"))) == 2, "one open per worker"
    assert (marks / "judge-open").exists(), "the async scorer opened once, in the server"


@pytest.mark.alone
def test_async_scorer_under_load_holds_its_bound_and_leaves_the_loop_free(
    served: tuple[LiveServer, Path], endpoint: SlowEndpoint
) -> None:
    """A thousand answers in flight (four batches, 0.1 s apart), each waiting on the slow
    endpoint: never more than the scorer's concurrency at the endpoint, all graded, and
    /livez free (95% of probes under 100 ms, every one under 1 s: a blocked loop holds them
    for a call's 0.3-0.7 s)."""
    server, _ = served
    before = endpoint.calls
    endpoint.reset_most()

    async def load() -> list[float]:
        async with httpx.AsyncClient(timeout=120) as client:

            async def batch(b: int) -> list[float]:
                await asyncio.sleep(0.1 * b)  # as rollouts arrive: not all in one instant
                items = [
                    {"prompt": "", "response": f"a{i}", "label": f"a{i}"} for i in range(PER_BATCH)
                ]
                answer = await client.post(
                    f"{server.url}/score/slow_judge/batch", json={"items": items}
                )
                return [float(r) for r in answer.json()["rewards"]]

            batches = await asyncio.gather(*(batch(b) for b in range(BATCHES)))
            return [reward for rewards in batches for reward in rewards]

    with LivenessProbe(server.url) as probe:
        time.sleep(0.2)
        rewards = asyncio.run(load())
    assert rewards == [1.0] * (BATCHES * PER_BATCH)
    assert endpoint.calls - before == BATCHES * PER_BATCH
    assert CONCURRENCY // 2 < endpoint.most <= CONCURRENCY, endpoint.most
    seen = f"livez p95 {probe.p95_s * 1000:.1f} ms, max {probe.slowest_s * 1000:.1f} ms"
    # A scorer that blocked the loop would hold every probe for a call's 0.3-0.7 s; the
    # bounds leave room for a shared 2-core machine's scheduler (p95 45 ms and a 278 ms
    # probe were seen at load 3), never for one blocked call.
    assert probe.failures == 0 and probe.p95_s < 0.1 and probe.slowest_s < 1.0, seen


def test_shutdown_drains_then_closes_the_async_scorers_resource(
    site: Path, endpoint: SlowEndpoint, tmp_path: Path
) -> None:
    """SIGTERM with a judge call in flight: it is answered, then the client is closed."""
    with live_server(workers=1, env=_env(site, tmp_path, endpoint)) as server:
        body = {"prompt": "", "response": "late", "label": "late"}
        with httpx.Client(timeout=30) as client:
            pending = threading.Thread(
                target=lambda: setattr(
                    pending, "answer", client.post(f"{server.url}/score/slow_judge", json=body)
                )
            )
            pending.start()
            time.sleep(0.05)
            assert not (tmp_path / "judge-closed").exists()
            server.process.send_signal(signal.SIGTERM)
            pending.join(30)
        assert server.process.wait(30) == 0
    assert pending.answer.json() == 1.0  # type: ignore[attr-defined]
    assert (tmp_path / "judge-closed").exists()
