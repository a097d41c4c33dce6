"""The engine's `grade_in_worker` hook: an async scorer has a CPU-bound scorer grade in a worker."""

from __future__ import annotations

from reward_service.grading.engine import ScoringEngine
from reward_service.scorers import Status
from reward_service.scorers.base import AsyncScorer
from reward_service.settings import Settings


async def test_async_scorers_get_cpu_bound_grades_from_the_pool() -> None:
    """Each async scorer is handed the hook before it opens: a CPU-bound scorer's grade comes
    from a worker (its pid is not ours), screened first (a hazard is settled without one); an
    async or unknown scorer's name is an error, never a loop back into the loop."""
    engine = ScoringEngine(Settings(workers=1))
    await engine.start()
    try:
        [judge] = [s for s in engine._opened if s.name == "judge"]
        assert isinstance(judge, AsyncScorer)
        ok = await judge.grade_in_worker("math_verify", "p", "\\boxed{4}", "4", {})
        wrong = await judge.grade_in_worker("math_verify", "p", "\\boxed{5}", "4", {})
        hazard = await judge.grade_in_worker("math_verify", "p", "\\boxed{9^{9^{9^{9}}}}", "9", {})
        nested = await judge.grade_in_worker("math_judge", "p", "4", "4", {})
        unknown = await judge.grade_in_worker("nope", "p", "4", "4", {})
    finally:
        await engine.close()
    assert (ok.status, wrong.status, hazard.status) == (Status.OK, Status.WRONG, Status.NO_ANSWER)
    assert nested.status is Status.ERROR and unknown.status is Status.ERROR
    assert engine.in_flight == 0
