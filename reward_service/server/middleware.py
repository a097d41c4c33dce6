"""The outermost HTTP layer, as one pure ASGI middleware.

Per request: a request id (from `X-Request-ID` or new, echoed back), the
path form of the API token (`/t/<token>/score` becomes `/score`, the token
kept for the auth check and never logged), request metrics, sampled access
logs, and connection recycling: after `connection_max_requests` requests or
`connection_max_age_s` seconds, a completed response carries
`Connection: close`, so keep-alive clients reconnect and spread over
replicas the autoscaler added.
"""

from __future__ import annotations

import collections
import itertools
import logging
import os
import re
import time
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from reward_service.logs import request_id
from reward_service.server.metrics import ServiceMetrics
from reward_service.settings import Settings

log = logging.getLogger("reward_service.access")

_TOKEN_PATH = re.compile(r"^/t/([^/]+)(/.*)$")
_SAFE_ID = re.compile(r"^[A-Za-z0-9._:-]{1,128}$")
_MAX_TRACKED_CONNECTIONS = 65_536


class _Connection:
    __slots__ = ("opened", "requests")

    def __init__(self) -> None:
        self.opened = time.monotonic()
        self.requests = 0


class ServiceMiddleware:
    """Request ids, token paths, metrics, access logs and connection recycling."""

    def __init__(self, app: ASGIApp, settings: Settings, metrics: ServiceMetrics) -> None:
        self.app = app
        self.settings = settings
        self.metrics = metrics
        self._counter = itertools.count()
        self._connections: collections.OrderedDict[Any, _Connection] = collections.OrderedDict()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        rid = _request_id(scope)
        token_reset = request_id.set(rid)
        match = _TOKEN_PATH.match(scope["path"])
        if match:
            scope["state"] = {**scope.get("state", {}), "path_token": match.group(1)}
            scope["path"] = match.group(2)
            scope["raw_path"] = match.group(2).encode()
        close = self._should_close(scope.get("client"))
        code = 500

        async def send_wrapper(message: Message) -> None:
            nonlocal code
            if message["type"] == "http.response.start":
                code = message["status"]
                headers = list(message.get("headers", []))
                headers.append((b"x-request-id", rid.encode()))
                if close and not any(name.lower() == b"connection" for name, _ in headers):
                    headers.append((b"connection", b"close"))
                message = {**message, "headers": headers}
            await send(message)

        try:
            await self.app(scope, receive, send_wrapper)
        finally:
            self._observe(scope, code, time.perf_counter() - started)
            request_id.reset(token_reset)

    def _should_close(self, client: Any) -> bool:
        max_requests = self.settings.connection_max_requests
        max_age = self.settings.connection_max_age_s
        if client is None or not (max_requests or max_age):
            return False
        key = tuple(client)
        conn = self._connections.get(key)
        if conn is None:
            conn = self._connections[key] = _Connection()
            if len(self._connections) > _MAX_TRACKED_CONNECTIONS:
                self._connections.popitem(last=False)
        conn.requests += 1
        expired = (max_requests and conn.requests >= max_requests) or (
            max_age and time.monotonic() - conn.opened >= max_age
        )
        if expired:
            del self._connections[key]
        return bool(expired)

    def _observe(self, scope: Scope, code: int, seconds: float) -> None:
        route = getattr(scope.get("route"), "path", "unmatched")
        self.metrics.count_request(route, code, _content_length(scope))
        mode = self.settings.access_log
        sampled = mode == "sampled" and next(self._counter) % self.settings.access_log_sample == 0
        if mode == "all" or sampled or code >= 500:
            log.info(
                "request",
                extra={
                    "method": scope["method"],
                    "route": route,
                    "code": code,
                    "ms": round(seconds * 1000, 2),
                },
            )


def _request_id(scope: Scope) -> str:
    for name, value in scope.get("headers", []):
        if name == b"x-request-id":
            text: str = value.decode("latin-1")
            if _SAFE_ID.match(text):
                return text
            break
    return os.urandom(16).hex()


def _content_length(scope: Scope) -> int | None:
    for name, value in scope.get("headers", []):
        if name == b"content-length" and value.isdigit():
            return int(value)
    return None
