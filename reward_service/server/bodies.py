"""Reading a request's body: within its size cap, the byte budget and one deadline, and
parsed where the event loop does not wait on it.

The endpoints read their bodies themselves rather than through FastAPI, so
that a body is refused as soon as it is too large for its cap or for what
the requests in progress already hold (`reward_service.server.admission`),
before it is all in memory. JSON's reading (exact numbers, lone surrogates)
is `reward_service.server.json_body`'s.

A body's parse costs what its structure builds more than its bytes: 8 MiB of
`[[[]]],` is 3.3 million lists (about 2 s of CPU in orjson, all of it holding
the GIL, so a thread would not help), 8 MiB of digits or text a handful of
objects (0.1-0.3 s). So `read_body` counts a body's `[` and `{` as its chunks
arrive (linear, in C, spread over the reads): an upper bound of its
containers, brackets inside strings counted too. A body of at most
`INLINE_BRACKETS` is parsed on the loop (a few milliseconds at most); any
other in the parse process (`BodyParser`), which counts the containers the
parse built and refuses a body past `REWARD_MAX_BODY_CONTAINERS` before
anything comes back. A degenerate answer of `[[[[...` is text: it comes back
whole, one string, whatever its length.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import os
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Any, NamedTuple

from starlette.requests import ClientDisconnect, Request

from reward_service.errors import BadRequest, ClientGone, PayloadTooLarge, RequestTimeout
from reward_service.scorers.base import JSON
from reward_service.server.admission import Claim
from reward_service.server.json_body import read_json
from reward_service.settings import Settings


class Body(NamedTuple):
    """A request's bytes and the count of `[` and `{` in them."""

    raw: bytes
    brackets: int


async def read_body(request: Request, claim: Claim, max_bytes: int) -> Body:
    """The request body, its size checked against the cap and the budget before it is kept."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit():
        if int(declared) > max_bytes:
            raise PayloadTooLarge(f"body of {declared} bytes is over the {max_bytes}-byte cap")
        claim.hold(int(declared))
    chunks = []
    size = brackets = 0
    try:
        async for chunk in request.stream():
            size += len(chunk)
            if size > max_bytes:
                raise PayloadTooLarge(f"body is over the {max_bytes}-byte cap")
            claim.hold(size)
            chunks.append(chunk)
            brackets += chunk.count(b"[") + chunk.count(b"{")
    except ClientDisconnect:
        raise ClientGone(f"client hung up after {size} bytes of its body") from None
    return Body(b"".join(chunks), brackets)


async def read_object(
    request: Request, claim: Claim, settings: Settings, parser: BodyParser
) -> dict[str, Any]:
    """The request body as a JSON object, read within `body_timeout_s` in all.

    The deadline covers the whole body, not each read, so a client dripping
    a byte at a time cannot hold its admission slot longer than a stalled one.
    """
    try:
        body = await asyncio.wait_for(
            read_body(request, claim, settings.max_body_bytes), settings.body_timeout_s
        )
    except asyncio.TimeoutError:
        raise RequestTimeout(
            f"request body not received within {settings.body_timeout_s} s"
        ) from None
    try:
        value = await parser.parse(body)
    except ValueError as exc:
        raise BadRequest(f"body is not valid JSON: {exc}") from None
    if not isinstance(value, dict):
        raise BadRequest(f"body must be a JSON object, not {type(value).__name__}")
    return value


INLINE_BRACKETS = 20_000
"""Bodies with at most this many `[` and `{` are parsed on the event loop (about 2 ms)."""


class BodyParser:
    """Parses bodies on the loop when they are cheap, in one process of its own when not."""

    def __init__(self, max_containers: int, nice: int = 0) -> None:
        self.max_containers = max_containers
        self.nice = nice
        """Niceness added to the parse process (`REWARD_WORKER_NICE`): a costly body's parse,
        like a grading, is scheduled after the event loop."""
        self._executor: ProcessPoolExecutor | None = None
        self.offloaded = 0
        """Bodies parsed in the parse process (`/metrics`)."""

    async def parse(self, body: Body) -> JSON:
        """`body`'s JSON value (`read_json`'s reading); ValueError if it is not JSON,
        `PayloadTooLarge` past the container cap."""
        if body.brackets <= INLINE_BRACKETS:
            return read_json(body.raw)
        self.offloaded += 1
        if self._executor is None:
            context = multiprocessing.get_context("forkserver")
            self._executor = ProcessPoolExecutor(
                max_workers=1, mp_context=context, initializer=os.nice, initargs=(self.nice,)
            )
        loop = asyncio.get_running_loop()
        try:
            return await loop.run_in_executor(
                self._executor, parse_within, body.raw, self.max_containers
            )
        except BrokenProcessPool:  # the parse process died (killed, out of memory): a new one
            self._executor = None
            raise PayloadTooLarge("the body's parse ended its parse process") from None

    def close(self) -> None:
        """Stop the parse process, if one started."""
        executor, self._executor = self._executor, None
        if executor is not None:
            executor.shutdown(wait=False, cancel_futures=True)


def parse_within(body: bytes, max_containers: int) -> JSON:
    """In the parse process: `body` read as JSON, refused when its arrays and objects number
    more than `max_containers`."""
    value = read_json(body)
    containers = count_containers(value, max_containers)
    if containers > max_containers:
        raise PayloadTooLarge(
            f"body holds more than {max_containers} JSON arrays and objects "
            f"(REWARD_MAX_BODY_CONTAINERS)"
        )
    return value


def count_containers(value: JSON, stop_after: int) -> int:
    """The arrays and objects in `value`, counted up to one past `stop_after`."""
    count = 0
    stack = [value]
    while stack and count <= stop_after:
        item = stack.pop()
        if isinstance(item, list):
            count += 1
            stack.extend(item)
        elif isinstance(item, dict):
            count += 1
            stack.extend(item.values())
    return count
