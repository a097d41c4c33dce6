"""Python clients for reward-service: `RewardClient` (sync) and `AsyncRewardClient`.

    with RewardClient("http://reward:8000") as client:
        client.score("... so \\boxed{2}", "2")                      # 1.0
        client.score_batch([{"response": "B", "label": "B"}], scorer="exact")

Each client holds one pooled, keep-alive HTTP connection pool. Dropped
connections, timeouts and the statuses in `RETRIED_STATUSES` are retried
with exponential backoff and jitter, waiting at least the `Retry-After` the
service sends (capped at `max_wait_s`). Errors, all from
`reward_service.errors.RewardServiceError`:

    RewardServiceError
     ├── RewardServiceUnavailable   no usable answer after the last attempt
     ├── RequestRejected            the service refused the request (4xx, 500)
     └── UnexpectedAnswer           a 200 whose body is not what was asked for

The retry policy lives in `RetryPolicy`, free of I/O, so both clients (and
any adapter posting to other URLs through `post`) share one implementation.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Generic, Literal, TypeVar, overload
from urllib.parse import quote

import httpx

from reward_service import __version__
from reward_service.errors import RewardServiceError
from reward_service.redaction import redact
from reward_service.scorers.base import Status

JSON = Any
Item = Mapping[str, JSON]
"""One sample to grade: `{"response": ..., "label": ..., "prompt": ...}`."""

RETRIED_STATUSES = frozenset({429, 502, 503, 504})
"""Statuses that mean "not now": overloaded, draining, or a gateway in between."""
BATCH_SIZE = 256
"""Items per batch request; the service refuses more than 1024 by default."""
MAX_CONNECTIONS = 64

_HTTP = TypeVar("_HTTP", httpx.Client, httpx.AsyncClient)


class RewardServiceUnavailable(RewardServiceError):
    """The service gave no usable answer within the allowed attempts."""

    def __init__(self, url: str, attempts: int, status: int | None, reason: str) -> None:
        last = f"HTTP {status}" if status is not None else reason
        super().__init__(f"reward service at {url} unavailable after {attempts} attempts: {last}")
        self.url = url
        self.attempts = attempts
        self.status = status


class RequestRejected(RewardServiceError):
    """The service answered with an error that retrying will not fix."""

    def __init__(self, url: str, status: int, message: str) -> None:
        super().__init__(f"reward service at {url} answered HTTP {status}: {message}")
        self.url = url
        self.status_code = status
        self.message = message


class UnexpectedAnswer(RewardServiceError):
    """The service answered 200 with a body that is not the reward asked for."""


@dataclass(frozen=True)
class RetryPolicy:
    """How many attempts, and how long to wait between them."""

    attempts: int = 5
    backoff_s: float = 0.5
    """Wait before the first retry; doubled for each later one."""
    max_wait_s: float = 30.0
    """Cap on any single wait, `Retry-After` included."""
    retry_statuses: frozenset[int] = RETRIED_STATUSES

    def __post_init__(self) -> None:
        if self.attempts < 1:
            raise ValueError(f"attempts must be at least 1, not {self.attempts}")

    def wait_s(self, retry: int, retry_after: str | None) -> float:
        """Seconds to wait before retry number `retry` (0-based)."""
        wait = min(self.backoff_s * 2.0**retry, self.max_wait_s)
        if retry_after is not None:
            with contextlib.suppress(ValueError):
                wait = max(wait, float(retry_after))
        return min(wait * random.uniform(1.0, 1.25), self.max_wait_s)

    def track(self, url: str) -> _Attempts:
        return _Attempts(self, redact(url))


class _Attempts:
    """The retry state of one request: the I/O loop reports outcomes, this decides."""

    def __init__(self, policy: RetryPolicy, url: str) -> None:
        self._policy = policy
        self._url = url
        self._done = 0

    def failed(self, exc: httpx.TransportError) -> float:
        """The wait before retrying after `exc`; raises once attempts are spent."""
        return self._next(None, f"{type(exc).__name__}: {exc}", None)

    def answered(self, response: httpx.Response) -> float | None:
        """None when `response` is final, else the wait before retrying."""
        if response.status_code not in self._policy.retry_statuses:
            return None
        return self._next(response.status_code, "", response.headers.get("retry-after"))

    def _next(self, status: int | None, reason: str, retry_after: str | None) -> float:
        self._done += 1
        if self._done >= self._policy.attempts:
            raise RewardServiceUnavailable(self._url, self._done, status, reason)
        return self._policy.wait_s(self._done - 1, retry_after)


def _decoded(url: str, response: httpx.Response) -> JSON:
    """The JSON body of a final answer; `RequestRejected` for an error status."""
    try:
        body = response.json()
    except ValueError:
        body = None
    if response.status_code >= 400:
        message = body.get("error") if isinstance(body, dict) else None
        raise RequestRejected(redact(url), response.status_code, message or response.text[:500])
    if body is None:
        raise UnexpectedAnswer(f"{redact(url)} answered a body that is not JSON")
    return body


def _score_path(scorer: str | None, batch: bool = False) -> str:
    path = "/score" if scorer is None else f"/score/{quote(scorer, safe='')}"
    return f"{path}/batch" if batch else path


def _detail_params(detail: bool) -> dict[str, str]:
    return {"detail": "1"} if detail else {}


def _score_request(
    response: str, label: JSON, prompt: JSON, scorer: str | None, detail: bool
) -> tuple[str, dict[str, JSON], dict[str, str]]:
    """Path, body and query of a one-answer request."""
    body = {"prompt": prompt, "response": response, "label": label}
    return _score_path(scorer), body, _detail_params(detail)


def as_reward(value: JSON) -> float:
    """`value` as a reward; `UnexpectedAnswer` unless it is a number (a bool is not)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise UnexpectedAnswer(f"expected a number as reward, got {value!r:.200}")
    return float(value)


