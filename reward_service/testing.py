"""Test doubles for code that uses reward-service.

* `live_server`: a real `reward-service serve` process on a free loopback
  port, so tests exercise real sockets, processes and signals::

      with live_server(workers=2, env={"REWARD_DEADLINE_S": "5"}) as server:
          httpx.post(f"{server.url}/score", json={...})

* `FakeScorer`: a scorer whose response scripts its behaviour (a reward, a
  sleep, a stall past any signal, a crash, a memory hog), for fault tests.
* `StandIn`: a scripted HTTP server answering canned replies, for testing
  clients against an overloaded, failing or wrong-grading service.
* `LivenessProbe`: polls `/livez` in a thread while a test loads the service,
  counting answers and failures and keeping the slowest answer time.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import httpx

from reward_service.scorers.base import JSON, NO_OPTIONS, Score, Scorer, Status


def free_port() -> int:
    """A TCP port on 127.0.0.1 that is free right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _children(pid: int) -> list[int]:
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError, ValueError, IndexError):
            fields = stat.read_text().rsplit(")", 1)[1].split()
            if int(fields[1]) == pid:
                found.append(int(stat.parent.name))
    return found


@dataclass
class LiveServer:
    """A running `reward-service serve` process."""

    url: str
    process: subprocess.Popen[bytes]

    def wait_ready(self, timeout_s: float = 60.0) -> None:
        """Block until `/readyz` answers 200; raise if the process dies or time runs out."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"server exited with {self.process.returncode} before ready")
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(f"{self.url}/readyz", timeout=1.0).status_code == 200:
                    return
            time.sleep(0.1)
        raise TimeoutError(f"server at {self.url} not ready after {timeout_s} s")

    def worker_pids(self) -> list[int]:
        """PIDs of the grading workers (children of the forkserver child)."""
        children = _children(self.process.pid)
        return [pid for child in children for pid in _children(child)]

    def rss_bytes(self) -> int:
        """Resident memory of the server and all its descendants."""
        pids, frontier = [self.process.pid], [self.process.pid]
        while frontier:
            frontier = [child for pid in frontier for child in _children(pid)]
            pids += frontier
        total = 0
        for pid in pids:
            with contextlib.suppress(OSError):
                for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                    if line.startswith("VmRSS:"):
                        total += int(line.split()[1]) * 1024
        return total

    def stop(self, timeout_s: float = 60.0) -> int:
        """SIGTERM the server and wait for it; return its exit code."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout_s)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        return self.process.returncode


@contextlib.contextmanager
def live_server(
    workers: int = 1,
    env: Mapping[str, str] | None = None,
    ready_timeout_s: float = 60.0,
    quiet: bool = True,
) -> Iterator[LiveServer]:
    """Run `reward-service serve` on a free loopback port until the block ends."""
    port = free_port()
    cmd = [sys.executable, "-m", "reward_service", "serve", "--host", "127.0.0.1"]
    cmd += ["--port", str(port), "--workers", str(workers)]
    process = subprocess.Popen(
        cmd,
        env={**os.environ, **(env or {})},
        stdout=subprocess.DEVNULL if quiet else None,
        stderr=subprocess.DEVNULL if quiet else None,
    )
    server = LiveServer(f"http://127.0.0.1:{port}", process)
    try:
        server.wait_ready(ready_timeout_s)
        yield server
    finally:
        server.stop()


class LivenessProbe:
    """Polls `/livez` in a thread: answers, failures (a hang past 5 s is one), slowest answer."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.answers = 0
        self.failures = 0
        self.slowest_s = 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        with httpx.Client(timeout=5) as client:
            while not self._stop.is_set():
                started = time.perf_counter()
                try:
                    client.get(f"{self.url}/livez").raise_for_status()
                    self.answers += 1
                except httpx.HTTPError:
                    self.failures += 1
                self.slowest_s = max(self.slowest_s, time.perf_counter() - started)
                self._stop.wait(0.05)

    def __enter__(self) -> LivenessProbe:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


class FakeScorer(Scorer):
    """A scorer whose response says what to do: for fault and contract tests.

    Load it with `REWARD_EXTRA_SCORERS='{"fake": "reward_service.testing:FakeScorer"}'`.
    The response is a number (the reward, status ok), or one of:
    `sleep:<s>` (take that long, then reward 1.0), `stall` (hold the GIL in
    C, beyond any signal), `crash` (the worker dies), `raise` (the scorer
    raises), `hog` (allocate without bound), `screen-raise` (`screen`, in
    the server, raises; the worker then grades 1.0), `options` (reward 1.0,
    the options it was given in `details["options"]`). It reads one option,
    `tag`, of any value.
    """

    name = "fake"
    options: ClassVar[Mapping[str, frozenset[str] | None]] = {"tag": None}

    @classmethod
    def screen(
        cls, response: str, label: JSON, options: Mapping[str, JSON] = NO_OPTIONS
    ) -> Score | None:
        if response.strip() == "screen-raise":
            raise RuntimeError("fake scorer asked to raise in screen")
        return None

    def score(self, prompt: JSON, response: str, label: JSON, options: Mapping[str, JSON]) -> Score:
        command = response.strip()
        if command.startswith("sleep:"):
            time.sleep(float(command.removeprefix("sleep:")))
            return Score.verdict(True)
        if command == "stall":
            pow(10, 10**10)
        elif command == "crash":
            os._exit(3)
        elif command == "screen-raise":
            return Score.verdict(True, graded_by="worker")
        elif command == "options":
            return Score.verdict(True, options=dict(options))
        elif command == "raise":
            raise RuntimeError("fake scorer asked to raise")
        elif command == "hog":
            hoard = []
            while True:
                hoard.append(bytes(256 * 1024 * 1024))
        try:
            return Score.verdict(True) if not command else Score(float(command), Status.OK)
        except ValueError:
            return Score.no_answer("fake scorer reads numbers and commands only")


@dataclass
class Reply:
    """What a `StandIn` route answers: a status, a JSON body and headers."""

    status: int = 200
    body: Any = 0.0
    headers: dict[str, str] = field(default_factory=dict)


Route = Callable[[Any], Reply]


class StandIn:
    """A scripted HTTP server on 127.0.0.1: each path answers with a function of the body.

    Unrouted paths answer 404; every request is recorded as `(method, path, body)`.
    """

    def __init__(self) -> None:
        self.routes: dict[str, Route] = {}
        self.requests: list[tuple[str, str, Any]] = []
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def route(self, path: str, route: Route) -> None:
        self.routes[path] = route

    def paths(self, method: str = "POST") -> list[str]:
        return [path for m, path, _ in self.requests if m == method]

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        stand_in = self

        class Handler(BaseHTTPRequestHandler):
            def _answer(self, method: str) -> None:
                length = int(self.headers.get("Content-Length", 0))
                raw = self.rfile.read(length) if length else b""
                body = json.loads(raw) if raw else None
                stand_in.requests.append((method, self.path, body))
                route = stand_in.routes.get(self.path)
                reply = route(body) if route else Reply(404, {"error": "not found"})
                data = json.dumps(reply.body).encode()
                self.send_response(reply.status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for name, value in reply.headers.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:
                self._answer("GET")

            def do_POST(self) -> None:
                self._answer("POST")

            def log_message(self, format: str, *args: Any) -> None:
                pass

        return Handler

    def __enter__(self) -> StandIn:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()
