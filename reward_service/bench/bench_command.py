"""`reward-service bench`: the service against plain math_verify, side by side.

For each workload in `WORKLOADS` (mixed answer kinds; integer-only labels
as in DAPO-Math and GSM8K), or the one `--workload` names, every side
grades a GRPO-shaped set of answers fresh to it (its own seed: labels unique
per group, 8 answers per group, ~10% truncated), in one run on this machine:

* plain: the workload's plain grader (math_verify `parse` + `verify`; for
  `code`, a fresh subprocess per test, `bench/code_workload.py`; for `code-cpp`, g++ once
  per answer then a fresh subprocess per test, `bench/cpp_workload.py`; for `ifeval`, the
  same checkers through if-verifiable's own API, `bench/instruction_workload.py`) in as
  many processes as CPUs, what a peer does in-process;
* /score: the service over HTTP with a SLIME-like client (one aiohttp
  session, 64 connections);
* /score/batch: the service, chunks of 64 answers, eight chunks in flight.

It prints throughputs, ratios to plain, p50/p99 latency, wrong verdicts and
the service's cache and fast-path hit rates (from its /metrics).
`--memory-answers N` then streams N more answers and compares the service's
resident memory (all processes) with its size after warm-up.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import itertools
import multiprocessing
import os
import time
from collections.abc import Awaitable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from reward_service.bench import judge_bench
from reward_service.bench.code_workload import code_workload, grade_naive, warm_naive
from reward_service.bench.cpp_workload import cpp_workload, grade_naive_cpp, warm_naive_cpp
from reward_service.bench.instruction_workload import grade_plain, instruction_workload, warm_plain
from reward_service.bench.workload import Workload, grpo_workload, request_body
from reward_service.cpus import available_cpus
from reward_service.subcommands import Subparsers

T = TypeVar("T")

_SEEDS_PER_WORKLOAD = 4
"""Fresh answer sets per workload: plain, the server's warm-up, /score, /score/batch."""


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


def _plain_init() -> None:
    import reward_service.bench.reference  # noqa: F401  (math_verify, warm)


def _plain_grade(item: dict[str, Any]) -> float:
    """What a peer does per answer: parse both sides with math_verify and verify."""
    from reward_service.bench.reference import Case, plain_grade

    return plain_grade(Case(item["response"], item["label"], "bench"))[0]


def _integer_answers(seed: int, answers: int) -> list[dict[str, Any]]:
    return grpo_workload(seed, answers, kinds=("integer",))


WORKLOADS: dict[str, Workload] = {
    "mixed": Workload(grpo_workload, _plain_grade, _plain_init),
    "integer": Workload(_integer_answers, _plain_grade, _plain_init),
    "code": Workload(code_workload, grade_naive, warm_naive),
    "ifeval": Workload(instruction_workload, grade_plain, warm_plain),
    "code-cpp": Workload(cpp_workload, grade_naive_cpp, warm_naive_cpp),
}
"""The workloads `bench` runs, in order; a new one is one entry here."""


def _wrong(rewards: list[float], items: list[dict[str, Any]]) -> int:
    return sum(r != item["expected"] for r, item in zip(rewards, items, strict=True))


@contextlib.contextmanager
def _plain_pool(workload: Workload, warm_up: list[dict[str, Any]], processes: int) -> Iterator[Any]:
    """`processes` warm plain graders (each has graded answers of `warm_up`)."""
    with multiprocessing.get_context("forkserver").Pool(processes, workload.warm) as pool:
        pool.map(workload.plain, warm_up[: processes * 2], chunksize=1)
        yield pool


def _plain_round(pool: Any, workload: Workload, items: list[dict[str, Any]]) -> Run:
    """`items` graded by the plain graders of `pool`, timed."""
    started = time.perf_counter()
    rewards = pool.map(workload.plain, items, chunksize=4)
    elapsed = time.perf_counter() - started
    return Run(len(items), elapsed, _wrong(rewards, items))