def loss_multiplier(detail: Mapping[str, JSON]) -> float:
    """A detail object's `loss_multiplier` (0.0: its reward is a fallback to mask), read from
    its status where the service sends none (an older one); 1.0 for a status it cannot read."""
    given = detail.get("loss_multiplier")
    if isinstance(given, int | float) and not isinstance(given, bool):
        return float(given)
    try:
        return Status(detail.get("status")).loss_multiplier
    except ValueError:
        return 1.0


def batch_values(answer: JSON, count: int, key: str = "rewards") -> list[JSON]:
    """The `count` values under `key` of a batch answer, unchecked; `UnexpectedAnswer` if not."""
    values = answer.get(key) if isinstance(answer, dict) else None
    if not isinstance(values, list) or len(values) != count:
        raise UnexpectedAnswer(f"expected {count} {key} in the batch answer, got {answer!r:.200}")
    return values


def _detail(value: JSON) -> dict[str, JSON]:
    if not isinstance(value, dict) or "reward" not in value:
        raise UnexpectedAnswer(f"expected a detail object, got {value!r:.200}")
    as_reward(value["reward"])
    return value


def _one(answer: JSON, detail: bool) -> float | dict[str, JSON]:
    return _detail(answer) if detail else as_reward(answer)


def _many(answer: JSON, count: int, detail: bool) -> list[Any]:
    values = batch_values(answer, count, "details" if detail else "rewards")
    return [_detail(value) if detail else as_reward(value) for value in values]


def _chunks(items: Sequence[Item], size: int) -> list[list[dict[str, JSON]]]:
    return [[dict(item) for item in items[i : i + size]] for i in range(0, len(items), size)]


def _http_options(
    base_url: str, timeout_s: float, api_token: str | None, max_connections: int
) -> dict[str, Any]:
    headers = {"User-Agent": f"reward-service-client/{__version__}"}
    if api_token:
        headers["Authorization"] = f"Bearer {api_token}"
    return {
        "base_url": base_url,
        "timeout": timeout_s,
        "headers": headers,
        "limits": httpx.Limits(
            max_connections=max_connections, max_keepalive_connections=max_connections
        ),
    }


class _Client(Generic[_HTTP]):
    """What both clients hold: a retry policy, a batch size and one pooled HTTP client.

    `base_url` is the service root (`http://host:8000`), not a `/score` URL.
    """

    def __init__(
        self,
        base_url: str = "http://127.0.0.1:8000",
        *,
        timeout_s: float = 120.0,
        retry: RetryPolicy | None = None,
        api_token: str | None = None,
        batch_size: int = BATCH_SIZE,
        max_connections: int = MAX_CONNECTIONS,
    ) -> None:
        self.retry = retry or RetryPolicy()
        self.batch_size = batch_size
        options = _http_options(base_url, timeout_s, api_token, max_connections)
        self._http: _HTTP = self._open(options)

    def _open(self, options: dict[str, Any]) -> _HTTP:
        raise NotImplementedError


