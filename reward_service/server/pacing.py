"""Requests that send a body enter the application a few per turn of the event loop.

Each turn of the loop runs every callback that is ready when it starts, and a
probe's request is read and answered only between turns. A burst of requests
arriving at once (2,000 judge answers, each on its own connection) made every
one of them ready in the same turn: the turn that started them ran 2,000 trips
through the middleware, the endpoint, the body's reading and the scorer's
dispatch, and `/livez` waited 1.0-1.7 s behind it. `Pacing` wraps the ASGI
application outside everything else: a request with a body (any method but
GET, HEAD and OPTIONS) enters at most `STARTS_PER_TURN` per turn, the rest wait
in arrival order as one pending future each (a task of uvicorn's and this
frame, nothing of the application yet); GET requests (`/livez`, `/readyz`,
`/metrics`) never wait. The requests of a burst are all still admitted, read and
graded, in order, a few milliseconds of the loop at a time.

Nothing is refused here: admission (`reward_service.server.admission`) counts
and refuses requests once they enter, so a burst past `REWARD_MAX_QUEUE` still
gets its 503s, a turn's worth at a time.
"""

from __future__ import annotations

import asyncio
import collections

from starlette.types import ASGIApp, Receive, Scope, Send

STARTS_PER_TURN = 16
"""Requests with a body that enter the application per turn of the event loop: about
16 x 0.3-0.6 ms of the loop each turn in a burst."""
_NO_BODY = frozenset({"GET", "HEAD", "OPTIONS"})


class Pacing:
    """ASGI middleware: requests with a body enter `app` at most `per_turn` per loop turn."""

    def __init__(self, app: ASGIApp, per_turn: int = STARTS_PER_TURN) -> None:
        self.app = app
        self.per_turn = per_turn
        self._started = 0
        """Requests that entered since the turn began."""
        self._waiting: collections.deque[asyncio.Future[None]] = collections.deque()
        self._turn_ends: asyncio.Handle | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["method"] not in _NO_BODY:
            await self._turn()
        await self.app(scope, receive, send)

    async def _turn(self) -> None:
        """Return once this request may enter: now, if this turn has room and no one waits."""
        if not self._waiting and self._started < self.per_turn:
            self._start_one()
            return
        waiter = asyncio.get_running_loop().create_future()
        self._waiting.append(waiter)
        self._end_turn_later()
        await waiter  # cancelled (the server stopping): `_next_turn` skips it

    def _start_one(self) -> None:
        self._started += 1
        self._end_turn_later()

    def _end_turn_later(self) -> None:
        """The count starts again at the next turn (`call_soon` runs there, not in this one)."""
        if self._turn_ends is None:
            self._turn_ends = asyncio.get_running_loop().call_soon(self._next_turn)

    def _next_turn(self) -> None:
        self._turn_ends = None
        self._started = 0
        while self._waiting and self._started < self.per_turn:
            waiter = self._waiting.popleft()
            if not waiter.done():
                waiter.set_result(None)
                self._start_one()
        if self._waiting:
            self._end_turn_later()
