"""`reward-service bench --workload run_code`: `/run_code` runs, some of them sleeping.

The shape issue 37 measured against SandboxFusion: `--answers` programs (400 in the
issue; Python, or C++ with `--run-code-language cpp`), 3% of which (12 of 400) sleep past
their 2 s `run_timeout`, `IN_FLIGHT` (32) requests at once; every program distinct (its
own number), each of the others a few milliseconds of CPU (a C++ one, its build besides).
Three sides, and a fourth with `--against URL`, in `--rounds` parts taking turns:

* plain: every program run unconfined, `python main.py` (or `g++` then the binary) in a
  subprocess of its own with the timeout, all `IN_FLIGHT` at once: what SandboxFusion does
  with isolation `none`;
* spares off: the service with `REWARD_WAITING_WORKERS=0` (the Kubernetes manifests'): a
  run that sleeps holds its worker, and its CPU slot, for its whole timeout;
* default: the service with `REWARD_WAITING_WORKERS` unset: up to as many spare workers
  as workers, started while runs sleep, take other runs meanwhile (`grading/pool.py`);
* against: the same requests posted to another SandboxFusion-compatible server's
  `/run_code` (SandboxFusion itself, say), by the same client. Its host must be loopback
  unless `--against-remote` says otherwise: the bench is a load test.

Lines: throughput, ratio to plain, p50/p99 per request, wrong answers (a sleeper must
answer `TimeLimitExceeded`, every other run its number), CPU per answer (the plain
side's: its subprocesses'; none for `against`, whose processes are not the bench's), the
statuses of a side's wrong answers, the spare workers the default side started, the
service's ratio to `against`, and the machine's load average before and after.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import ipaddress
import os
import random
import resource
import socket
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from reward_service.bench.measure import CpuShare, Run, report_line, rounds_of, timed
from reward_service.cpus import available_cpus

IN_FLIGHT = 32
TIMEOUT_S = 2
SLEEPERS = 0.03
"""The share of programs that sleep past the timeout (12 of 400)."""
COMPILE_TIMEOUT_S = 30
"""A C++ run's `compile_timeout`: where a runner starts all 32 builds at once (the plain
side, SandboxFusion), each takes seconds on a small machine; the service caps it at its own
build time, its builds taking turns for its CPU slots."""
LANGUAGES = ("python", "cpp")
CPP_COMPILE = ("g++", "-std=c++17")
"""The plain side's build, SandboxFusion's (`-O2` is the service's own)."""


def _program(language: str, tag: str, sleeper: bool) -> str:
    """A distinct program (`tag` in a comment): a sleeper, or one printing the sum of the
    squares below the number it reads; a C++ one includes one header, `iostream`."""
    if language == "python":
        if sleeper:
            return f"import time\n# run {tag}\ntime.sleep({TIMEOUT_S + 1})\n"
        return f"# run {tag}\nn = int(input())\nprint(sum(k * k for k in range(n)))\n"
    if sleeper:
        return (
            f'#include <iostream>\n// run {tag}\nextern "C" unsigned sleep(unsigned);\n'
            f"int main() {{ sleep({TIMEOUT_S + 1}); std::cout << 0 << std::endl; }}\n"
        )
    return (
        f"#include <iostream>\n// run {tag}\nint main() {{\n    long long n, s = 0;\n"
        "    std::cin >> n;\n    for (long long k = 0; k < n; k++) s += k * k;\n"
        "    std::cout << s << std::endl;\n}\n"
    )


def run_code_workload(seed: int, runs: int, language: str = "python") -> list[dict[str, Any]]:
    """`runs` items `{body, expected}`: a `/run_code` body in `language` and the stdout it
    must print, or None for a sleeper (`TimeLimitExceeded`); shuffled."""
    rng = random.Random(seed)
    sleepers = round(runs * SLEEPERS)
    items = []
    for i in range(runs):
        n = rng.randint(1_000, 20_000)
        body: dict[str, Any] = {
            "code": _program(language, f"{seed}-{i}", i < sleepers),
            "language": language,
            "stdin": f"{n}\n",
            "run_timeout": TIMEOUT_S,
        }
        if language == "cpp":
            body["compile_timeout"] = COMPILE_TIMEOUT_S
        expected = None if i < sleepers else f"{sum(k * k for k in range(n))}\n"
        items.append({"body": body, "expected": expected})
    rng.shuffle(items)
    return items


def against_url(url: str, remote: bool = False) -> str:
    """`url` without a trailing slash, if it is an http(s) URL whose host is loopback (every
    address it resolves to), or `remote`; else ValueError saying why."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"--against {url!r}: not an http(s) URL with a host")
    if not remote:
        try:
            addresses = {ipaddress.ip_address(parts.hostname)}
        except ValueError:
            try:
                found = socket.getaddrinfo(parts.hostname, parts.port or 80)
            except OSError as error:
                raise ValueError(f"--against {url!r}: {parts.hostname} unknown ({error})") from None
            addresses = {ipaddress.ip_address(str(info[4][0]).split("%")[0]) for info in found}
        if not all(address.is_loopback for address in addresses):
            raise ValueError(
                f"--against {url!r}: {parts.hostname} is not loopback; the bench is a load "
                "test (--against-remote to post to it all the same)"
            )
    return url.rstrip("/")


def _right(answer: dict[str, Any], expected: str | None) -> bool:
    result = answer.get("run_result") or {}
    if expected is None:
        return bool(result.get("status") == "TimeLimitExceeded")
    return answer.get("status") == "Success" and result.get("stdout") == expected


def _status(answer: dict[str, Any], expected: str | None) -> str:
    """An answer's status and its run's, `Failed/TimeLimitExceeded` say, `(sleeper)` after
    a sleeper's."""
    result = answer.get("run_result") or {}
    return f"{answer.get('status')}/{result.get('status')}" + (
        " (sleeper)" if expected is None else ""
    )


async def post_runs(
    url: str, items: list[dict[str, Any]], misses: Counter[str] | None = None
) -> Run:
    """Every body of `items` posted to `/run_code`, `IN_FLIGHT` at once; the statuses of the
    wrong answers counted in `misses`."""
    import aiohttp

    latencies: list[float] = []
    connector = aiohttp.TCPConnector(limit=IN_FLIGHT)
    async with aiohttp.ClientSession(
        connector=connector, timeout=aiohttp.ClientTimeout(total=300)
    ) as session:

        async def post(item: dict[str, Any]) -> bool:
            async with session.post(f"{url}/run_code", json=item["body"]) as resp:
                resp.raise_for_status()
                answer = await resp.json()
                right = _right(answer, item["expected"])
                if not right and misses is not None:
                    misses[_status(answer, item["expected"])] += 1
                return right

        started = time.perf_counter()
        right = await asyncio.gather(*(timed(post(item), latencies) for item in items))
        elapsed = time.perf_counter() - started
    return Run(len(items), elapsed, right.count(False), tuple(latencies))


def _plain_command(index: int, body: dict[str, Any], scratch: str) -> list[str] | None:
    """The command that runs `body`'s program unconfined: `python main.py`, or for C++ the
    binary, built first by `g++` (None if the build failed or ran past its timeout)."""
    if body["language"] == "python":
        path = Path(scratch, f"main-{index}.py")
        path.write_text(body["code"])
        return [sys.executable, str(path)]
    path = Path(scratch, f"main-{index}.cpp")
    path.write_text(body["code"])
    binary = str(path.with_suffix(""))
    try:
        built = subprocess.run(
            [*CPP_COMPILE, str(path), "-o", binary],
            capture_output=True,
            timeout=body["compile_timeout"],
            check=False,
        )
    except subprocess.TimeoutExpired:
        return None
    return [binary] if built.returncode == 0 else None


def run_plain(items: list[dict[str, Any]], scratch: str) -> Run:
    """Every program run unconfined in a fresh `python` (or built by `g++` and run),
    `IN_FLIGHT` at once (a thread each waiting on its subprocess), killed at the timeout."""

    def run(index: int, item: dict[str, Any]) -> tuple[bool, float]:
        started = time.perf_counter()
        command = _plain_command(index, item["body"], scratch)
        if command is None:
            return False, time.perf_counter() - started
        try:
            done = subprocess.run(
                command,
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


def add_options(bench: argparse.ArgumentParser) -> None:
    """The run_code workload's own options."""
    bench.add_argument(
        "--run-code-language",
        choices=LANGUAGES,
        default="python",
        help="run_code workload: the programs' language (default python)",
    )
    bench.add_argument(
        "--against",
        metavar="URL",
        help="run_code workload: also post the runs to this SandboxFusion-compatible server "
        "(its /run_code), a side taking turns with the others; loopback hosts only",
    )
    bench.add_argument(
        "--against-remote",
        action="store_true",
        help="let --against name a host that is not loopback",
    )


def _load() -> str:
    return "/".join(f"{load:.1f}" for load in os.getloadavg())


def _misses(misses: Counter[str]) -> str:
    """The statuses of a side's wrong answers, as a line under its own (none if none)."""
    if not misses:
        return ""
    return "\n    wrong answers: " + ", ".join(f"{k} {n}" for k, n in misses.most_common())


def run(args: argparse.Namespace) -> None:
    """The sides, `--rounds` parts each, taking turns; their lines."""
    from reward_service.local_server import live_server

    against = None
    if args.against:
        try:
            against = against_url(args.against, args.against_remote)
        except ValueError as error:
            raise SystemExit(str(error)) from None
    language = args.run_code_language
    workers = args.workers or available_cpus()
    runs = args.answers
    print(
        f"bench run_code: {runs} {language} runs per side, {round(runs * SLEEPERS)} sleeping "
        f"past their {TIMEOUT_S} s timeout, {IN_FLIGHT} at once, {workers} workers, seed "
        f"{args.seed}" + (f", against {against}" if against else "") + f"; load {_load()}",
        flush=True,
    )
    sides = 4 if against else 3
    sets = [run_code_workload(args.seed + side, runs, language) for side in range(sides)]
    parts = zip(*(rounds_of(items, args.rounds) for items in sets), strict=True)
    plain = off = on = other = Run(0, 0.0, 0)
    plain_cpu: list[float] = []
    off_cpu, on_cpu = CpuShare(), CpuShare()
    missed: list[Counter[str]] = [Counter(), Counter(), Counter()]
    with (
        live_server(workers=workers, env={"REWARD_WAITING_WORKERS": "0"}) as spares_off,
        live_server(workers=workers, env={"REWARD_WAITING_WORKERS": None}) as default,
        tempfile.TemporaryDirectory() as scratch,
    ):
        warm = run_code_workload(args.seed + sides, 4 * workers, language)
        for url in (spares_off.url, default.url, *([against] if against else [])):
            warmed = Counter[str]()
            done = asyncio.run(
                post_runs(url, [i for i in warm if i["expected"] is not None], warmed)
            )
            if done.wrong:
                print(f"  warm-up at {url}: {done.wrong} of {done.answers} wrong{_misses(warmed)}")
        load_before = _load()
        for plain_part, off_part, on_part, *other_part in parts:
            with _children_cpu(plain_cpu):
                plain += run_plain(plain_part, scratch)
            with off_cpu.measure(spares_off, len(off_part)):
                off += asyncio.run(post_runs(spares_off.url, off_part, missed[0]))
            with on_cpu.measure(default, len(on_part)):
                on += asyncio.run(post_runs(default.url, on_part, missed[1]))
            if against:
                other += asyncio.run(post_runs(against, other_part[0], missed[2]))
        load_after = _load()
        started = _spares_started(default.url)
    print(report_line("plain", plain, None), flush=True)
    print(f"    cpu per answer: {sum(plain_cpu) / runs * 1000:.2f} ms", flush=True)
    print(report_line("spares off", off, plain) + off_cpu.text + _misses(missed[0]), flush=True)
    print(report_line("default", on, plain) + on_cpu.text + _misses(missed[1]), flush=True)
    print(f"    spare workers started: {started:.0f} (at most {workers} at once)", flush=True)
    if against:
        print(report_line("against", other, plain) + _misses(missed[2]), flush=True)
        print(
            f"  default x{on.rate / other.rate:.2f} and spares off "
            f"x{off.rate / other.rate:.2f} vs against",
            flush=True,
        )
    print(
        f"  default x{on.rate / off.rate:.2f} spares off; load average (1/5/15 min) "
        f"{load_before} before, {load_after} after",
        flush=True,
    )
