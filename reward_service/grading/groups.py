"""One prompt's group of answers graded in one call: each distinct response once, then the
group's facts (`grading.group_facts`).

Answers of a group that are the same text get the same grade, so each distinct response is
graded once and its grade shared, unless the scorer is not a function of its input
(`random`); the outcome metrics count the gradings made. Every graded answer goes through
the engine as any answer does (screen, worker, deadline, fallback), the group `together`
(`ScoringEngine.grade_many`): for a scorer that gains from it, in one worker task, whose
cache (math_verify's verdicts, keyed by the final answer) grades each distinct final
answer once. A composite that normalises its components (`combine="normalized_sum"`) gets its
group here, so its rewards are GDPO's.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Protocol

from reward_service.grading.engine import Graded
from reward_service.grading.group_facts import GroupFacts, answer_classes, group_facts
from reward_service.grading.sample import Sample
from reward_service.scorers import ScorerRegistry
from reward_service.scorers.base import JSON, NO_OPTIONS, Score, Status
from reward_service.scorers.composite import CompositeScorer, normalized_rewards
from reward_service.settings import Settings


class Grader(Protocol):
    """What grading a group needs of the engine."""

    registry: ScorerRegistry

    @property
    def settings(self) -> Settings: ...

    async def grade_many(
        self,
        samples: Sequence[Sample | None],
        scorer: str | None = None,
        options: Mapping[str, JSON] = NO_OPTIONS,
        *,
        together: bool = False,
    ) -> list[Graded]: ...


@dataclass(frozen=True)
class GradedGroup:
    """A graded group: each answer's grading and reward, in input order, and its facts."""

    graded: list[Graded]
    rewards: list[float]
    """What the trainer gets: each grading's reward, or a normalising composite's."""
    facts: GroupFacts
    gradings: int
    """Responses actually graded: the group's distinct ones."""


async def grade_group(
    grader: Grader,
    samples: Sequence[Sample],
    scorer: str | None = None,
    options: Mapping[str, JSON] = NO_OPTIONS,
    ks: Collection[int] = (),
) -> GradedGroup:
    """Grade `samples` (one prompt's answers, one label) and compute the group's facts."""
    first: dict[str, int] = {}
    distinct: list[Sample] = []
    slots: list[int] = []
    names = {s.scorer or scorer or grader.settings.default_scorer for s in samples}
    shared = all(_is_function(grader.registry, name) for name in names)
    for sample in samples:
        slot = first.get(sample.response) if shared else None
        if slot is None:
            slot = len(distinct)
            distinct.append(sample)
            if shared:
                first[sample.response] = slot
        slots.append(slot)
    results = await grader.grade_many(distinct, scorer, options, together=True)
    graded = [results[slot] for slot in slots]
    rewards = _rewards(grader.registry, graded)
    scores = [g.score for g in graded]
    finals = [_final_answer(g, s.response) for g, s in zip(graded, samples, strict=True)]
    classes = answer_classes(scores, finals, _correct_is_label(grader.registry, graded))
    facts = group_facts(
        [_with_reward(g, r) for g, r in zip(graded, rewards, strict=True)], classes, ks
    )
    return GradedGroup(graded, rewards, facts, len(distinct))


def _is_function(registry: ScorerRegistry, name: str) -> bool:
    """Whether scorer `name` gives equal inputs equal grades (an unknown name: an error each)."""
    return name not in registry or registry.scorer_class(name).deterministic


def _rewards(registry: ScorerRegistry, graded: Sequence[Graded]) -> list[float]:
    """Each answer's reward: its grading's, or, for a composite that normalises within the
    group, GDPO's normalised sum of its components (fallbacks keep their reward)."""
    names = {g.scorer for g in graded}
    if len(names) != 1:
        return [g.reward for g in graded]
    [name] = names
    cls = registry.scorer_class(name) if name in registry else None
    if not (isinstance(cls, type) and issubclass(cls, CompositeScorer)):
        return [g.reward for g in graded]
    if cls.definition.combine != "normalized_sum":
        return [g.reward for g in graded]
    values = [
        g.score.details.get("components") if g.score.status.is_verdict else None for g in graded
    ]
    normalized = normalized_rewards(cls.definition, [v or None for v in values])
    return [g.reward if n is None else n for g, n in zip(graded, normalized, strict=True)]


def _final_answer(graded: Graded, response: str) -> str | None:
    """The answer's final answer as its scorer read it (`pred`), else its whole text; None
    when the scorer found none."""
    if graded.score.status is Status.NO_ANSWER:
        return None
    pred = graded.score.details.get("pred")
    if isinstance(pred, str):
        return pred or None
    return response.strip() or None


def _correct_is_label(registry: ScorerRegistry, graded: Sequence[Graded]) -> bool:
    """Whether a correct verdict means "equal to the label" for every scorer of the group."""
    return all(
        g.scorer in registry and registry.scorer_class(g.scorer).correct_is_label for g in graded
    )


def _with_reward(graded: Graded, reward: float) -> Score:
    return graded.score if graded.reward == reward else replace(graded.score, reward=reward)
