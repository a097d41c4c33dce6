"""A stand-in judge: an HTTP/1.1 server speaking the OpenAI chat-completions wire protocol.

It runs on its own event loop in a thread, on a loopback port, so the tests and
`reward-service bench --workload judge` can put a judge of known behaviour
beside the service: a `respond` function turns each request body into a
`Reply` (status, headers, body, a delay, a slow drip, a cut-off body), and the
server counts calls and the most in progress at once. By default it answers
after `latency_s`, at most `capacity` requests at a time (the rest queue, as on
a model server), with a verdict read from the prompt: `VERDICT: CORRECT` when
the candidate's final answer equals the reference, else `VERDICT: INCORRECT`.
`GET <base URL>/stats` answers its counts, for a stand-in run as a process of its own
(`python -m reward_service.bench.chat_stand_in LATENCY_S [JITTER]` prints its
base URL, then serves until killed), where a load test must not share the
interpreter of what it measures.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import random
import sys
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

_REFERENCE, _ANSWER = "Reference answer:\n", "Candidate's final answer:\n"


@dataclass(frozen=True)
class Reply:
    """One scripted HTTP reply."""

    status: int = 200
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0
    """Wait before the status line."""
    drip_s: float = 0.0
    """Wait between the body's bytes (a slow drip)."""
    cut: bool = False
    """Send half the body, then close (Content-Length promises all of it)."""


def completion(content: str, prompt_tokens: int = 100, completion_tokens: int = 5) -> Reply:
    """A well-formed chat completion whose one choice says `content`."""
    body = {
        "id": "chatcmpl-stand-in",
        "object": "chat.completion",
        "created": 0,
        "model": "stand-in",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": content},
                "finish_reason": "stop",
            }
        ],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        },
    }
    return Reply(body=json.dumps(body).encode())


def prompt_of(request: dict[str, Any]) -> str:
    """The text of a request's last message."""
    messages = request.get("messages") or [{}]
    content = messages[-1].get("content", "")
    return content if isinstance(content, str) else ""


def equal_answer_verdict(request: dict[str, Any]) -> Reply:
    """`CORRECT` when the built-in prompt's candidate answer equals its reference."""
    prompt = prompt_of(request)
    reference = prompt.partition(_REFERENCE)[2].partition("\n\n")[0].strip()
    answer = prompt.partition(_ANSWER)[2].partition("\n\n")[0].strip()
    verdict = "CORRECT" if answer and answer == reference else "INCORRECT"
    return completion(f"Compared.\nVERDICT: {verdict}")


class ChatStandIn:
    """The server; `respond` may be replaced at any time (tests script it per case)."""

    def __init__(
        self, latency_s: float = 0.0, capacity: int = 1 << 20, jitter: float = 0.0
    ) -> None:
        self.latency_s = latency_s
        self.jitter = jitter
        """Each reply's latency is `latency_s` times a factor drawn from 1 +- `jitter`, so the
        replies of a burst do not all arrive in one instant."""
        self._random = random.Random(0)
        self.respond: Callable[[dict[str, Any]], Reply] = equal_answer_verdict
        self.calls = self.current = self.most = 0
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self._capacity = capacity
        self._loop = asyncio.new_event_loop()
        self._started = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._server: asyncio.AbstractServer | None = None
        self.port = 0

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> ChatStandIn:
        self._thread.start()
        self._started.wait(10)
        return self

    def stop(self) -> None:
        """Close the port and every connection, then end the thread."""
        asyncio.run_coroutine_threadsafe(self._shutdown(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)

    async def _shutdown(self) -> None:
        if self._server is not None:
            self._server.close()
        current = asyncio.current_task()
        tasks = [task for task in asyncio.all_tasks() if task is not current]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    def reset(self, respond: Callable[[dict[str, Any]], Reply] = equal_answer_verdict) -> None:
        """Forget the counts and answer with `respond` from now on."""
        self.respond = respond
        self.calls = self.most = 0
        self.requests.clear()
        self.headers.clear()

    def _serve(self) -> None:
        asyncio.set_event_loop(self._loop)
        self._slots = asyncio.Semaphore(self._capacity)
        self._server = self._loop.run_until_complete(
            asyncio.start_server(self._connection, "127.0.0.1", 0, backlog=4096)
        )
        self.port = self._server.sockets[0].getsockname()[1]
        self._started.set()
        try:
            self._loop.run_forever()
        finally:
            self._server.close()
            self._loop.close()

    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            with contextlib.suppress(ConnectionError, asyncio.IncompleteReadError):
                while await self._exchange(reader, writer):
                    pass
        finally:  # cancelled at shutdown too: every connection is closed before the loop
            writer.close()
            with contextlib.suppress(ConnectionError, asyncio.CancelledError):
                await writer.wait_closed()

    async def _exchange(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> bool:
        """One request and its reply; False when the connection is to close."""
        head = await reader.readuntil(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        method, path, _ = (lines[0] + "  ").split(" ", 2)
        if method == "GET" and path.endswith("/stats"):
            stats = {"calls": self.calls, "most": self.most}
            return await self._send(writer, Reply(body=json.dumps(stats).encode()))
        headers = {
            name.strip().lower(): value.strip()
            for name, _, value in (line.partition(":") for line in lines[1:] if line)
        }
        body = await reader.readexactly(int(headers.get("content-length", "0")))
        request = json.loads(body or b"{}")
        self.calls += 1
        self.requests.append(request)
        self.headers.append(headers)
        async with self._slots:
            self.current += 1
            self.most = max(self.most, self.current)
            try:
                reply = self.respond(request)
                spread = 1 + self._random.uniform(-self.jitter, self.jitter)
                await asyncio.sleep(self.latency_s * spread + reply.delay_s)
                return await self._send(writer, reply)
            finally:
                self.current -= 1

    async def _send(self, writer: asyncio.StreamWriter, reply: Reply) -> bool:
        head = [f"HTTP/1.1 {reply.status} Stand-in", f"Content-Length: {len(reply.body)}"]
        head += [f"{name}: {value}" for name, value in reply.headers.items()]
        if "content-type" not in {name.lower() for name in reply.headers}:
            head.append("Content-Type: application/json")
        writer.write(("\r\n".join(head) + "\r\n\r\n").encode())
        if reply.cut:
            writer.write(reply.body[: len(reply.body) // 2])
            await writer.drain()
            return False
        if reply.drip_s:
            for byte in reply.body:
                writer.write(bytes([byte]))
                await writer.drain()
                await asyncio.sleep(reply.drip_s)
        else:
            writer.write(reply.body)
        await writer.drain()
        return True


@contextlib.contextmanager
def chat_stand_in(
    latency_s: float = 0.0, capacity: int = 1 << 20, jitter: float = 0.0
) -> Iterator[ChatStandIn]:
    """A running `ChatStandIn`, stopped on exit."""
    server = ChatStandIn(latency_s, capacity, jitter).start()
    try:
        yield server
    finally:
        server.stop()


def main(argv: list[str]) -> None:
    """Serve a stand-in of latency `argv[0]` and jitter `argv[1]` until killed."""
    server = ChatStandIn(float(argv[0]), jitter=float(argv[1]) if len(argv) > 1 else 0.0).start()
    print(server.base_url, flush=True)
    threading.Event().wait()


if __name__ == "__main__":
    main(sys.argv[1:])
