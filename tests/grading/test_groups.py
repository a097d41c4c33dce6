"""Grading one prompt's group: distinct responses graded once, facts, normalising composites."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pytest

from reward_service.grading.engine import Graded
from reward_service.grading.groups import grade_group
from reward_service.grading.sample import Sample
from reward_service.scorers import ScorerRegistry
from reward_service.scorers.base import JSON, NO_OPTIONS, Score, Scorer, Status
from reward_service.scorers.composite import CompositeDefinition
from reward_service.settings import Settings

NORMALIZED = CompositeDefinition.model_validate(
    {
        "components": {"accuracy": {"scorer": "math_verify"}, "tags": {"kind": "tag_count"}},
        "combine": "normalized_sum",
    }
)


class _InProcess:
    """The engine's `grade_many`, in this process, counting what it grades."""

    def __init__(self, timeout_on: str | None = None) -> None:
        self.registry = ScorerRegistry.discover(composites={"normalized": NORMALIZED})
        self.settings = Settings()
        self.graded: list[str] = []
        self.timeout_on = timeout_on

    async def grade_many(
        self,
        samples: Sequence[Sample | None],
        scorer: str | None = None,
        options: Mapping[str, JSON] = NO_OPTIONS,
        *,
        together: bool = False,
    ) -> list[Graded]:
        assert together, "a group is graded together"
        results = []
        for sample in samples:
            assert sample is not None
            name = sample.scorer or scorer or self.settings.default_scorer
            self.graded.append(sample.response)
            if sample.response == self.timeout_on:
                score = Score(0.0, Status.TIMEOUT, {"reason": "deadline"})
            else:
                grader = self.registry.get(name)
                assert isinstance(grader, Scorer)
                score = grader.score(sample.prompt, sample.response, sample.label, options)
            results.append(Graded(score, name, 1.0))
        return results


def _group(label: JSON, *responses: str) -> list[Sample]:
    return [Sample(response=r, label=label) for r in responses]


async def test_identical_responses_are_graded_once() -> None:
    """Eight copies of one answer and one other: two gradings, nine rewards."""
    grader = _InProcess()
    group = await grade_group(grader, _group("4", *["so \\boxed{4}"] * 8, "so \\boxed{5}"))
    assert grader.graded == ["so \\boxed{4}", "so \\boxed{5}"]
    assert group.gradings == 2
    assert group.rewards == [1.0] * 8 + [0.0]
    assert [g.score.status for g in group.graded] == [Status.OK] * 8 + [Status.WRONG]


async def test_a_scorer_that_draws_grades_every_copy() -> None:
    """`random` is not a function of its input: each copy gets its own draw."""
    grader = _InProcess()
    group = await grade_group(grader, _group("4", *["same"] * 4), scorer="random")
    assert group.gradings == 4 and len(grader.graded) == 4


async def test_group_facts_count_equal_answers_once() -> None:
    """Correct answers written three ways are one answer; the wrong one another."""
    grader = _InProcess()
    group = await grade_group(
        grader,
        _group(
            "\\frac{1}{2}",
            "so \\boxed{0.5}",
            "so \\boxed{\\frac{1}{2}}",
            "so \\boxed{\\dfrac{1}{2}}",
            "so \\boxed{3}",
            "I ran out of tok",
        ),
        ks=(1, 2),
    )
    facts = group.facts
    assert (facts.size, facts.graded, facts.correct) == (5, 5, 3)
    assert (facts.distinct_answers, facts.majority_count, facts.all_equal) == (2, 3, False)
    assert facts.pass_at_k == {1: pytest.approx(0.6), 2: pytest.approx(0.9)}


async def test_a_timed_out_answer_is_masked_from_the_facts() -> None:
    """The fallback counts as masked; the other verdicts are all equal, so DAPO would drop it."""
    grader = _InProcess(timeout_on="slow")
    group = await grade_group(grader, _group("4", "so \\boxed{4}", "so \\boxed{4} ", "slow"))
    assert (group.facts.graded, group.facts.masked, group.facts.all_equal) == (2, 1, True)
    assert group.graded[2].score.status.loss_multiplier == 0.0


async def test_a_normalising_composite_gets_gdpo_rewards() -> None:
    """combine=normalized_sum: components z-scored across the group, then summed."""
    grader = _InProcess()
    group = await grade_group(grader, _group("4", "\\boxed{4}", "\\boxed{5}"), scorer="normalized")
    # accuracy 1 / 0: z = +-0.5 / sqrt(0.5); tags all 0: adds nothing
    assert group.rewards == [
        pytest.approx(0.5**0.5, rel=1e-5),
        pytest.approx(-(0.5**0.5), rel=1e-5),
    ]
    assert [g.reward for g in group.graded] == [1.0, 0.0]