def rounds_of(items: list[T], rounds: int) -> list[list[T]]:
    """`items` in `rounds` consecutive parts as even as can be (none empty)."""
    rounds = max(1, min(rounds, len(items)))
    size, extra = divmod(len(items), rounds)
    bounds = [i * size + min(i, extra) for i in range(rounds + 1)]
    return [items[a:b] for a, b in itertools.pairwise(bounds)]


async def _timed(call: Awaitable[T], latencies: list[float]) -> T:
    started = time.perf_counter()
    result = await call
    latencies.append(time.perf_counter() - started)
    return result


async def _single(
    url: str, items: list[dict[str, Any]], connections: int, path: str = "/score"
) -> Run:
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
        rewards = await asyncio.gather(*(_timed(post(item), latencies) for item in items))
        elapsed = time.perf_counter() - started
    return Run(len(items), elapsed, _wrong(list(rewards), items), tuple(latencies))


async def _batched(
    url: str,
    items: list[dict[str, Any]],
    chunk: int,
    in_flight: int,
    path: str = "/score/batch",
) -> Run:
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
        parts = await asyncio.gather(*(_timed(post(part), latencies) for part in chunks))
        elapsed = time.perf_counter() - started
    rewards = [r for part in parts for r in part]
    return Run(len(items), elapsed, _wrong(rewards, items), tuple(latencies))


def _scrape(url: str) -> dict[str, float]:
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


def _hit_rates(before: dict[str, float], after: dict[str, float]) -> str:
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


class _CpuShare:
    """Where the CPU went, summed over the rounds of one side: server, workers, sandboxes,
    this client."""

    def __init__(self) -> None:
        self.server_s = self.workers_s = self.sandboxes_s = self.client_s = 0.0
        self.answers = 0
        self.saw_sandboxes = False

    @contextlib.contextmanager
    def measure(self, server: Any, answers: int) -> Iterator[None]:
        workers = server.worker_pids()
        server_before = _cpu_seconds(server.process.pid)
        workers_before = sum(map(_cpu_seconds, workers))
        sandboxes = [d for worker in workers for d in _descendants(worker)]
        sandboxes_before = sum(_cpu_seconds(pid, reaped=True) for pid in sandboxes)
        client_before = time.process_time()
        yield
        self.server_s += _cpu_seconds(server.process.pid) - server_before
        self.workers_s += sum(map(_cpu_seconds, workers)) - workers_before
        self.sandboxes_s += sum(_cpu_seconds(pid, reaped=True) for pid in sandboxes)
        self.sandboxes_s -= sandboxes_before
        self.client_s += time.process_time() - client_before
        self.answers += answers
        self.saw_sandboxes = self.saw_sandboxes or bool(sandboxes)

    @property
    def text(self) -> str:
        def ms(seconds: float) -> str:
            return f"{seconds / max(1, self.answers) * 1000:.2f} ms"

        return (
            f"\n    cpu per answer: server {ms(self.server_s)}, workers {ms(self.workers_s)}, "
            + (f"their sandboxes {ms(self.sandboxes_s)}, " if self.saw_sandboxes else "")
            + f"client {ms(self.client_s)}"
        )


def _line(name: str, run: Run, plain: Run | None) -> str:
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


