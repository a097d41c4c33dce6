"""`Pacing`: requests with a body enter the app a few per loop turn, in order; GETs never wait."""

from __future__ import annotations

import asyncio
from collections import Counter

from starlette.types import Receive, Scope, Send

from reward_service.server.pacing import Pacing


class _Turns:
    """Counts the event loop's turns: a callback that runs once a turn and schedules itself."""

    def __init__(self) -> None:
        self.turn = 0
        self._loop = asyncio.get_running_loop()
        self._handle = self._loop.call_soon(self._tick)

    def _tick(self) -> None:
        self.turn += 1
        self._handle = self._loop.call_soon(self._tick)

    def stop(self) -> None:
        self._handle.cancel()


async def _burst(methods: list[str], per_turn: int) -> list[tuple[int, int]]:
    """Each request of `methods` sent at once through `Pacing`: (request, turn it entered)."""
    turns = _Turns()
    entered: list[tuple[int, int]] = []

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        entered.append((scope["n"], turns.turn))

    async def nothing() -> dict[str, str]:
        return {}

    async def ignore(message: object) -> None:
        pass

    paced = Pacing(app, per_turn=per_turn)
    scopes = [{"type": "http", "method": m, "n": n} for n, m in enumerate(methods)]
    await asyncio.gather(*(paced(scope, nothing, ignore) for scope in scopes))
    turns.stop()
    return entered


async def test_a_burst_enters_a_few_per_turn_in_arrival_order() -> None:
    """100 POSTs at once: every one enters, in the order they came, at most 16 in one turn."""
    entered = await _burst(["POST"] * 100, per_turn=16)
    assert [n for n, _ in entered] == list(range(100))
    per_turn = Counter(turn for _, turn in entered)
    assert max(per_turn.values()) <= 16
    assert len(per_turn) >= 100 // 16


async def test_gets_never_wait_behind_a_burst() -> None:
    """A GET sent after 100 POSTs (a probe) enters in the first turn, before most of them."""
    entered = await _burst(["POST"] * 100 + ["GET"], per_turn=16)
    turn_of = dict(entered)
    assert turn_of[100] == min(turn_of.values())
    assert sum(turn <= turn_of[100] for turn in turn_of.values()) <= 17
