"""What both bench commands measure the service with: its clients, its counters, its CPU.

`bench_command` (the graders' workloads) and `judge_bench` (the judge workload)
time the same two clients, read the same /metrics counters and split the same
CPU seconds, and print their lines in one format; each imports these from here
and neither imports the other's pieces.

* `post_each`: a SLIME-like client, one aiohttp session, one request per answer;
* `post_in_chunks`: the batch endpoint, chunks of answers, some in flight at once;
* `Run`: what one side graded, how fast, how many wrong, each request's latency;
* `service_counters` and `hit_rates`: the verdict cache and grading paths, from /metrics;
* `CpuShare`: where the CPU went (server, workers, their sandboxes, this client);
* `report_line`: a side's printed line, its ratio to a baseline;
* `rounds_of`: a side's answers in the parts it grades taking turns with the others.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import os
import time
from collections.abc import Awaitable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from reward_service.bench.workload import request_body

T = TypeVar("T")


@dataclass(frozen=True)
class Run:
    """One side's measurement."""

    answers: int
    seconds: float
    wrong: int
    latencies_s: tuple[float, ...] = ()

    @property
    def rate(self) -> float:
        return self.answers / self.seconds

    def __add__(self, other: Run) -> Run:
        """Two rounds of one side as one measurement."""
        return Run(
            self.answers + other.answers,
            self.seconds + other.seconds,
            self.wrong + other.wrong,
            self.latencies_s + other.latencies_s,
        )

    def percentile_ms(self, q: float) -> float:
        if not self.latencies_s:
            return float("nan")
        ordered = sorted(self.latencies_s)
        return 1000 * ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def wrong(rewards: list[float], items: list[dict[str, Any]]) -> int:
    """How many of `rewards` differ from the reward their answer carries (`expected`)."""
    return sum(r != item["expected"] for r, item in zip(rewards, items, strict=True))


async def timed(call: Awaitable[T], latencies: list[float]) -> T:
    """`call`'s result, its wall time appended to `latencies`."""
    started = time.perf_counter()
    result = await call
    latencies.append(time.perf_counter() - started)
    return result


async def post_each(
    url: str, items: list[dict[str, Any]], connections: int, path: str = "/score"
) -> Run:
    """Every answer of `items` posted alone to `path`, over `connections` connections."""
    import aiohttp

    latencies: list[float] = []
    connector = aiohttp.TCPConnector(limit=connections)
    async with aiohttp.ClientSession(
        connector=connector, timeout=aiohttp.ClientTimeout(total=120)
    ) as session:

        async def post(item: dict[str, Any]) -> float:
            async with session.post(f"{url}{path}", json=request_body(item)) as resp:
                resp.raise_for_status()
                reward: float = await resp.json()
                return reward

        started = time.perf_counter()
        rewards = await asyncio.gather(*(timed(post(item), latencies) for item in items))
        elapsed = time.perf_counter() - started
    return Run(len(items), elapsed, wrong(list(rewards), items), tuple(latencies))


async def post_in_chunks(
    url: str,
    items: list[dict[str, Any]],
    chunk: int,
    in_flight: int,
    path: str = "/score/batch",
) -> Run:
    """`items` posted to the batch endpoint `path`, `chunk` answers a request, `in_flight` at
    once."""
    import aiohttp

    latencies: list[float] = []
    chunks = [items[i : i + chunk] for i in range(0, len(items), chunk)]
    gate = asyncio.Semaphore(in_flight)
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=300)) as session:

        async def post(part: list[dict[str, Any]]) -> list[float]:
            async with gate:
                body = {"items": [request_body(item) for item in part]}
                async with session.post(f"{url}{path}", json=body) as resp:
                    resp.raise_for_status()
                    rewards: list[float] = (await resp.json())["rewards"]
                    return rewards

        started = time.perf_counter()
        parts = await asyncio.gather(*(timed(post(part), latencies) for part in chunks))
        elapsed = time.perf_counter() - started
    rewards = [r for part in parts for r in part]
    return Run(len(items), elapsed, wrong(rewards, items), tuple(latencies))


def service_counters(url: str) -> dict[str, float]:
    """The service's verdict-cache lookups and grading paths so far, from its /metrics."""
    import httpx
    from prometheus_client.parser import text_string_to_metric_families

    totals: dict[str, float] = {}
    for family in text_string_to_metric_families(httpx.get(f"{url}/metrics").text):
        for sample in family.samples:
            if sample.name == "reward_cache_lookups_total":
                key = f"cache_{sample.labels['result']}"
            elif sample.name == "reward_grading_paths_total":
                key = f"path_{sample.labels['path']}"
            else:
                continue
            totals[key] = totals.get(key, 0.0) + sample.value
    return totals


