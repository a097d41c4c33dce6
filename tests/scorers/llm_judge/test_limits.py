"""The circuit breaker's states and the per-minute budgets."""

from __future__ import annotations

import asyncio

import pytest

from reward_service.scorers.llm_judge.limits import Circuit, CircuitBreaker, MinuteBudget


class Clock:
    """A clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_breaker_opens_after_failures_in_a_row_only() -> None:
    """Failures interrupted by a success never open it; `failures` in a row do."""
    breaker = CircuitBreaker(3, 10.0, Clock())
    for _ in range(2):
        breaker.failed()
    breaker.succeeded()
    breaker.failed()
    breaker.failed()
    assert breaker.state is Circuit.CLOSED and breaker.allow()
    breaker.failed()
    assert breaker.state is Circuit.OPEN and not breaker.allow()


def test_open_breaker_lets_one_probe_through_after_its_wait() -> None:
    """After `open_s` one call (the probe) goes out; the others wait for its outcome."""
    clock = Clock()
    breaker = CircuitBreaker(1, 10.0, clock)
    breaker.failed()
    clock.now = 4.0
    assert breaker.retry_after_s() == 6.0 and not breaker.allow()
    clock.now = 10.0
    assert breaker.state is Circuit.HALF_OPEN
    assert breaker.allow() and not breaker.allow(), "one probe at a time"
    breaker.succeeded()
    assert breaker.state is Circuit.CLOSED and breaker.allow()


def test_failed_probe_reopens_for_a_full_wait() -> None:
    """A probe that fails opens the circuit again, from now."""
    clock = Clock()
    breaker = CircuitBreaker(5, 10.0, clock)
    for _ in range(5):
        breaker.failed()
    clock.now = 11.0
    assert breaker.allow()
    breaker.failed()
    assert breaker.state is Circuit.OPEN and breaker.retry_after_s() == 10.0


def test_cancelled_probe_frees_the_probe_slot() -> None:
    """A probe that ended neither way lets the next call probe instead."""
    clock = Clock()
    breaker = CircuitBreaker(1, 1.0, clock)
    breaker.failed()
    clock.now = 2.0
    assert breaker.allow()
    breaker.released()
    assert breaker.allow()


async def test_minute_budget_spends_a_minute_then_waits() -> None:
    """A budget of 60 a minute lets 60 through at once; the 61st waits for the refill."""
    budget = MinuteBudget(60)
    for _ in range(60):
        await asyncio.wait_for(budget.take(1), 1)
    with pytest.raises(TimeoutError):
        await asyncio.wait_for(budget.take(1), 0.2)


async def test_refunded_units_are_spent_again() -> None:
    """Units given back (a reply shorter than estimated) serve the next caller at once."""
    budget = MinuteBudget(100)
    await budget.take(100)
    budget.refund(40)
    await asyncio.wait_for(budget.take(40), 1)


async def test_zero_budget_is_no_limit() -> None:
    """0 a minute means no cap."""
    budget = MinuteBudget(0)
    await asyncio.wait_for(asyncio.gather(*(budget.take(10**6) for _ in range(100))), 1)
