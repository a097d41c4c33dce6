"""The scoring engine: what a request gets when the pool closes under it."""

from __future__ import annotations

import asyncio
import json

import pytest

from reward_service.errors import Overloaded
from reward_service.grading.engine import ScoringEngine
from reward_service.grading.sample import Sample
from reward_service.settings import Settings
from tests.conftest import FAKE_SCORER


def test_work_the_pool_will_not_run_gets_overloaded_not_a_fallback_reward() -> None:
    """At close, gradings a worker holds finish; queued ones raise Overloaded (503), never 0.0."""

    async def body() -> list[object]:
        settings = Settings(workers=1, extra_scorers=json.loads(FAKE_SCORER))
        engine = ScoringEngine(settings)
        await engine.start()
        gradings = [
            asyncio.create_task(engine.grade(Sample("sleep:0.5", None), "fake")) for _ in range(3)
        ]
        await asyncio.sleep(0.2)
        await engine.close()
        return await asyncio.gather(*gradings, return_exceptions=True)

    held, next_up, queued = asyncio.run(body())
    assert [getattr(g, "reward", g) for g in (held, next_up)] == [1.0, 1.0]
    assert isinstance(queued, Overloaded), queued
    with pytest.raises(Overloaded, match="shutting down"):
        raise queued
