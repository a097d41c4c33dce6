"""The bound on requests in progress and on the body bytes they hold.

A request past `max_requests` is refused before its body is read; one whose
declared Content-Length (or, for a chunked body, whose bytes read so far)
would take the bytes held past `max_bytes` is refused as soon as that is
known. Both get 503 with Retry-After (`Overloaded`); what a request held is
released when it ends, however it ends. One `Admission` serves the whole app
(`app.state.admission`); it lives on the event loop and takes no lock.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from reward_service.errors import Overloaded


class Admission:
    """Bounds the requests in progress and the body bytes they hold."""

    def __init__(self, max_requests: int, max_bytes: int) -> None:
        self.max_requests = max_requests
        self.max_bytes = max_bytes
        self.active = 0
        self.held_bytes = 0

    @contextlib.contextmanager
    def admit(self) -> Iterator[Claim]:
        """A claim for one request, or `Overloaded` when `max_requests` are in progress."""
        if self.active >= self.max_requests:
            raise Overloaded(f"{self.active} requests in progress; retry shortly", retry_after_s=1)
        self.active += 1
        claim = Claim(self)
        try:
            yield claim
        finally:
            self.active -= 1
            self.held_bytes -= claim.held


class Claim:
    """One admitted request's share of the byte budget."""

    __slots__ = ("_admission", "held")

    def __init__(self, admission: Admission) -> None:
        self._admission = admission
        self.held = 0

    def hold(self, size: int) -> None:
        """Hold `size` body bytes in all (never fewer than before), or refuse the request."""
        budget, extra = self._admission, size - self.held
        if extra <= 0:
            return
        if budget.held_bytes + extra > budget.max_bytes:
            raise Overloaded(
                f"{budget.held_bytes} body bytes held by requests in progress; retry shortly",
                retry_after_s=1,
            )
        budget.held_bytes += extra
        self.held = size
