"""The grading worker's room: what its grading returns, and what a worker has imported."""

from __future__ import annotations

import asyncio

import pytest

from reward_service.grading import worker
from reward_service.grading.engine import ScoringEngine
from reward_service.scorers import ScorerRegistry, Status
from reward_service.settings import Settings

FAKE = {"fake": "reward_service.testing:FakeScorer"}


@pytest.mark.parametrize(
    ("response", "status", "reason"),
    [
        ("0.5", Status.OK, None),
        ("raise", Status.ERROR, "scorer raised RuntimeError"),
    ],
)
def test_a_scorers_failure_is_its_answers_status(
    monkeypatch: pytest.MonkeyPatch, response: str, status: Status, reason: str | None
) -> None:
    """A scorer that raises costs its answers (status `error`), never the worker."""
    monkeypatch.setattr(worker, "_registry", ScorerRegistry(FAKE))
    [score] = worker.grade("fake", [("p", response, None, {})])
    assert (score.status, score.details.get("reason")) == (status, reason)


def test_a_scorer_raising_in_a_task_of_several_costs_only_its_answer(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A group or batch in one task: the answer the scorer raised on is `error`, the
    others are graded one by one."""
    monkeypatch.setattr(worker, "_registry", ScorerRegistry(FAKE))
    scores = worker.grade("fake", [("p", r, None, {}) for r in ("1.0", "raise", "0.5")])
    assert [(s.status, s.reward) for s in scores] == [
        (Status.OK, 1.0),
        (Status.ERROR, 0.0),
        (Status.OK, 0.5),
    ]


def test_a_scorer_returning_too_few_scores_fails_each_answer(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A `score_many` that drops answers is an error for each, never a misaligned batch."""
    registry = ScorerRegistry(FAKE)
    monkeypatch.setattr(worker, "_registry", registry)
    monkeypatch.setattr(registry.get("fake"), "score_many", lambda items: [])
    scores = worker.grade("fake", [("p", "1", None, {})] * 2)
    assert [s.details["reason"] for s in scores] == ["scorer returned 0 scores for 2"] * 2


def test_a_grading_worker_has_the_worker_room_loaded_and_not_the_engine() -> None:
    """The forkserver preloads `grading.worker` and the scorers: a worker never imports the
    server's side (engine, pool, asyncio's loop)."""

    async def loaded() -> list[bool]:
        engine = ScoringEngine(Settings(workers=1), only={"exact"})
        await engine.start()
        try:
            assert engine.pool is not None
            probe = "[m in __import__('sys').modules for m in {modules!r}]"
            modules = [
                "reward_service.grading.worker",
                "reward_service.scorers.answers.exact",
                "reward_service.grading.engine",
                "reward_service.grading.pool",
            ]
            found: list[bool] = await engine.pool.run(eval, (probe.format(modules=modules),), 30)
            return found
        finally:
            await engine.close()

    assert asyncio.run(loaded()) == [True, True, False, False]
