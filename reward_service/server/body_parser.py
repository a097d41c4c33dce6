"""Request bodies parsed where the event loop does not wait on them.

A body's parse costs what its structure builds more than its bytes: 8 MiB of
`[[[]]],` is 3.3 million lists (about 2 s of CPU in orjson, all of it holding
the GIL, so a thread would not help), 8 MiB of digits or text a handful of
objects (0.1-0.3 s). The server counts a body's `[` and `{` as its chunks
arrive (`Brackets`: linear, in C, spread over the reads): an upper bound of its
containers, brackets inside strings counted too. A body of at most
`INLINE_BRACKETS` is parsed on the loop (a few milliseconds at most); any
other is parsed in the parse process, which counts the containers the parse
built and refuses a body past the `REWARD_MAX_BODY_CONTAINERS` cap before
anything comes back. A degenerate answer of `[[[[...` is text: it comes back
whole, one string, whatever its length.
"""

from __future__ import annotations

import asyncio
import multiprocessing
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool

from reward_service.errors import PayloadTooLarge
from reward_service.scorers.base import JSON
from reward_service.server.json_body import read_json

INLINE_BRACKETS = 20_000
"""Bodies with at most this many `[` and `{` are parsed on the event loop (about 2 ms)."""


class Brackets:
    """The running count of `[` and `{` in a body's chunks."""

    __slots__ = ("count",)

    def __init__(self) -> None:
        self.count = 0

    def add(self, chunk: bytes) -> None:
        self.count += chunk.count(b"[") + chunk.count(b"{")


class BodyParser:
    """Parses bodies on the loop when they are cheap, in one process of its own when not."""

    def __init__(self, max_containers: int) -> None:
        self.max_containers = max_containers
        self._executor: ProcessPoolExecutor | None = None
        self.offloaded = 0
        """Bodies parsed in the parse process (`/metrics`)."""

    async def parse(self, body: bytes, brackets: int) -> JSON:
        """`body`'s JSON value (`read_json`'s reading); ValueError if it is not JSON,
        `PayloadTooLarge` past the container cap."""
        if brackets <= INLINE_BRACKETS:
            return read_json(body)
        self.offloaded += 1
        if self._executor is None:
            context = multiprocessing.get_context("forkserver")
            self._executor = ProcessPoolExecutor(max_workers=1, mp_context=context)
        loop = asyncio.get_running_loop()
        try:
            return await loop.run_in_executor(
                self._executor, parse_within, body, self.max_containers
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
