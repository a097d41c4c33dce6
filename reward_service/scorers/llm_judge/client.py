"""Asking the judge: one `JudgeEndpoint` per endpoint, shared by the scorers that use it.

It holds the `openai` client (`AsyncOpenAI`: keep-alive connections, retries on
408/409/429/5xx and connection errors that honour `Retry-After`, per-call
timeouts, typed errors), the bounds (a cap on calls in flight, per-minute
request and token budgets, a circuit breaker, a deadline per answer covering
every wait and retry) and the verdict cache. The cache keys on a digest of
(template, model, question, reference, the answer as shown), never on the
prompt, whose nonce changes with every call; answers asking what is already
being asked wait for that one call: the eight answers of a GRPO group that share
a final answer cost one call. An answer the scorer does not let be cached (one
that wrote to the grader) is asked on its own, every time. A failure is an `Outcome` with a kind
from `FAILURES`, never an exception; the API key appears in no log, error or
outcome.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import hashlib
import json
import math
import time
from collections import OrderedDict
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from reward_service.scorers.base import JSON
from reward_service.scorers.llm_judge.limits import Circuit, CircuitBreaker, MinuteBudget
from reward_service.scorers.llm_judge.prompt import JudgePrompt, Verdict, read_verdict
from reward_service.scorers.llm_judge.settings import JudgeSettings

if TYPE_CHECKING:  # imported when a client opens: 0.75 s, and memory no grading worker needs
    import openai

FAILURES = frozenset(
    {
        "not_configured",  # no base URL set
        "circuit_open",  # the breaker is open: nothing was sent
        "deadline",  # the answer's deadline passed (waits and retries included)
        "timeout",  # a call timed out (after its retries)
        "connection",  # the endpoint could not be reached, or hung up mid-reply
        "rate_limited",  # 429 after the retries
        "server_error",  # 5xx after the retries
        "refused",  # 401, 403, 404 and other 4xx: the endpoint will not serve us
        "bad_request",  # 400, 413, 422: this one prompt was refused
        "malformed",  # a reply that is not a chat completion (bad JSON, no choices)
        "no_verdict",  # a reply without exactly one verdict carrying the call's nonce
    }
)
OUTAGES = frozenset(
    {"not_configured", "circuit_open", "deadline", "timeout", "connection", "rate_limited"}
    | {"server_error", "refused"}
)
"""Failures of the endpoint rather than of one answer: the breaker counts them, and
`on_outage=retry_later` answers them with 503."""
_CHARS_PER_TOKEN = 4


@dataclass(frozen=True)
class Outcome:
    """What asking the judge about one answer came to."""

    verdict: Verdict | None
    failure: str | None = None
    """A kind from `FAILURES` when there is no verdict."""
    cache: str = "miss"
    """`hit` when the verdict was cached or shared with an identical answer in flight."""
    calls: int = 0
    seconds: float = 0.0
    tokens_in: int = 0
    tokens_out: int = 0
    circuit: Circuit = Circuit.CLOSED
    retry_after_s: int = 1
    """For `on_outage=retry_later`: when the endpoint may answer again."""

    def facts(self) -> dict[str, JSON]:
        """The judge's part of `?detail=1`, which metrics count (fixed keys and kinds only)."""
        facts: dict[str, JSON] = {
            "calls": self.calls,
            "seconds": round(self.seconds, 4),
            "tokens_in": self.tokens_in,
            "tokens_out": self.tokens_out,
            "circuit": self.circuit.value,
        }
        if self.failure is not None:
            facts["failure"] = self.failure
        return facts


