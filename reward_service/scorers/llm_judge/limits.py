"""The bounds on calling a judge: per-minute budgets and a circuit breaker (event loop only).

Both use the loop's monotonic clock and hold no lock: every caller runs on the
one event loop, so there is no interleaving between an `await` and the next.
"""

from __future__ import annotations

import asyncio
import enum
import time
from collections.abc import Callable

Clock = Callable[[], float]


class MinuteBudget:
    """A token bucket refilled at `per_minute` a minute, holding at most a minute's worth.

    `take(n)` waits until `n` units are there (a request larger than the bucket
    waits for a full one) and returns how long it waited. 0 means no budget.
    """

    def __init__(self, per_minute: int, clock: Clock = time.monotonic) -> None:
        self.per_minute = per_minute
        self._clock = clock
        self._level = float(per_minute)
        self._at = clock()
        self._queue = asyncio.Lock()

    def _refill(self) -> None:
        now = self._clock()
        self._level = min(self.per_minute, self._level + (now - self._at) * self.per_minute / 60)
        self._at = now

    async def take(self, amount: float) -> None:
        """Wait, in turn, until `amount` units are free, then spend them."""
        if self.per_minute <= 0:
            return
        amount = min(amount, self.per_minute)
        async with self._queue:  # first come, first served: no caller starves
            self._refill()
            while self._level < amount:
                await asyncio.sleep((amount - self._level) * 60 / self.per_minute)
                self._refill()
            self._level -= amount

    def refund(self, amount: float) -> None:
        """Give back units estimated but not used (a reply shorter than its cap)."""
        if self.per_minute > 0 and amount > 0:
            self._refill()
            self._level = min(self.per_minute, self._level + amount)


class Circuit(str, enum.Enum):
    """The breaker's state, as metrics and `?detail=1` show it."""

    CLOSED = "closed"
    OPEN = "open"
    HALF_OPEN = "half_open"


class CircuitBreaker:
    """Stops calling an endpoint after `failures` failures in a row, for `open_s` seconds; then
    lets one probe through (half open), whose success closes it and failure reopens it."""

    def __init__(self, failures: int, open_s: float, clock: Clock = time.monotonic) -> None:
        self.failures = failures
        self.open_s = open_s
        self._clock = clock
        self._in_a_row = 0
        self._opened_at: float | None = None
        self._probing = False

    @property
    def state(self) -> Circuit:
        if self._opened_at is None:
            return Circuit.CLOSED
        if self._probing or self._clock() - self._opened_at < self.open_s:
            return Circuit.OPEN
        return Circuit.HALF_OPEN

    def retry_after_s(self) -> float:
        """Seconds until the circuit lets a probe through (0 when it would now)."""
        if self._opened_at is None:
            return 0.0
        return max(0.0, self._opened_at + self.open_s - self._clock())

    def allow(self) -> bool:
        """May a call go out now? In half open only one does, the probe."""
        state = self.state
        if state is Circuit.HALF_OPEN:
            self._probing = True
            return True
        return state is Circuit.CLOSED

    def succeeded(self) -> None:
        self._in_a_row = 0
        self._opened_at = None
        self._probing = False

    def failed(self) -> None:
        self._in_a_row += 1
        if self._probing or self._in_a_row >= self.failures:
            self._opened_at = self._clock()
            self._probing = False

    def released(self) -> None:
        """A call that ended neither way (cancelled): a probe's slot is free again."""
        self._probing = False