def _measure(
    server: Any, workload: Workload, seeds: Iterator[int], workers: int, args: argparse.Namespace
) -> None:
    """One workload's lines: plain, then /score and /score/batch with their CPU, then hit rates.

    With `--rounds N` each side's answers are graded in N parts, the sides taking turns
    (plain, /score, /score/batch, plain, ...), so that a change in the machine's other load
    falls on every side alike; each side's line sums its rounds."""

    def fresh() -> list[dict[str, Any]]:
        return workload.items(next(seeds), args.answers)

    plain_items = fresh()
    warm_up = fresh()[: workers * 4]
    single_items, batch_items = fresh(), fresh()
    parts = zip(
        *(rounds_of(items, args.rounds) for items in (plain_items, single_items, batch_items)),
        strict=True,
    )
    plain = single = batch = Run(0, 0.0, 0)
    single_cpu, batch_cpu = _CpuShare(), _CpuShare()
    with _plain_pool(workload, plain_items, workers) as pool:
        asyncio.run(_single(server.url, warm_up, args.connections))
        before = _scrape(server.url)
        for plain_part, single_part, batch_part in parts:
            plain += _plain_round(pool, workload, plain_part)
            with single_cpu.measure(server, len(single_part)):
                single += asyncio.run(_single(server.url, single_part, args.connections))
            with batch_cpu.measure(server, len(batch_part)):
                batch += asyncio.run(_batched(server.url, batch_part, 64, 8))
    print(_line("plain", plain, None), flush=True)
    print(_line("/score", single, plain) + single_cpu.text, flush=True)
    print(_line("/score/batch", batch, plain) + batch_cpu.text, flush=True)
    print(f"  service: {_hit_rates(before, _scrape(server.url))}", flush=True)


def _bench(args: argparse.Namespace) -> None:
    from reward_service.local_server import live_server

    if args.workload == "judge":
        judge_bench.run(args)
        return

    workers = args.workers or available_cpus()
    rounds = f", {args.rounds} rounds taking turns" if args.rounds > 1 else ""
    print(
        f"bench: {args.answers} answers per side and workload, {workers} processes per side, "
        f"seed {args.seed}{rounds}",
        flush=True,
    )
    with live_server(workers=workers) as server:
        # Seeds follow a workload's place in WORKLOADS, so one run alone grades
        # the same answers as its part of a run of all.
        for position, (name, workload) in enumerate(WORKLOADS.items()):
            if args.workload in ("all", name):
                print(f"workload {name}:", flush=True)
                first = args.seed + 1 + position * _SEEDS_PER_WORKLOAD
                _measure(server, workload, itertools.count(first), workers, args)
        if args.memory_answers:
            _memory(server, args.memory_answers, args.seed + len(WORKLOADS) * _SEEDS_PER_WORKLOAD)


def _memory(server: Any, answers: int, seed: int) -> None:
    warm = server.rss_bytes()
    done = 0
    started = time.perf_counter()
    while done < answers:
        seed += 1
        items = grpo_workload(seed, min(4096, answers - done), max_chars=8_000)
        asyncio.run(_batched(server.url, items, 64, 8))
        done += len(items)
    after = server.rss_bytes()
    print(
        f"memory: {warm / 2**20:.0f} MiB after warm-up, {after / 2**20:.0f} MiB after {done} "
        f"more answers ({time.perf_counter() - started:.0f} s): x{after / warm:.2f}",
        flush=True,
    )


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} is not a positive number of rounds")
    return value


def register(commands: Subparsers) -> None:
    """Add the `bench` command to the CLI."""
    bench = commands.add_parser("bench", help="benchmark the service against plain math_verify")
    bench.add_argument("--answers", type=int, default=2000, help="answers per side and workload")
    bench.add_argument("--workers", type=int, help="processes per side (default: usable CPUs)")
    bench.add_argument("--connections", type=int, default=64, help="client connections")
    bench.add_argument("--seed", type=int, default=20261130, help="first workload seed")
    bench.add_argument(
        "--rounds",
        type=_positive,
        default=1,
        help="grade each side's answers in this many parts, the sides taking turns (default 1)",
    )
    bench.add_argument(
        "--workload",
        choices=[*WORKLOADS, "judge", "all"],
        default="all",
        help="measure this workload alone (default: all but judge, in turn)",
    )
    judge_bench.add_options(bench)
    bench.add_argument(
        "--memory-answers", type=int, default=0, help="then stream this many answers, check RSS"
    )
    bench.set_defaults(run=_bench)