class RewardClient(_Client[httpx.Client]):
    """A blocking client; safe to share between threads (not across `fork`)."""

    def _open(self, options: dict[str, Any]) -> httpx.Client:
        return httpx.Client(**options)

    def __enter__(self) -> RewardClient:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        self._http.close()

    def post(self, url: str, body: JSON, params: Mapping[str, str] | None = None) -> JSON:
        """POST `body` to `url` (a path, or an absolute URL) with retries; the JSON answer."""
        return self._send(self._http.build_request("POST", url, json=body, params=params))

    def get(self, url: str) -> JSON:
        """GET `url` (a path, or an absolute URL) with retries; the JSON answer."""
        return self._send(self._http.build_request("GET", url))

    def _send(self, request: httpx.Request) -> JSON:
        attempts = self.retry.track(str(request.url))
        while True:
            wait: float | None
            try:
                response = self._http.send(request)
            except httpx.TransportError as exc:
                wait = attempts.failed(exc)
            else:
                wait = attempts.answered(response)
                if wait is None:
                    return _decoded(str(request.url), response)
            time.sleep(wait)

    @overload
    def score(
        self,
        response: str,
        label: JSON,
        prompt: JSON = ...,
        scorer: str | None = ...,
        detail: Literal[False] = ...,
    ) -> float: ...

    @overload
    def score(
        self,
        response: str,
        label: JSON,
        prompt: JSON = ...,
        scorer: str | None = ...,
        *,
        detail: Literal[True],
    ) -> dict[str, JSON]: ...

    def score(
        self,
        response: str,
        label: JSON,
        prompt: JSON = None,
        scorer: str | None = None,
        detail: bool = False,
    ) -> float | dict[str, JSON]:
        """The reward for one answer, or the service's detail object with `detail=True`."""
        answer = self.post(*_score_request(response, label, prompt, scorer, detail))
        return _one(answer, detail)

    @overload
    def score_batch(
        self, items: Sequence[Item], scorer: str | None = ..., detail: Literal[False] = ...
    ) -> list[float]: ...

    @overload
    def score_batch(
        self, items: Sequence[Item], scorer: str | None = ..., *, detail: Literal[True]
    ) -> list[dict[str, JSON]]: ...

    def score_batch(
        self, items: Sequence[Item], scorer: str | None = None, detail: bool = False
    ) -> list[float] | list[dict[str, JSON]]:
        """Rewards (or detail objects) in input order, sent `batch_size` items per request."""
        results: list[Any] = []
        for chunk in _chunks(items, self.batch_size):
            answer = self.post(
                _score_path(scorer, batch=True), {"items": chunk}, _detail_params(detail)
            )
            results.extend(_many(answer, len(chunk), detail))
        return results

    def ready(self) -> bool:
        """True when `/readyz` answers 200 now; never retried."""
        try:
            return self._http.get("/readyz").status_code == 200
        except httpx.HTTPError:
            return False


class AsyncRewardClient(_Client[httpx.AsyncClient]):
    """The asyncio client; use one per event loop."""

    def _open(self, options: dict[str, Any]) -> httpx.AsyncClient:
        return httpx.AsyncClient(**options)

    async def __aenter__(self) -> AsyncRewardClient:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self._http.aclose()

    async def post(self, url: str, body: JSON, params: Mapping[str, str] | None = None) -> JSON:
        """POST `body` to `url` (a path, or an absolute URL) with retries; the JSON answer."""
        request = self._http.build_request("POST", url, json=body, params=params)
        attempts = self.retry.track(str(request.url))
        while True:
            wait: float | None
            try:
                response = await self._http.send(request)
            except httpx.TransportError as exc:
                wait = attempts.failed(exc)
            else:
                wait = attempts.answered(response)
                if wait is None:
                    return _decoded(str(request.url), response)
            await asyncio.sleep(wait)

    @overload
    async def score(
        self,
        response: str,
        label: JSON,
        prompt: JSON = ...,
        scorer: str | None = ...,
        detail: Literal[False] = ...,
    ) -> float: ...

    @overload
    async def score(
        self,
        response: str,
        label: JSON,
        prompt: JSON = ...,
        scorer: str | None = ...,
        *,
        detail: Literal[True],
    ) -> dict[str, JSON]: ...

    async def score(
        self,
        response: str,
        label: JSON,
        prompt: JSON = None,
        scorer: str | None = None,
        detail: bool = False,
    ) -> float | dict[str, JSON]:
        """The reward for one answer, or the service's detail object with `detail=True`."""
        answer = await self.post(*_score_request(response, label, prompt, scorer, detail))
        return _one(answer, detail)

    @overload
    async def score_batch(
        self, items: Sequence[Item], scorer: str | None = ..., detail: Literal[False] = ...
    ) -> list[float]: ...

    @overload
    async def score_batch(
        self, items: Sequence[Item], scorer: str | None = ..., *, detail: Literal[True]
    ) -> list[dict[str, JSON]]: ...

    async def score_batch(
        self, items: Sequence[Item], scorer: str | None = None, detail: bool = False
    ) -> list[float] | list[dict[str, JSON]]:
        """Rewards (or detail objects) in input order; chunks of `batch_size` go concurrently."""
        path, params = _score_path(scorer, batch=True), _detail_params(detail)
        chunks = _chunks(items, self.batch_size)
        answers = await asyncio.gather(*(self.post(path, {"items": c}, params) for c in chunks))
        results: list[Any] = []
        for chunk, answer in zip(chunks, answers, strict=True):
            results.extend(_many(answer, len(chunk), detail))
        return results

    async def ready(self) -> bool:
        """True when `/readyz` answers 200 now; never retried."""
        try:
            return (await self._http.get("/readyz")).status_code == 200
        except httpx.HTTPError:
            return False
