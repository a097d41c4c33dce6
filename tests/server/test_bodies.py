"""Bodies parsed on the loop when cheap, in the parse process when their brackets say not."""

from __future__ import annotations

import asyncio
import json
import os
import time
from collections.abc import Iterator

import pytest

from reward_service.errors import PayloadTooLarge
from reward_service.server.bodies import INLINE_BRACKETS, Body, BodyParser, count_containers
from reward_service.server.json_body import read_json


@pytest.fixture
def parser() -> Iterator[BodyParser]:
    parsing = BodyParser(max_containers=10_000)
    yield parsing
    parsing.close()


def _body(raw: bytes) -> Body:
    return Body(raw, raw.count(b"[") + raw.count(b"{"))


def test_containers_are_counted_up_to_one_past_the_stop() -> None:
    """Arrays and objects count, nested or not; the walk stops once past the cap."""
    assert count_containers({"a": [1, [2, {}]], "b": "[{"}, 100) == 4
    assert count_containers([[[]] * 10] * 10, 5) == 6


async def test_a_plain_body_is_parsed_on_the_loop(parser: BodyParser) -> None:
    """A SLIME body is read where it arrived: no process."""
    body = json.dumps({"prompt": "p", "response": "\\boxed{1}", "label": [1, 2]}).encode()
    assert await parser.parse(_body(body)) == read_json(body)
    assert parser.offloaded == 0


async def test_text_full_of_brackets_comes_back_whole(parser: BodyParser) -> None:
    """A degenerate answer of brackets is text: parsed in the process, returned unchanged."""
    response = "[{" * (INLINE_BRACKETS + 1) + "\ud800"
    body = json.dumps({"prompt": "p", "response": response, "label": 12345678901234567890123})
    raw = body.encode()
    value = await parser.parse(_body(raw))
    assert parser.offloaded == 1
    assert value == read_json(raw)
    assert isinstance(value, dict) and value["response"] == response
    assert value["label"] == 12345678901234567890123


async def test_a_body_of_containers_past_the_cap_is_refused_naming_the_setting(
    parser: BodyParser,
) -> None:
    """Tiny nested lists past the cap: 413's error, naming REWARD_MAX_BODY_CONTAINERS."""
    raw = b'{"items": [' + b"[[]]," * 30_000 + b"[]]}"
    with pytest.raises(PayloadTooLarge, match="REWARD_MAX_BODY_CONTAINERS"):
        await parser.parse(_body(raw))


async def test_a_body_that_is_not_json_is_a_value_error_in_the_process_too(
    parser: BodyParser,
) -> None:
    """The process's reading refuses what the loop's does."""
    raw = b"[" * (INLINE_BRACKETS + 5)
    with pytest.raises(ValueError, match="nested too deep"):
        await parser.parse(_body(raw))


async def test_the_loop_runs_on_while_a_costly_body_is_parsed() -> None:
    """While 8 MiB of nested lists is parsed and refused, the loop keeps ticking: its longest
    pause is a small part of the parse's time."""
    parsing = BodyParser(max_containers=10_000)
    raw = b'{"items": [' + b"[[[]]]," * 1_100_000 + b"[]]}"
    await asyncio.to_thread(lambda: None)
    longest = 0.0
    done = asyncio.Event()

    async def tick() -> None:
        nonlocal longest
        last = time.perf_counter()
        while not done.is_set():
            await asyncio.sleep(0.005)
            now = time.perf_counter()
            longest, last = max(longest, now - last), now

    ticker = asyncio.ensure_future(tick())
    started = time.perf_counter()
    try:
        with pytest.raises(PayloadTooLarge):
            await parsing.parse(_body(raw))
    finally:
        took = time.perf_counter() - started
        done.set()
        await ticker
        parsing.close()
    assert longest < max(0.25, took / 4), (longest, took)


async def test_the_parse_process_runs_below_the_server() -> None:
    """The parse process takes the workers' niceness: a costly body waits behind the loop."""
    parsing = BodyParser(max_containers=100_000, nice=5)
    try:
        await parsing.parse(_body(b"[" + b"[]," * INLINE_BRACKETS + b"[]]"))
        assert parsing._executor is not None
        niceness = asyncio.get_running_loop().run_in_executor(parsing._executor, os.nice, 0)
        assert await niceness == os.nice(0) + 5
    finally:
        parsing.close()