class JudgeEndpoint:
    """One judge endpoint: its client, its bounds and its verdict cache."""

    def __init__(self, settings: JudgeSettings) -> None:
        self.settings = settings
        self._client: openai.AsyncOpenAI | None = None
        self._slots = asyncio.Semaphore(settings.concurrency)
        self._requests = MinuteBudget(settings.requests_per_minute)
        self._tokens = MinuteBudget(settings.tokens_per_minute)
        self.breaker = CircuitBreaker(settings.breaker_failures, settings.breaker_open_s)
        self._verdicts: OrderedDict[bytes, Verdict] = OrderedDict()
        self._asking: dict[bytes, asyncio.Task[Outcome]] = {}
        self.in_flight = 0
        """Calls in flight now (at most `settings.concurrency`)."""
        self.most_in_flight = 0

    async def open(self) -> None:
        """The client, when there is an endpoint to call (a base URL and a model)."""
        if self.settings.base_url and self.settings.model:
            import openai

            self._client = openai.AsyncOpenAI(
                base_url=self.settings.base_url,
                api_key=self.settings.key(),
                timeout=self.settings.timeout_s,
                max_retries=self.settings.max_retries,
                http_client=openai.DefaultAioHttpClient(event_hooks={"request": [_count_attempt]}),
            )

    async def close(self) -> None:
        for task in list(self._asking.values()):
            task.cancel()
        client, self._client = self._client, None
        if client is not None:
            await client.close()

    async def judge(
        self, key: tuple[str, ...], prompt: JudgePrompt, model: str, cache: bool = True
    ) -> Outcome:
        """The verdict on `prompt` (cached under `key`), asked of `model` at most once at a time;
        with `cache` False, asked anew and neither shared nor kept."""
        if not cache:
            return await self._ask(prompt, model)
        digest = hashlib.sha256("\0".join(key).encode("utf-8", "surrogatepass")).digest()
        cached = self._verdicts.get(digest)
        if cached is not None:
            self._verdicts.move_to_end(digest)
            return Outcome(cached, cache="hit", circuit=self.breaker.state)
        asking = self._asking.get(digest)
        if asking is not None:
            shared = await asyncio.shield(asking)
            return replace(shared, cache="hit", calls=0, seconds=0.0, tokens_in=0, tokens_out=0)
        task = asyncio.ensure_future(self._ask(prompt, model))
        self._asking[digest] = task
        task.add_done_callback(lambda done: self._settle(digest, done))
        return await asyncio.shield(task)

    def _settle(self, digest: bytes, done: asyncio.Task[Outcome]) -> None:
        self._asking.pop(digest, None)
        if done.cancelled() or done.exception() is not None or self.settings.cache_size == 0:
            return
        verdict = done.result().verdict
        if verdict is not None:
            self._verdicts[digest] = verdict
            if len(self._verdicts) > self.settings.cache_size:
                self._verdicts.popitem(last=False)

    async def _ask(self, prompt: JudgePrompt, model: str) -> Outcome:
        """One answer's call under its deadline: every wait and retry counts."""
        started = time.monotonic()
        attempts = [0]
        _attempts.set(attempts)  # this task's own context: the call's attempts count here
        try:
            outcome = await asyncio.wait_for(self._call(prompt, model), self.settings.deadline_s)
        except TimeoutError:
            self.breaker.failed()
            outcome = self._failed("deadline", attempts[0])
        return replace(outcome, seconds=time.monotonic() - started, circuit=self.breaker.state)

    async def _call(self, prompt: JudgePrompt, model: str) -> Outcome:
        if self._client is None:
            return self._failed("not_configured")
        if not self.breaker.allow():
            return self._failed("circuit_open")
        estimate = len(prompt.text) // _CHARS_PER_TOKEN + self.settings.max_tokens
        try:
            await self._requests.take(1)
            await self._tokens.take(estimate)
            async with self._slots:
                self.in_flight += 1
                self.most_in_flight = max(self.most_in_flight, self.in_flight)
                try:
                    outcome = await self._request(self._client, prompt, model)
                finally:
                    self.in_flight -= 1
        except asyncio.CancelledError:
            self.breaker.released()
            raise
        self._tokens.refund(estimate - outcome.tokens_in - outcome.tokens_out)
        if outcome.failure in OUTAGES:
            self.breaker.failed()
            wait = max(outcome.retry_after_s, math.ceil(self.breaker.retry_after_s()))
            return replace(outcome, retry_after_s=wait)
        self.breaker.succeeded()
        return outcome

    async def _request(
        self, client: openai.AsyncOpenAI, prompt: JudgePrompt, model: str
    ) -> Outcome:
        """One chat completion, posted with the client's own `post` (the typed `create` costs
        ~1 ms of the loop per call transforming its arguments) and read by hand, strictly."""
        import openai

        attempts = _attempts.get()
        body = {
            "model": model,
            "messages": [{"role": "user", "content": prompt.text}],
            "temperature": self.settings.temperature,
            "max_tokens": self.settings.max_tokens,
        }
        try:
            raw = await client.post("/chat/completions", body=body, cast_to=bytes)
        except openai.APITimeoutError:
            return self._failed("timeout", attempts[0])
        except openai.APIConnectionError:
            return self._failed("connection", attempts[0])
        except openai.RateLimitError as exc:
            return self._failed("rate_limited", attempts[0], exc.response)
        except openai.APIStatusError as exc:
            code = exc.status_code
            kind = "server_error" if code >= 500 else "refused"
            kind = "bad_request" if code in (400, 413, 422) else kind
            return self._failed(kind, attempts[0], exc.response)
        try:
            completion = json.loads(raw)
            content = completion["choices"][0]["message"]["content"]
            usage = completion.get("usage") or {}
            tokens_in, tokens_out = (
                int(usage.get("prompt_tokens", 0)),
                int(usage.get("completion_tokens", 0)),
            )
        except (ValueError, LookupError, TypeError, AttributeError):  # not a chat completion
            return self._failed("malformed", attempts[0])
        verdict = read_verdict(content, prompt.nonce) if isinstance(content, str) else None
        return Outcome(
            verdict,
            None if verdict is not None else "no_verdict",
            calls=attempts[0],
            tokens_in=tokens_in,
            tokens_out=tokens_out,
        )

    def _failed(self, kind: str, calls: int = 0, response: object = None) -> Outcome:
        wait = self.breaker.retry_after_s()
        headers = getattr(response, "headers", None)
        if headers is not None:
            with contextlib.suppress(ValueError):
                wait = max(wait, float(headers.get("retry-after", 0)))
        return Outcome(
            None,
            kind,
            calls=calls,
            circuit=self.breaker.state,
            retry_after_s=max(1, math.ceil(wait)),
        )