def hit_rates(before: dict[str, float], after: dict[str, float]) -> str:
    """The verdict cache's hit rate and each grading path's share between two readings."""
    delta = {k: after.get(k, 0.0) - before.get(k, 0.0) for k in after}
    lookups = delta.get("cache_hit", 0.0) + delta.get("cache_miss", 0.0)
    paths = sum(v for k, v in delta.items() if k.startswith("path_"))
    parts = [f"verdict cache hits {delta.get('cache_hit', 0.0) / lookups:.0%}" if lookups else ""]
    parts += [
        f"{key.removeprefix('path_')} {value / paths:.0%}"
        for key, value in sorted(delta.items())
        if key.startswith("path_") and paths
    ]
    return ", ".join(p for p in parts if p)


def _cpu_seconds(pid: int, reaped: bool = False) -> float:
    """User plus system CPU seconds of one process (and of the children it reaped), from /proc."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    ticks = sum(int(f) for f in fields[11 : 15 if reaped else 13])
    return ticks / os.sysconf("SC_CLK_TCK")


def _descendants(pid: int) -> list[int]:
    """The live processes below `pid` (a worker's code sandbox and its helpers)."""
    try:
        children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    except OSError:
        return []
    return [d for child in map(int, children) for d in (child, *_descendants(child))]


def _workers_cpu(server: Any) -> tuple[dict[int, float], dict[int, float]]:
    """CPU seconds by pid of the server's workers, and of their sandboxes' processes."""
    workers = server.worker_pids()
    sandboxes = [d for worker in workers for d in _descendants(worker)]
    return (
        {pid: _cpu_seconds(pid) for pid in workers},
        {pid: _cpu_seconds(pid, reaped=True) for pid in sandboxes},
    )


def _spent(before: dict[int, float], after: dict[int, float]) -> float:
    """CPU seconds between two readings by pid; a process started in between (a spare worker,
    its sandbox) counts from 0, one ended in between is lost."""
    return sum(seconds - before.get(pid, 0.0) for pid, seconds in after.items())


class CpuShare:
    """Where the CPU went, summed over the rounds of one side: server, workers, sandboxes,
    this client."""

    def __init__(self) -> None:
        self.server_s = self.workers_s = self.sandboxes_s = self.client_s = 0.0
        self.answers = 0
        self.saw_sandboxes = False

    @contextlib.contextmanager
    def measure(self, server: Any, answers: int) -> Iterator[None]:
        server_before = _cpu_seconds(server.process.pid)
        workers_before, sandboxes_before = _workers_cpu(server)
        client_before = time.process_time()
        yield
        self.server_s += _cpu_seconds(server.process.pid) - server_before
        workers_after, sandboxes_after = _workers_cpu(server)
        self.workers_s += _spent(workers_before, workers_after)
        self.sandboxes_s += _spent(sandboxes_before, sandboxes_after)
        self.client_s += time.process_time() - client_before
        self.answers += answers
        self.saw_sandboxes = self.saw_sandboxes or bool(sandboxes_after)

    @property
    def text(self) -> str:
        def ms(seconds: float) -> str:
            return f"{seconds / max(1, self.answers) * 1000:.2f} ms"

        return (
            f"\n    cpu per answer: server {ms(self.server_s)}, workers {ms(self.workers_s)}, "
            + (f"their sandboxes {ms(self.sandboxes_s)}, " if self.saw_sandboxes else "")
            + f"client {ms(self.client_s)}"
        )


def report_line(name: str, run: Run, plain: Run | None) -> str:
    """A side's printed line: rate, its ratio to `plain` when given, latencies, wrong verdicts."""
    ratio = f"  x{run.rate / plain.rate:.2f} vs plain" if plain else ""
    latency = (
        f"  p50 {run.percentile_ms(0.5):.0f} ms  p99 {run.percentile_ms(0.99):.0f} ms"
        if run.latencies_s
        else ""
    )
    return (
        f"  {name:<13} {run.answers} answers in {run.seconds:6.2f} s = {run.rate:7.1f}/s"
        f"{ratio}{latency}  wrong: {run.wrong}"
    )


def rounds_of(items: list[T], rounds: int) -> list[list[T]]:
    """`items` in `rounds` consecutive parts as even as can be (none empty)."""
    rounds = max(1, min(rounds, len(items)))
    size, extra = divmod(len(items), rounds)
    bounds = [i * size + min(i, extra) for i in range(rounds + 1)]
    return [items[a:b] for a, b in itertools.pairwise(bounds)]
