"""Test doubles for code that uses reward-service.

* `live_server` (from `reward_service.local_server`): a real `reward-service
  serve` process on a free loopback port, so tests exercise real sockets,
  processes and signals::

      with live_server(workers=2, env={"REWARD_DEADLINE_S": "5"}) as server:
          httpx.post(f"{server.url}/score", json={...})

* `FakeScorer`: a scorer whose response scripts its behaviour (a reward, a
  sleep, a stall past any signal, a crash, a memory hog), for fault tests.
* `StandIn`: a scripted HTTP server answering canned replies, for testing
  clients against an overloaded, failing or wrong-grading service.
* `stand_in_judge`: a chat-completions judge process (`bench.chat_stand_in`) answering
  after a set latency, for load tests of the judge scorers; yields its base URL.
* `LivenessProbe`: polls `/livez` in a thread while a test loads the service,
  counting answers and failures and keeping the slowest answer time.
* `RecordingSandbox`: a `Sandbox` that runs nothing: every run ends as the
  test says, and every call is recorded, for testing a scorer that runs
  programs (its `sandbox_factory`) without a zygote::

      sandbox = RecordingSandbox(stdout=b"6\n")
      scorer = CodeScorer(sandbox_factory=lambda settings: sandbox)
      scorer.score(prompt, response, {"inputs": ["2\n"], "outputs": ["6\n"]}, {})
      assert sandbox.calls[0].stdins == [b"2\n"]
"""

from __future__ import annotations

import contextlib
import json
import os
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, ClassVar

import httpx

from reward_service.local_server import LiveServer, _children, free_port, live_server
from reward_service.sandbox import Execution, Kind, Limits, Outcome, Program
from reward_service.scorers.base import JSON, NO_OPTIONS, Score, Scorer, Status

__all__ = [
    "FakeScorer",
    "LiveServer",
    "LivenessProbe",
    "RecordingSandbox",
    "Reply",
    "Route",
    "SandboxCall",
    "StandIn",
    "_children",
    "free_port",
    "live_server",
    "stand_in_judge",
]


class LivenessProbe:
    """Polls `/livez` in a thread: answers, failures (a hang past 5 s is one), slowest answer,
    and each answer's latency (`seconds`, `p95_s`). With `fresh_connections` each probe opens
    a connection of its own, as Kubernetes' httpGet probes do; else they share one."""

    def __init__(self, url: str, fresh_connections: bool = False) -> None:
        self.url = url
        self._headers = {"Connection": "close"} if fresh_connections else {}
        self.answers = 0
        self.failures = 0
        self.slowest_s = 0.0
        self.seconds: list[float] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        with httpx.Client(timeout=5) as client:
            while not self._stop.is_set():
                started = time.perf_counter()
                try:
                    client.get(f"{self.url}/livez", headers=self._headers).raise_for_status()
                    self.answers += 1
                    self.seconds.append(time.perf_counter() - started)
                except httpx.HTTPError:
                    self.failures += 1
                self.slowest_s = max(self.slowest_s, time.perf_counter() - started)
                self._stop.wait(0.05)

    @property
    def p95_s(self) -> float:
        """The latency 95% of the answers came within."""
        return statistics.quantiles(self.seconds, n=20)[-1]

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
    grades_groups_together = True
    """So the group endpoint's one-task path, and its retry alone, can be tested with it."""

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


@dataclass(frozen=True)
class SandboxCall:
    """One `Sandbox.execute` call, as a `RecordingSandbox` was asked it."""

    program: Program
    stdins: Sequence[bytes]
    limits: Limits
    budget_s: float
    stop_at_first_failure: bool
    build_time_s: float | None
    build_memory_mb: int | None
    fetch: Sequence[str]
    fetch_bytes: int


@dataclass
class RecordingSandbox:
    """A `Sandbox` that runs nothing: each run ends as `answer` says (by default it exits 0
    having written `stdout`), and each call is kept in `calls`.

    It keeps `execute`'s promises: runs stop after the first that is not `ok` when asked
    to, and `runs_left` stands for the budget (the runs past it are not run, so the
    answer has fewer outcomes than stdins). `build` is a compiled program's build: one
    that is not `ok` leaves no runs.
    """

    stdout: bytes = b""
    answer: Callable[[Program, bytes], Outcome] | None = None
    """The outcome of `program`'s run on one stdin, for a test that scripts each run."""
    build: Outcome | None = None
    runs_left: int = 1_000
    layers: Sequence[str] = ("recording",)
    calls: list[SandboxCall] = field(default_factory=list)
    closed: bool = False

    def execute(
        self,
        program: Program,
        stdins: Sequence[bytes],
        limits: Limits,
        budget_s: float,
        *,
        stop_at_first_failure: bool = True,
        build_time_s: float | None = None,
        build_memory_mb: int | None = None,
        fetch: Sequence[str] = (),
        fetch_bytes: int = 0,
    ) -> Execution:
        self.calls.append(
            SandboxCall(
                program,
                stdins,
                limits,
                budget_s,
                stop_at_first_failure,
                build_time_s,
                build_memory_mb,
                fetch,
                fetch_bytes,
            )
        )
        if self.build is not None and self.build.kind is not Kind.OK:
            return Execution(self.build, [])
        runs: list[Outcome] = []
        for stdin in stdins[: max(0, self.runs_left)]:
            runs.append(self._run(program, stdin))
            if stop_at_first_failure and runs[-1].kind is not Kind.OK:
                break
        self.runs_left -= len(runs)
        return Execution(self.build, runs)

    def _run(self, program: Program, stdin: bytes) -> Outcome:
        if self.answer is not None:
            return self.answer(program, stdin)
        return Outcome(Kind.OK, self.stdout, "", 0, 0.0)

    def close(self) -> None:
        """Nothing to stop; `closed` says it was called."""
        self.closed = True


@contextlib.contextmanager
def stand_in_judge(latency_s: float, jitter: float = 0.5) -> Iterator[str]:
    """A chat-completions judge process answering after `latency_s` (times 1 ± `jitter`,
    drawn per call); its base URL, killed on exit."""
    command = [sys.executable, "-m", "reward_service.bench.chat_stand_in", str(latency_s)]
    with subprocess.Popen([*command, str(jitter)], stdout=subprocess.PIPE, text=True) as process:
        try:
            assert process.stdout is not None
            yield process.stdout.readline().strip()
        finally:
            process.kill()
