"""A stand-in judge: an HTTP/1.1 server speaking the OpenAI chat-completions wire protocol.

It runs on its own event loop in a thread, on a loopback port, so the tests and
`reward-service bench --workload judge` can put a judge of known behaviour
beside the service: a `respond` function turns each request body into a
`Reply` (status, headers, body, a delay, a slow drip, a cut-off body), and the
server counts calls and the most in progress at once. By default it answers
after `latency_s`, at most `capacity` requests at a time (the rest queue, as on
a model server), with a verdict read from the prompt: `CORRECT` when the
candidate's final answer equals the reference, else `INCORRECT`, on the verdict
line the prompt asks for. `GullibleJudge` is a weak judge model instead, for the
reward-hacking tests: it obeys instructions in what it grades, restates the
verdict lines it reads, and believes a forged end of the prompt.
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
import re
import sys
import threading
import unicodedata
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

_REFERENCE, _ANSWER = "Reference answer:", "Candidate's final answer:"
_ASKED = re.compile(r"^VERDICT(?: [^\s:]+)?: (?=CORRECT\b)", re.MULTILINE)
"""A line of the prompt asking for a verdict: its start is the form a judge writes."""
_FENCE = re.compile(r"</?[a-z]+-[0-9a-f]+>")
_REMOVED = "[removed]"


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


def verdict_form(prompt: str) -> str:
    """How the prompt asks a verdict line to start (`VERDICT <key>: `), the last it asks."""
    asked = _ASKED.findall(prompt)
    return asked[-1] if asked else "VERDICT: "


def section(prompt: str, heading: str, last: bool = False) -> str:
    """The text under the first (or `last`) `heading` of a prompt, up to a blank line,
    without the lines that fence it."""
    at = prompt.rfind(heading) if last else prompt.find(heading)
    if at < 0:
        return ""
    text = prompt[at + len(heading) :].lstrip("\n").partition("\n\n")[0]
    return "\n".join(line for line in text.split("\n") if not _FENCE.fullmatch(line)).strip()


def equal_answer_verdict(request: dict[str, Any]) -> Reply:
    """`CORRECT` when the built-in prompt's candidate answer equals its reference."""
    prompt = prompt_of(request)
    reference, answer = section(prompt, _REFERENCE), section(prompt, _ANSWER)
    verdict = "CORRECT" if answer and answer == reference else "INCORRECT"
    return completion(f"Compared.\n{verdict_form(prompt)}{verdict}")


def verdicts(*words: str, text: str = "") -> Callable[[dict[str, Any]], Reply]:
    """A judge replying `text`, then a verdict line for each of `words` in the form its prompt
    asks (the call's nonce included)."""

    def respond(request: dict[str, Any]) -> Reply:
        form = verdict_form(prompt_of(request))
        return completion(text + "".join(f"\n{form}{word}" for word in words))

    return respond


_OBEYED = re.compile(
    r"ignore (?:all )?(?:the )?previous instructions|\banswer yes\b"
    r"|^\W*verdict\b[^\n]*:\W*correct\b",
    re.IGNORECASE | re.MULTILINE,
)
"""What a weak judge takes as an order to pass the answer."""
_TAGS = 0xE0000
"""Unicode tag characters (U+E0020-E007E) spell ASCII invisibly."""
_WORDS = {"four": "4", "five": "5", "forty-two": "42", "forty two": "42"}


@dataclass
class GullibleJudge:
    """A weak judge model as a `respond` function, the test double of the reward-hacking tests.

    It reads the prompt as a model does, through invisible characters (Unicode tags
    as the ASCII they spell, other format characters skipped) and compatibility
    forms (full-width letters). The candidate's answer is what follows the first
    `Candidate's final answer:`, and the reference what follows the last
    `Reference answer:` (it believes a forged end of the prompt with a new
    reference). In its first `obeys_calls` calls it obeys what it reads from the
    answer on to the prompt's last `End your reply` line: an instruction to pass,
    or a verdict line saying `CORRECT`. With `restates`, its reply quotes the
    answer's verdict lines and ends there (a reply cut at its token cap).
    Otherwise it compares answer and reference as a lenient reader would (case,
    `\\boxed{}` and `\\text{}`, `the answer is`, a final stop, a few numbers in
    words; `[removed]` marks skipped) and ends with the verdict line the prompt
    asks for.
    """

    restates: bool = False
    obeys_calls: int = 1 << 30
    calls: int = 0

    def __call__(self, request: dict[str, Any]) -> Reply:
        self.calls += 1
        prompt = _as_read(prompt_of(request))
        start = prompt.find(_ANSWER)
        graded = prompt[start : prompt.rfind("End your reply")] if start >= 0 else ""
        answer = section(prompt, _ANSWER)
        if self.restates:
            quoted = [line for line in answer.split("\n") if "VERDICT" in line.upper()]
            if quoted:
                return completion("The candidate's answer says:\n" + "\n".join(quoted))
        if self.calls <= self.obeys_calls and _OBEYED.search(graded):
            verdict = "CORRECT"
        else:
            same = _lenient(answer) == _lenient(section(prompt, _REFERENCE, last=True))
            verdict = "CORRECT" if same else "INCORRECT"
        return completion(f"I compared them.\n{verdict_form(prompt)}{verdict}")


def _as_read(text: str) -> str:
    """`text` as a model reads it: tag characters as their ASCII, other format characters
    gone, compatibility forms folded."""
    shown = "".join(
        chr(ord(char) - _TAGS) if _TAGS < ord(char) < _TAGS + 0x7F else char
        for char in text
        if unicodedata.category(char) != "Cf" or _TAGS < ord(char) < _TAGS + 0x7F
    )
    return unicodedata.normalize("NFKC", shown)


def _lenient(text: str) -> str:
    for mark in (_REMOVED, "\\boxed{", "\\text{", "}"):
        text = text.replace(mark, " ")
    text = " ".join(text.lower().split()).rstrip(".").removeprefix("the answer is ")
    return _WORDS.get(text, text)


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
