"""A burst of answers crafted to be slow to screen never stalls the service."""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import orjson
import pytest

from reward_service.testing import LivenessProbe, LiveServer, live_server
from tests.conftest import TEST_ENV

DEADLINE_S = float(TEST_ENV["REWARD_DEADLINE_S"])
CONCURRENCY = 16
NEAR_CAP = 8 * 1024 * 1024 - 1024
"""Characters of a response whose body sits just under the 8 MiB body cap."""
SCREENED = 1_900_000
"""Characters of a response just under the 2M-character cap past which it is not screened."""
FLOOD = 100_000

HOSTILE: dict[str, tuple[str, int]] = {
    "ones_tower_800": ("so \\boxed{" + "1^" * 800 + "1}", 4),
    "nines_tower_800": ("so \\boxed{" + "9^" * 800 + "9}", 16),
    "braced_tower": ("\\boxed{" + "{9^{" * 400 + "9" + "}}" * 400 + "}", 4),
    "nested_braces": ("\\boxed{" + "{" * 5_000 + "1" + "}" * 5_000 + "}", 2),
    "nested_parens": ("\\boxed{" + "(" * 5_000 + "1" + ")" * 5_000 + "}", 2),
    "nested_brackets": ("\\boxed{" + "[" * 5_000 + "1" + "]" * 5_000 + "}", 2),
    "nested_left": ("\\boxed{" + "\\left(" * 5_000 + "1" + "\\right)" * 5_000 + "}", 2),
    "open_braces": ("\\boxed{" + "{" * SCREENED, 2),
    "flood_carets": ("^" * FLOOD, 2),
    "flood_bangs": ("!" * FLOOD, 2),
    "flood_closers": ("}" * FLOOD, 2),
    "flood_dollars": ("$" * FLOOD, 2),
    "flood_spaces": (" " * FLOOD, 2),
    "flood_digits": ("9" * FLOOD, 2),
    "flood_backslashes": ("\\" * FLOOD, 2),
    "flood_lefts": ("\\left(" * (FLOOD // 6), 2),
    "boxed_digits": ("\\boxed{" + "9" * 10_000 + "}", 2),
    "many_boxes": ("\\boxed{1} " * 5_000, 2),
    "nines_tower_1.9M": ("so \\boxed{" + "9^" * (SCREENED // 2) + "9}", 2),
    "tower_near_cap": ("1^" * (NEAR_CAP // 2), 1),
    "braces_near_cap": ("{" * NEAR_CAP, 1),
}
"""Answers that were slow to screen, or probe the screens' edges: (response, copies).

`ones_tower_800` passes the screens (its value is 1) and costs math_verify's parser about
0.7-1.5 s, or the grader's timeout, in a worker: more copies than the two workers can
clear within the bound below would measure queueing, not the screens."""

NORMAL = [
    ("so \\boxed{42}", "42", 1.0),
    ("so \\boxed{41}", "42", 0.0),
    ("The answer is $\\frac{1}{2}$.", "0.5", 1.0),
]
NORMAL_COPIES = 8


@dataclass(frozen=True)
class _Request:
    name: str
    body: bytes
    expected: float | None
    """The reward a normal answer must get; None for a hostile one."""


@dataclass(frozen=True)
class _Answer:
    request: _Request
    status_code: int
    elapsed_s: float
    detail: dict[str, Any]


def _requests() -> list[_Request]:
    hostile = [
        _Request(name, orjson.dumps({"response": response, "label": "42"}), None)
        for name, (response, copies) in HOSTILE.items()
        for _ in range(copies)
    ]
    normal = [
        _Request(response, orjson.dumps({"response": response, "label": label}), reward)
        for response, label, reward in NORMAL * NORMAL_COPIES
    ]
    requests = hostile + normal
    random.Random(12).shuffle(requests)
    return requests


async def _post(client: httpx.AsyncClient, slots: asyncio.Semaphore, request: _Request) -> _Answer:
    async with slots:
        started = time.perf_counter()
        response = await client.post(
            "/score",
            content=request.body,
            params={"detail": "1"},
            headers={"content-type": "application/json"},
        )
        elapsed_s = time.perf_counter() - started
    detail = response.json() if response.status_code == 200 else {}
    return _Answer(request, response.status_code, elapsed_s, detail)


async def _burst(url: str, requests: list[_Request]) -> list[_Answer]:
    slots = asyncio.Semaphore(CONCURRENCY)
    limits = httpx.Limits(max_connections=CONCURRENCY)
    async with httpx.AsyncClient(base_url=url, timeout=60, limits=limits) as client:
        return await asyncio.gather(*(_post(client, slots, request) for request in requests))


@pytest.fixture
def burst_server() -> Iterator[LiveServer]:
    """A private two-worker server: the burst must not slow other tests' server."""
    with live_server(workers=2, env=TEST_ENV) as running:
        yield running


@pytest.mark.slow
@pytest.mark.alone
def test_hostile_burst_never_stalls_the_service(burst_server: LiveServer) -> None:
    """Slow-to-screen answers, 16 at once, each answered in time; /livez fast; normal ones right."""
    requests = _requests()
    with LivenessProbe(burst_server.url) as probe:
        answers = asyncio.run(_burst(burst_server.url, requests))
    assert probe.failures == 0
    assert probe.slowest_s < 0.5
    late = [
        (a.request.name, a.status_code, round(a.elapsed_s, 2), a.detail.get("status"))
        for a in answers
        if a.request.expected is None
        and not (
            a.status_code == 200
            and isinstance(a.detail.get("reward"), float)
            and a.elapsed_s < DEADLINE_S + 3
        )
    ]
    assert late == []
    wrong = [
        (a.request.name, a.detail)
        for a in answers
        if a.request.expected is not None and a.detail.get("reward") != a.request.expected
    ]
    assert wrong == []


NESTED = b'{"items": [' + b"[[[]]]," * 1_100_000 + b"[]]}"
"""8 MiB of tiny nested lists: 3.3 million containers, about 2 s of parsing."""


async def _costly_bodies(url: str) -> tuple[list[httpx.Response], httpx.Response]:
    """Four nested-list bodies at once, beside a SLIME answer of brackets (text, not lists)."""
    brackets = orjson.dumps({"response": "[" * 1_000_000 + " so \\boxed{42}", "label": "42"})
    async with httpx.AsyncClient(base_url=url, timeout=60) as client:
        headers = {"content-type": "application/json"}
        nested = [client.post("/score/batch", content=NESTED, headers=headers) for _ in range(4)]
        text = client.post("/score", content=brackets, headers=headers)
        *refused, answered = await asyncio.gather(*nested, text)
    return refused, answered


@pytest.mark.slow
@pytest.mark.alone
def test_costly_bodies_never_hold_the_loop(burst_server: LiveServer) -> None:
    """Four 8 MiB bodies of nested lists are parsed off the loop and refused (413, naming the
    setting) while /livez answers at once; an answer of a million brackets is still graded."""
    with LivenessProbe(burst_server.url) as probe:
        refused, answered = asyncio.run(_costly_bodies(burst_server.url))
    assert [r.status_code for r in refused] == [413] * 4
    assert all("REWARD_MAX_BODY_CONTAINERS" in r.json()["error"] for r in refused)
    assert answered.status_code == 200 and answered.json() == 1.0
    assert probe.failures == 0
    assert probe.slowest_s < 0.25, probe.slowest_s
