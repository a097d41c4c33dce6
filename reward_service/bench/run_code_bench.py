"""`reward-service bench --workload run_code`: `/run_code` Python runs, some of them sleeping.

The shape issue 37 measured against SandboxFusion: `--answers` Python programs (400 in
the issue), 3% of which (12 of 400) sleep past their 2 s `run_timeout`, `IN_FLIGHT` (32)
requests at once; every program distinct (its own number), each of the others a few
milliseconds of CPU. Three sides, in `--rounds` parts taking turns:

* plain: every program run unconfined, `python main.py` in a subprocess of its own with
  the timeout, all `IN_FLIGHT` at once: what SandboxFusion does with isolation `none`;
* spares off: the service with `REWARD_WAITING_WORKERS=0` (the Kubernetes manifests'): a
  run that sleeps holds its worker, and its CPU slot, for its whole timeout;
* default: the service with `REWARD_WAITING_WORKERS` unset: up to as many spare workers
  as workers, started while runs sleep, take other runs meanwhile (`grading/pool.py`).

Lines: throughput, ratio to plain, p50/p99 per request, wrong answers (a sleeper must
answer `TimeLimitExceeded`, every other run its number), CPU per answer (the plain
side's: its subprocesses'), the spare workers the default side started, and the load
average before and after.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from reward_service.bench.measure import CpuShare, Run, report_line, rounds_of, timed
from reward_service.cpus import available_cpus

IN_FLIGHT = 32
TIMEOUT_S = 2
SLEEPERS = 0.03
"""The share of programs that sleep past the timeout (12 of 400)."""


def run_code_workload(seed: int, runs: int) -> list[dict[str, Any]]:
    """`runs` items `{body, expected}`: a `/run_code` body and the stdout it must print, or
    None for a sleeper (`TimeLimitExceeded`); shuffled."""
    rng = random.Random(seed)
    sleepers = round(runs * SLEEPERS)
    items = []
    for i in range(runs):
        n = rng.randint(1_000, 20_000)
        if i < sleepers:
            code, expected = f"import time\n# run {seed}-{i}\ntime.sleep({TIMEOUT_S + 1})\n", None
        else:
            code = f"# run {seed}-{i}\nn = int(input())\nprint(sum(k * k for k in range(n)))\n"
            expected = f"{sum(k * k for k in range(n))}\n"
        body = {"code": code, "language": "python", "stdin": f"{n}\n", "run_timeout": TIMEOUT_S}
        items.append({"body": body, "expected": expected})
    rng.shuffle(items)
    return items


def _right(answer: dict[str, Any], expected: str | None) -> bool:
    result = answer.get("run_result") or {}
    if expected is None:
        return bool(result.get("status") == "TimeLimitExceeded")
    return answer.get("status") == "Success" and result.get("stdout") == expected


async def post_runs(url: str, items: list[dict[str, Any]]) -> Run:
    """Every body of `items` posted to `/run_code`, `IN_FLIGHT` at once."""
    import aiohttp

    latencies: list[float] = []
    connector = aiohttp.TCPConnector(limit=IN_FLIGHT)
    async with aiohttp.ClientSession(
        connector=connector, timeout=aiohttp.ClientTimeout(total=300)
    ) as session:

        async def post(item: dict[str, Any]) -> bool:
            async with session.post(f"{url}/run_code", json=item["body"]) as resp:
                resp.raise_for_status()
                return _right(await resp.json(), item["expected"])

        started = time.perf_counter()
        right = await asyncio.gather(*(timed(post(item), latencies) for item in items))
        elapsed = time.perf_counter() - started
    return Run(len(items), elapsed, right.count(False), tuple(latencies))


def run_plain(items: list[dict[str, Any]], scratch: str) -> Run:
    """Every program run unconfined in a fresh `python`, `IN_FLIGHT` at once (a thread each
    waiting on its subprocess), killed at the timeout."""

    def run(index: int, item: dict[str, Any]) -> tuple[bool, float]:
        started = time.perf_counter()
        path = Path(scratch, f"main-{index}.py")
        path.write_text(item["body"]["code"])
        try:
            done = subprocess.run(
                [sys.executable, str(path)],
                input=item["body"]["stdin"].encode(),
                capture_output=True,
                timeout=TIMEOUT_S,
                cwd=scratch,
                check=False,
            )
        except subprocess.TimeoutExpired:
            return item["expected"] is None, time.perf_counter() - started
        right = done.returncode == 0 and done.stdout.decode() == item["expected"]
        return right, time.perf_counter() - started

    started = time.perf_counter()
    with ThreadPoolExecutor(IN_FLIGHT) as pool:
        ran = list(pool.map(run, range(len(items)), items))
    elapsed = time.perf_counter() - started
    right = [r for r, _ in ran]
    return Run(len(items), elapsed, right.count(False), tuple(s for _, s in ran))


@contextlib.contextmanager
def _children_cpu(spent: list[float]) -> Iterator[None]:
    """Adds the CPU seconds of the subprocesses reaped in the block to `spent`."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    yield
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    spent.append(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)


