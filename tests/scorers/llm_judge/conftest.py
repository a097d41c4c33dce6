"""A stand-in judge on loopback for the judge tests, reset before each test."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from reward_service.bench.chat_stand_in import ChatStandIn, chat_stand_in


@pytest.fixture(scope="session")
def judge_server() -> Iterator[ChatStandIn]:
    with chat_stand_in() as server:
        yield server


@pytest.fixture
def stand_in(judge_server: ChatStandIn) -> ChatStandIn:
    judge_server.reset()
    judge_server.latency_s = judge_server.jitter = 0.0
    return judge_server
