"""Neighbours: a steady SLIME-shaped load beside every kind of request that once disturbed it.

Issue 36's closing check. For `seconds`, four clients run at once against one
service:

* steady: SLIME's client shape (one aiohttp session, keep-alive, `connections`
  at once, one `POST /score` per answer) through a GRPO workload whose every
  reward is known (`reward_service.bench.workload`); every answer must come
  back 200 with its reward;
* hostile bodies: every `HOSTILE_EVERY_S`, an 8 MiB body of tiny nested lists
  (3.3 million containers: refused, 413), a body nested 100,000 deep (400) and
  a label of 50,000 empty objects (parsed in the parse process, and graded);
* builds: C++ programs posted to `/run_code` with `files` that would configure
  their build (system headers, a spec file, `as` and `ld`) if it read them, one
  after another; each must still print `plain`;
* abandoned requests: every `ABANDON_EVERY_S`, `ABANDONED` programs that spin
  until their 10 s limit, whose client hangs up after `HANG_UP_AFTER_S`
  (verl's client giving up): the service must stop them.

`neighbours_in_a_process` runs them all in a fresh interpreter, niced as a
client on another machine would be to the service, so that a probe timing
`/livez` in the caller shares no interpreter and no CPU priority with them.
Loopback only, bounded by `seconds` (and every request by a timeout).
"""

from __future__ import annotations

import asyncio
import base64
import itertools
import multiprocessing
import os
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import aiohttp
import orjson

from reward_service.bench.workload import grpo_workload, request_body

HOSTILE_EVERY_S = 4.0
ABANDON_EVERY_S = 3.0
ABANDONED = 3
HANG_UP_AFTER_S = 1.0
CLIENT_NICE = 5
"""The clients' niceness: the service's own (its workers run at REWARD_WORKER_NICE)
is what is measured, not a scheduler sharing two cores with the load's generator."""

NESTED = b'{"items": [' + b"[[[]]]," * 1_100_000 + b"[]]}"
"""8 MiB of tiny nested lists: 3.3 million containers, past the container cap."""
DEEP = b'{"response": "x", "label": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"
"""Nested past any JSON reader's depth limit."""
WIDE = orjson.dumps({"response": "so \\boxed{1}", "label": [{}] * 50_000})
"""50,000 empty objects: past the 20,000 parsed on the loop, under the container cap."""

CPP_SOURCE = '#include <iostream>\nint main() { std::cout << "plain\\n"; }\n'
CPP_FILES = {
    "iostream": "#error configured\n",
    "bits/stdc++.h": "#error configured\n",
    "specs": "*cc1plus:\n-Dconfigured\n",
    "as": "#!/bin/sh\necho configured\n",
    "ld": "#!/bin/sh\necho configured\n",
}
"""Files that would configure g++ if the build read them: it must print `plain` anyway."""
SPIN = "while True:\n    pass\n"


@dataclass
class Report:
    """What each client saw."""

    steady_answers: int = 0
    steady_wrong: list[str] = field(default_factory=list)
    """Each answer that was not 200 with its known reward, described."""
    hostile: dict[str, list[int]] = field(default_factory=dict)
    """Statuses by kind of hostile body."""
    builds: list[str] = field(default_factory=list)
    """Each build's printed output (`run_result.stdout`), or what went wrong."""
    abandoned: int = 0


async def _steady(
    url: str, until: float, connections: int, report: Report, timeout_s: float
) -> None:
    items = grpo_workload(seed=36, answers=4_000, min_chars=500, max_chars=4_000)
    bodies = [(orjson.dumps(request_body(item)), item["expected"]) for item in items]
    connector = aiohttp.TCPConnector(limit=connections)
    headers = {"Content-Type": "application/json"}
    timeout = aiohttp.ClientTimeout(total=timeout_s)
    async with aiohttp.ClientSession(connector=connector, timeout=timeout) as session:
        turn = itertools.count()

        async def stream() -> None:
            while time.monotonic() < until:
                body, expected = bodies[next(turn) % len(bodies)]
                try:
                    async with session.post(f"{url}/score", data=body, headers=headers) as answer:
                        text = await answer.text()
                        got = float(text) if answer.status == 200 else None
                except (aiohttp.ClientError, asyncio.TimeoutError, ValueError) as exc:
                    report.steady_wrong.append(f"{type(exc).__name__}: {exc}")
                    continue
                report.steady_answers += 1
                if got != expected:
                    report.steady_wrong.append(f"http {answer.status}: {text[:80]} != {expected}")

        await asyncio.gather(*(stream() for _ in range(connections)))


async def _post(session: aiohttp.ClientSession, url: str, body: bytes) -> tuple[int, bytes]:
    headers = {"Content-Type": "application/json"}
    async with session.post(url, data=body, headers=headers) as answer:
        return answer.status, await answer.read()


async def _hostile(url: str, until: float, report: Report) -> None:
    kinds = {"nested": ("/score/batch", NESTED), "deep": ("/score", DEEP), "wide": ("/score", WIDE)}
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=60)) as session:
        while time.monotonic() < until:
            started = time.monotonic()
            for kind, (path, body) in kinds.items():
                status, _ = await _post(session, f"{url}{path}", body)
                report.hostile.setdefault(kind, []).append(status)
            await asyncio.sleep(max(0.0, HOSTILE_EVERY_S - (time.monotonic() - started)))


def _run_code(code: str, language: str, files: dict[str, str]) -> bytes:
    encoded = {path: base64.b64encode(text.encode()).decode() for path, text in files.items()}
    body = {"code": code, "language": language, "run_timeout": 10, "compile_timeout": 10}
    return orjson.dumps({**body, "files": encoded})


async def _builds(url: str, until: float, report: Report) -> None:
    body = _run_code(CPP_SOURCE, "cpp", CPP_FILES)
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=60)) as session:
        while time.monotonic() < until:
            status, raw = await _post(session, f"{url}/run_code", body)
            answer = orjson.loads(raw) if status == 200 else {}
            run = answer.get("run_result") or {}
            report.builds.append(run.get("stdout") or f"http {status}: {raw[:200]!r}")


async def _abandoning(url: str, until: float, report: Report) -> None:
    body = _run_code(SPIN, "python", {})
    while time.monotonic() < until:
        async with aiohttp.ClientSession() as session:
            posts = [
                asyncio.ensure_future(_post(session, f"{url}/run_code", body))
                for _ in range(ABANDONED)
            ]
            await asyncio.sleep(HANG_UP_AFTER_S)
            for post in posts:
                post.cancel()
            await asyncio.gather(*posts, return_exceptions=True)
        report.abandoned += ABANDONED
        await asyncio.sleep(ABANDON_EVERY_S - HANG_UP_AFTER_S)


async def neighbours(url: str, seconds: float, connections: int = 32) -> Report:
    """The four clients against `url` for `seconds`; what they saw."""
    report = Report()
    until = time.monotonic() + seconds
    await asyncio.gather(
        _steady(url, until, connections, report, timeout_s=120),
        _hostile(url, until, report),
        _builds(url, until, report),
        _abandoning(url, until, report),
    )
    return report


def _neighbours(url: str, seconds: float, connections: int) -> dict[str, Any]:
    os.nice(CLIENT_NICE)
    return asyncio.run(neighbours(url, seconds, connections)).__dict__


def neighbours_in_a_process(url: str, seconds: float, connections: int = 32) -> Report:
    """`neighbours`, run in a fresh interpreter at `CLIENT_NICE`; its report."""
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=1, mp_context=context) as executor:
        return Report(**executor.submit(_neighbours, url, seconds, connections).result())