def _spares_started(url: str) -> float:
    """`reward_spare_workers_total{event="started"}` from the service's /metrics."""
    import httpx
    from prometheus_client.parser import text_string_to_metric_families

    for family in text_string_to_metric_families(httpx.get(f"{url}/metrics").text):
        for sample in family.samples:
            if sample.name == "reward_spare_workers_total" and sample.labels["event"] == "started":
                return sample.value
    return 0.0


def _load() -> str:
    return "/".join(f"{load:.1f}" for load in os.getloadavg())


def run(args: argparse.Namespace) -> None:
    """The three sides, `--rounds` parts each, taking turns; their lines."""
    from reward_service.local_server import live_server

    workers = args.workers or available_cpus()
    runs = args.answers
    print(
        f"bench run_code: {runs} Python runs per side, {round(runs * SLEEPERS)} sleeping past "
        f"their {TIMEOUT_S} s timeout, {IN_FLIGHT} at once, {workers} workers, seed {args.seed}",
        flush=True,
    )
    sets = [run_code_workload(args.seed + side, runs) for side in range(3)]
    parts = zip(*(rounds_of(items, args.rounds) for items in sets), strict=True)
    plain = off = on = Run(0, 0.0, 0)
    plain_cpu: list[float] = []
    off_cpu, on_cpu = CpuShare(), CpuShare()
    with (
        live_server(workers=workers, env={"REWARD_WAITING_WORKERS": "0"}) as spares_off,
        live_server(workers=workers, env={"REWARD_WAITING_WORKERS": None}) as default,
        tempfile.TemporaryDirectory() as scratch,
    ):
        warm = run_code_workload(args.seed + 3, 4 * workers)
        for server in (spares_off, default):
            asyncio.run(post_runs(server.url, [i for i in warm if i["expected"] is not None]))
        load_before = _load()
        for plain_part, off_part, on_part in parts:
            with _children_cpu(plain_cpu):
                plain += run_plain(plain_part, scratch)
            with off_cpu.measure(spares_off, len(off_part)):
                off += asyncio.run(post_runs(spares_off.url, off_part))
            with on_cpu.measure(default, len(on_part)):
                on += asyncio.run(post_runs(default.url, on_part))
        load_after = _load()
        started = _spares_started(default.url)
    print(report_line("plain", plain, None), flush=True)
    print(f"    cpu per answer: {sum(plain_cpu) / runs * 1000:.2f} ms", flush=True)
    print(report_line("spares off", off, plain) + off_cpu.text, flush=True)
    print(report_line("default", on, plain) + on_cpu.text, flush=True)
    print(f"    spare workers started: {started:.0f} (at most {workers} at once)", flush=True)
    print(
        f"  default x{on.rate / off.rate:.2f} spares off; load average (1/5/15 min) "
        f"{load_before} before, {load_after} after",
        flush=True,
    )