_attempts: contextvars.ContextVar[list[int]] = contextvars.ContextVar("judge_attempts")
"""The HTTP attempts of the call in progress in this task (retries included)."""


async def _count_attempt(request: object) -> None:
    """The HTTP client's request hook: one more attempt for the call that sent it."""
    attempts = _attempts.get(None)
    if attempts is not None:
        attempts[0] += 1


_shared: dict[str, tuple[JudgeEndpoint, int]] = {}
"""Open endpoints and their users, by `_identity` of their settings."""


def _identity(settings: JudgeSettings) -> str:
    """Equal for equal settings, the key included (kept in memory only, never shown)."""
    fields = {**settings.model_dump(mode="json"), "models": sorted(settings.models)}
    return json.dumps([fields, settings.key()], sort_keys=True)


async def acquire(settings: JudgeSettings) -> JudgeEndpoint:
    """The endpoint these settings describe, opened by its first user."""
    identity = _identity(settings)
    endpoint, users = _shared.get(identity, (None, 0))
    if endpoint is None:
        endpoint = JudgeEndpoint(settings)
        await endpoint.open()
    _shared[identity] = (endpoint, users + 1)
    return endpoint


async def release(settings: JudgeSettings) -> None:
    """One user less; the last one closes the endpoint."""
    identity = _identity(settings)
    endpoint, users = _shared.pop(identity, (None, 0))
    if endpoint is None:
        return
    if users > 1:
        _shared[identity] = (endpoint, users - 1)
    else:
        await endpoint.close()
