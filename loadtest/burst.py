"""An arrival burst: many requests posted at once, each on a connection of its own.

This is what an evaluation pass or a rollout step's end looks like from the
service's side when every answer is its own HTTP/1.1 connection (a client
without keep-alive, or thousands of rollout workers): the connections all
arrive within milliseconds, each with its whole request. `post_at_once`
opens every connection first, then writes every request, then reads every
answer; `burst_in_a_process` runs it in a fresh interpreter, so the client's
own work shares no interpreter (and no GIL) with a probe timing the service.
Loopback only: the requests carry `Connection: close` and every socket is
closed when its answer is read or `timeout_s` runs out.
"""

from __future__ import annotations

import asyncio
import multiprocessing
from concurrent.futures import ProcessPoolExecutor
from typing import NamedTuple
from urllib.parse import urlsplit


class Answer(NamedTuple):
    """One request's status (0: no answer within the time) and body."""

    status: int
    body: bytes


def request_bytes(host: str, path: str, body: bytes) -> bytes:
    """An HTTP/1.1 POST of a JSON body that asks the server to close after answering."""
    head = (
        f"POST {path} HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    )
    return head.encode() + body


def read_answer(raw: bytes) -> Answer:
    """The status and body of a whole HTTP/1.1 answer (Content-Length framed, as uvicorn's)."""
    head, _, body = raw.partition(b"\r\n\r\n")
    status_line = head.split(b"\r\n", 1)[0].split()
    return Answer(int(status_line[1]) if len(status_line) > 1 else 0, body)


async def post_at_once(
    url: str, path: str, bodies: list[bytes], timeout_s: float = 60.0
) -> list[Answer]:
    """Every body of `bodies` posted to `path`, each on its own connection, all at once."""
    parts = urlsplit(url)
    host, port = parts.hostname or "127.0.0.1", parts.port or 80
    opened = await asyncio.gather(*(asyncio.open_connection(host, port) for _ in bodies))
    for (_, writer), body in zip(opened, bodies, strict=True):
        writer.write(request_bytes(f"{host}:{port}", path, body))

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> Answer:
        try:
            return read_answer(await asyncio.wait_for(reader.read(), timeout_s))
        except (asyncio.TimeoutError, ConnectionError):
            return Answer(0, b"")
        finally:
            writer.close()

    return list(await asyncio.gather(*(answer(reader, writer) for reader, writer in opened)))


def _post_at_once(url: str, path: str, bodies: list[bytes], timeout_s: float) -> list[Answer]:
    return asyncio.run(post_at_once(url, path, bodies, timeout_s))


def burst_in_a_process(
    url: str, path: str, bodies: list[bytes], timeout_s: float = 60.0
) -> list[Answer]:
    """`post_at_once`, run in a fresh interpreter; its answers."""
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=1, mp_context=context) as executor:
        return executor.submit(_post_at_once, url, path, bodies, timeout_s).result()
