"""verl's all-timeout case: how soon the service is idle once verl's client has given up.

    python loadtest/verl_timeouts.py                  # 100 runs of 10 s, a 2-worker service
    python loadtest/verl_timeouts.py --runs 40 --workers 1

verl's code reward (`verl/utils/reward_score/sandbox_fusion/utils.py`,
`check_correctness`) sends one `POST /run_code` per test case from a thread
pool of `max(32, 5 * cpus)` threads (under a shared semaphore of
`sandbox_fusion.max_concurrent`, 64), each with `compile_timeout` and
`run_timeout` of the case's timeout (10 s) and `memory_limit_MB` 1024, over a
fresh connection (`requests.post`, no session), with a timeout of compile +
run + 10 s = 30 s; it retries a 504 only, and on a timeout closes the
connection and moves on. `VerlClient` does the same with httpx. Here every
case is a program that runs until its 10 s limit, so with fewer workers than
threads most requests are still queued or running when the client gives up.

Printed: what the client got (answers, give-ups), the most requests the
service held at once against the client's connections, and the seconds from
the client's last give-up until the service's `reward_gradings_in_flight`
is 0 again (it is polled every 0.1 s). Loopback only, bounded: the service
started here is stopped at the end, and the wait for idle ends after
`--idle-wait-s`.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import httpx

from reward_service.local_server import live_server

API_TIMEOUT_S = 10
"""verl's `API_TIMEOUT`: added to the compile and run timeouts to make the request's."""
SPIN = "while True:\n    pass\n"
"""A program that runs until its time limit, as an answer that never terminates does."""


@dataclass
class Outcome:
    """One request: when it ended and how (an HTTP status, or `gave up`)."""

    ended: float
    how: str


def in_flight(url: str) -> float:
    """The service's `reward_gradings_in_flight` gauge."""
    for line in httpx.get(f"{url}/metrics", timeout=5).text.splitlines():
        if line.startswith("reward_gradings_in_flight "):
            return float(line.split()[1])
    raise RuntimeError("no reward_gradings_in_flight in /metrics")


class VerlClient:
    """verl's `check_correctness` for one generation with `cases` test cases."""

    def __init__(self, url: str, timeout_s: int, max_concurrent: int = 64) -> None:
        self.url = url
        self.timeout_s = timeout_s
        self.threads = max(32, (os.cpu_count() or 1) * 5)
        self._semaphore = threading.Semaphore(max_concurrent)
        self._lock = threading.Lock()
        self.open_connections = self.most_connections = 0

    def _call(self, code: str) -> Outcome:
        """One case: verl's `call_sandbox_api` under the semaphore (504 retried after 1 s, 2 s)."""
        payload = json.dumps(
            {
                "compile_timeout": self.timeout_s,
                "run_timeout": self.timeout_s,
                "code": code,
                "stdin": "",
                "memory_limit_MB": 1024,
                "language": "python",
                "files": {},
                "fetch_files": [],
            }
        )
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        request_timeout = self.timeout_s * 2 + API_TIMEOUT_S
        with self._semaphore:
            for attempt in range(3):
                try:
                    with self._connection():
                        answer = httpx.post(
                            f"{self.url}/run_code",
                            content=payload,
                            headers=headers,
                            timeout=request_timeout,
                        )
                except httpx.TimeoutException:
                    return Outcome(time.monotonic(), "gave up")
                except httpx.HTTPError as exc:
                    return Outcome(time.monotonic(), type(exc).__name__)
                if answer.status_code != 504:
                    break
                time.sleep(attempt + 1)
        return Outcome(time.monotonic(), f"http {answer.status_code}")

    @contextlib.contextmanager
    def _connection(self) -> Iterator[None]:
        """Counts the connections open at once while a request is on its way."""
        with self._lock:
            self.open_connections += 1
            self.most_connections = max(self.most_connections, self.open_connections)
        try:
            yield
        finally:
            with self._lock:
                self.open_connections -= 1

    def check_correctness(self, cases: int, code: str) -> list[Outcome]:
        """Every case posted through the thread pool; the outcomes in case order."""
        with ThreadPoolExecutor(max_workers=self.threads) as pool:
            return list(pool.map(lambda _: self._call(code), range(cases)))


class Watch:
    """Polls the service's gradings in flight every 0.1 s in a thread: the most seen, and
    when it was last above 0."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.most = 0.0
        self.last_busy = time.monotonic()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.wait(0.1):
            now = in_flight(self.url)
            self.most = max(self.most, now)
            if now > 0:
                self.last_busy = time.monotonic()

    def __enter__(self) -> Watch:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def measure(url: str, runs: int, timeout_s: int, idle_wait_s: float) -> dict[str, object]:
    """verl's client through `runs` cases that each run past its limit; the figures."""
    client = VerlClient(url, timeout_s)
    started = time.monotonic()
    with Watch(url) as watch:
        outcomes = client.check_correctness(runs, SPIN)
        gave_up = [o.ended for o in outcomes if o.how == "gave up"]
        last_give_up = max(gave_up, default=time.monotonic())
        deadline = time.monotonic() + idle_wait_s
        while in_flight(url) > 0 and time.monotonic() < deadline:
            time.sleep(0.1)
        idle = in_flight(url) == 0
    hows: dict[str, int] = {}
    for outcome in outcomes:
        hows[outcome.how] = hows.get(outcome.how, 0) + 1
    return {
        "runs": runs,
        "client_threads": client.threads,
        "client_most_connections": client.most_connections,
        "service_most_in_flight": watch.most,
        "outcomes": hows,
        "client_s": round(max(o.ended for o in outcomes) - started, 1),
        "idle_s_after_last_give_up": (
            round(max(0.0, watch.last_busy - last_give_up), 1) if idle else None
        ),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--timeout-s", type=int, default=10, help="verl's per-case timeout")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--idle-wait-s", type=float, default=60.0)
    parser.add_argument("--url", help="a service already running (default: start one here)")
    args = parser.parse_args(argv)
    if args.url:
        result = measure(args.url, args.runs, args.timeout_s, args.idle_wait_s)
    else:
        env = {"REWARD_ACCESS_LOG": "off"}
        with live_server(workers=args.workers, env=env) as server:
            result = measure(server.url, args.runs, args.timeout_s, args.idle_wait_s)
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
