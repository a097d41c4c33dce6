"""Half-sent bodies cannot hold admission slots: the whole body must arrive in time."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Iterator
from urllib.parse import urlsplit

import httpx
import pytest

from reward_service.testing import LiveServer, live_server
from tests.conftest import FAKE_SCORER

CAPACITY = 8
BODY_TIMEOUT_S = 3.0
MARGIN_S = 10.0
"""Slack for a slow, shared machine on top of the body timeout."""
BODY = b'{"response": "1", "label": "1", "pad": "' + b"x" * 400 + b'"}'


STRICT = {
    "REWARD_EXTRA_SCORERS": FAKE_SCORER,
    "REWARD_MAX_QUEUE": str(CAPACITY),
    "REWARD_BODY_TIMEOUT_S": str(BODY_TIMEOUT_S),
}
"""Room for 8 requests at a time; bodies must arrive within 3 s."""


@pytest.fixture
def filled() -> Iterator[LiveServer]:
    """A strict server of its own, for the test that fills its bound with stalled bodies."""
    with live_server(workers=1, env=STRICT) as running:
        yield running


@pytest.fixture(scope="module")
def strict() -> Iterator[LiveServer]:
    """A strict server the other tests share: each leaves every slot free, and counts what
    it checks as a difference of the metrics before and after."""
    with live_server(workers=1, env=STRICT) as running:
        yield running


async def _half_sent(url: str, drip_every_s: float | None) -> tuple[bytes, float]:
    """Send headers and the body's first bytes, then stall (or drip a byte now and then).

    Returns what the server answered before closing, and after how long.
    """
    parts = urlsplit(url)
    reader, writer = await asyncio.open_connection(parts.hostname, parts.port)
    loop = asyncio.get_running_loop()
    head = (
        f"POST /score/fake HTTP/1.1\r\nHost: {parts.netloc}\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(BODY)}\r\n\r\n"
    )
    writer.write(head.encode() + BODY[:20])
    await writer.drain()
    started = loop.time()

    async def drip(every_s: float) -> None:
        with contextlib.suppress(OSError):
            for byte in BODY[20:]:
                await asyncio.sleep(every_s)
                writer.write(bytes([byte]))
                await writer.drain()

    dripping = asyncio.ensure_future(drip(drip_every_s)) if drip_every_s else None
    try:
        answer = await asyncio.wait_for(reader.read(), 2 * (BODY_TIMEOUT_S + MARGIN_S))
    except (ConnectionError, asyncio.TimeoutError):
        answer = b""
    finally:
        if dripping is not None:
            dripping.cancel()
        writer.close()
    return answer, loop.time() - started


async def _first_success(
    url: str, limit_s: float, after_refusal: bool = False
) -> list[tuple[float, int]]:
    """Post a normal request every 0.25 s until one gets 200 (with `after_refusal`, one after
    a 503, posting every 0.02 s until that 503): (seconds, status) of each."""
    loop = asyncio.get_running_loop()
    started = loop.time()
    seen: list[tuple[float, int]] = []
    async with httpx.AsyncClient(base_url=url, timeout=limit_s) as client:
        while loop.time() - started < limit_s:
            response = await client.post("/score/fake", json={"response": "1"})
            seen.append((loop.time() - started, response.status_code))
            refused = not after_refusal or any(status == 503 for _, status in seen)
            if response.status_code == 200 and refused:
                break
            await asyncio.sleep(0.25 if refused else 0.02)
    return seen


async def _fill_and_probe(
    url: str,
) -> tuple[list[tuple[bytes, float]], list[tuple[float, int]]]:
    stalled = [asyncio.ensure_future(_half_sent(url, None)) for _ in range(CAPACITY - 1)]
    stalled.append(asyncio.ensure_future(_half_sent(url, 0.5)))
    probes = await _first_success(url, BODY_TIMEOUT_S + MARGIN_S, after_refusal=True)
    return await asyncio.gather(*stalled), probes


def test_stalled_and_dripping_bodies_free_their_slots(filled: LiveServer) -> None:
    """Eight half-sent bodies (one dripping) fill the bound, get 408 or a close, and free it."""
    stalled, probes = asyncio.run(_fill_and_probe(filled.url))
    statuses = [status for _, status in probes]
    assert 503 in statuses, f"the half-sent bodies did not fill the bound: {probes}"
    assert set(statuses[: statuses.index(503)]) <= {200}, probes
    assert probes[-1][1] == 200, f"never answered 200 again: {probes}"
    assert probes[-1][0] < BODY_TIMEOUT_S + MARGIN_S
    for answer, seconds in stalled:
        assert seconds < BODY_TIMEOUT_S + MARGIN_S, "a half-sent body held its slot"
        if answer:
            head, _, body = answer.partition(b"\r\n\r\n")
            assert head.startswith(b"HTTP/1.1 408"), answer[:200]
            assert b"connection: close" in head.lower()
            assert "not received within" in json.loads(body)["error"]
    assert any(answer for answer, _ in stalled), "no half-sent body was answered 408"


def test_body_arriving_in_time_is_graded(strict: LiveServer) -> None:
    """A body sent slowly but whole within the timeout is graded as usual."""

    async def slow_but_whole() -> bytes:
        parts = urlsplit(strict.url)
        reader, writer = await asyncio.open_connection(parts.hostname, parts.port)
        body = b'{"response": "0.25"}'
        head = (
            f"POST /score/fake HTTP/1.1\r\nHost: {parts.netloc}\r\nConnection: close\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
        )
        writer.write(head.encode() + body[:5])
        await asyncio.sleep(BODY_TIMEOUT_S / 3)
        writer.write(body[5:])
        answer = await asyncio.wait_for(reader.read(), BODY_TIMEOUT_S + MARGIN_S)
        writer.close()
        return answer

    answer = asyncio.run(slow_but_whole())
    assert answer.startswith(b"HTTP/1.1 200"), answer[:200]
    assert answer.endswith(b"0.25")


def test_a_client_that_hangs_up_mid_body_is_counted_not_a_server_error(strict: LiveServer) -> None:
    """A body cut off by the client's close counts as ClientGone, frees its slot, and is no 500."""

    async def hang_up() -> None:
        parts = urlsplit(strict.url)
        _, writer = await asyncio.open_connection(parts.hostname, parts.port)
        head = (
            f"POST /score/fake HTTP/1.1\r\nHost: {parts.netloc}\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(BODY)}\r\n\r\n"
        )
        writer.write(head.encode() + BODY[:20])
        await writer.drain()
        await asyncio.sleep(0.3)
        writer.close()
        await writer.wait_closed()

    def count(metrics: str, line_start: str) -> float:
        lines = [line for line in metrics.splitlines() if line.startswith(line_start)]
        return sum(float(line.rsplit(" ", 1)[1]) for line in lines)

    async def all_hang_up() -> None:
        await asyncio.wait_for(asyncio.gather(*(hang_up() for _ in range(CAPACITY))), 30)

    before = httpx.get(f"{strict.url}/metrics").text
    asyncio.run(all_hang_up())
    probes = asyncio.run(_first_success(strict.url, MARGIN_S))
    after = httpx.get(f"{strict.url}/metrics").text
    gone = 'reward_rejected_requests_total{reason="ClientGone"}'
    assert probes[-1][1] == 200, probes
    assert count(after, gone) - count(before, gone) == CAPACITY
    server_errors = 'reward_http_requests_total{code="500"'
    assert count(after, server_errors) == count(before, server_errors)
