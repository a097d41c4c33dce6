"""Composite scorers: existing scorers and reward components, weighted into one reward.

TRL, verl and open-r1 train on several named rewards at once (accuracy, format, tag
count, length, repetition), each a separate function, summed with weights (TRL's
`reward_weights`) or normalised within the group first and then summed (GDPO). A
`CompositeDefinition`, read from the settings, names such a recipe once; the registry
serves it at `/score/<name>` as a scorer like any other (`composite_scorer`).

Each component is either a scorer (`scorer`, with `options`), graded as that scorer
grades, or a component kind of `scorers.components` (`kind`, with `params`). One scorer
component is the composite's verdict (`verdict`, else the first scorer component): its
status is the composite's (`ok` counts towards pass@k) and its correctness is what
`cosine_length` reads. If any scorer component's reward is a fallback (`timeout`,
`error`, `judge_failed`), so is the composite's: a recipe with a fake part is not a
verdict, and the trainer should mask it.

Detail answers hold each component's value under `components` and at the top level
(so SLIME's `--reward-key format` picks one); a component value wins over a verdict
detail of the same name. `reward` is `combine`d: `sum` is the weighted sum;
`normalized_sum` z-scores each component within its group before the weighted sum,
which needs a group (the group endpoint, `normalized_rewards`); one answer alone gets
the weighted sum.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from reward_service.errors import InvalidSetting
from reward_service.scorers.base import (
    JSON,
    NO_OPTIONS,
    GradingLimits,
    Score,
    Scorer,
    ScorerBase,
    ScorerSettings,
    Status,
)
from reward_service.scorers.components import KINDS

COMBINES = ("sum", "normalized_sum")
RESERVED = frozenset(
    {"reward", "status", "scorer", "elapsed_ms", "loss_multiplier", "components", "reason"}
)
"""Names a component may not take: the detail answer's own keys."""
NORMALIZE_EPSILON = 1e-6
"""Added to a component's spread before dividing, as GRPO does: an all-equal component adds 0."""
_NAME = re.compile(r"[a-z][a-z0-9_]{0,63}")


class ComponentDefinition(BaseModel):
    """One named part of a composite: a scorer's reward or a component kind's value."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    weight: float = 1.0
    scorer: str | None = None
    """A scorer's name: its reward, graded with `options`."""
    options: dict[str, Any] = Field(default_factory=dict)
    kind: str | None = None
    """A component kind of `scorers.components.KINDS`, computed with `params`."""
    params: dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _one_source(self) -> ComponentDefinition:
        if (self.scorer is None) == (self.kind is None):
            raise ValueError("a component names exactly one of `scorer` and `kind`")
        if self.kind is not None:
            if self.kind not in KINDS:
                raise ValueError(f"unknown component kind {self.kind!r}; kinds: {sorted(KINDS)}")
            KINDS[self.kind].params.model_validate(self.params)
        elif self.params:
            raise ValueError("`params` belong to a component kind; a scorer takes `options`")
        if self.kind is not None and self.options:
            raise ValueError("`options` belong to a scorer component; a kind takes `params`")
        return self


class CompositeDefinition(BaseModel):
    """A composite scorer: its components by name, how they combine, which is the verdict."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    components: dict[str, ComponentDefinition]
    combine: Literal["sum", "normalized_sum"] = "sum"
    verdict: str | None = None
    """The scorer component whose status the composite reports; default: the first one."""

    @model_validator(mode="after")
    def _names_and_verdict(self) -> CompositeDefinition:
        for name in self.components:
            if not _NAME.fullmatch(name) or name in RESERVED:
                raise ValueError(
                    f"component name {name!r} must be lower-case letters, digits and _ "
                    f"and none of {sorted(RESERVED)}"
                )
        scorers = [name for name, part in self.components.items() if part.scorer is not None]
        if not scorers:
            raise ValueError("a composite needs at least one scorer component (its verdict)")
        if self.verdict is not None and self.verdict not in scorers:
            raise ValueError(f"verdict {self.verdict!r} is not a scorer component: {scorers}")
        return self

    @property
    def verdict_name(self) -> str:
        """The scorer component whose status is the composite's."""
        return self.verdict or next(n for n, p in self.components.items() if p.scorer is not None)

    def scorers(self) -> dict[str, str]:
        """The scorer components: component name -> scorer name."""
        return {n: p.scorer for n, p in self.components.items() if p.scorer is not None}

    def weighted_sum(self, values: Mapping[str, float]) -> float:
        """The components' weighted sum: `combine="sum"`'s reward."""
        return math.fsum(part.weight * values[name] for name, part in self.components.items())


def read_composites(raw: Mapping[str, Any]) -> dict[str, CompositeDefinition]:
    """`REWARD_COMPOSITES`, each definition validated whole; `InvalidSetting` names the one
    that cannot work and why."""
    found = {}
    for name, definition in raw.items():
        try:
            found[name] = CompositeDefinition.model_validate(definition)
        except ValidationError as exc:
            raise InvalidSetting(f"REWARD_COMPOSITES[{name!r}]: {exc}") from None
    return found


OPEN_R1 = CompositeDefinition(
    components={
        "accuracy": ComponentDefinition(scorer="math_verify"),
        "format": ComponentDefinition(kind="think_answer_format"),
        "tag_count": ComponentDefinition(kind="tag_count"),
    }
)
"""open-r1's default GRPO recipe: `reward_funcs` accuracy, format and tag_count, weight 1 each."""


def component_values(
    definition: CompositeDefinition, response: str, graded: Mapping[str, Score]
) -> dict[str, float]:
    """Every component's value for `response`, the scorer components' from their `graded`
    scores (in component order)."""
    correct = graded[definition.verdict_name].status is Status.OK
    values = {}
    for name, part in definition.components.items():
        if part.kind is None:
            values[name] = graded[name].reward
        else:
            kind = KINDS[part.kind]
            values[name] = kind.value(response, correct, kind.params.model_validate(part.params))
    return values


def composite_score(
    definition: CompositeDefinition, response: str, graded: Mapping[str, Score]
) -> Score:
    """The composite's score from its scorer components' `graded` scores."""
    verdict = graded[definition.verdict_name]
    failed = next((score for score in graded.values() if not score.status.is_verdict), None)
    if failed is not None:
        return Score(failed.reward, failed.status, {**failed.details, "components": {}})
    values = component_values(definition, response, graded)
    return Score(
        definition.weighted_sum(values),
        verdict.status,
        {**verdict.details, **values, "components": values},
    )


def normalized_rewards(
    definition: CompositeDefinition, values: Sequence[Mapping[str, float] | None]
) -> list[float | None]:
    """GDPO's normalise-then-sum over one group: each component z-scored across the answers
    that have values (None: a fallback, left out and given None), then the weighted sum."""
    present = [v for v in values if v is not None]
    scale: dict[str, tuple[float, float]] = {}
    for name in definition.components:
        column = [v[name] for v in present]
        mean = math.fsum(column) / len(column) if column else 0.0
        spread = (
            math.sqrt(math.fsum((x - mean) ** 2 for x in column) / (len(column) - 1))
            if len(column) > 1
            else 0.0
        )
        scale[name] = (mean, spread + NORMALIZE_EPSILON)
    return [
        None
        if v is None
        else definition.weighted_sum({n: (v[n] - scale[n][0]) / scale[n][1] for n in v})
        for v in values
    ]


class CompositeScorer(Scorer):
    """Grades an answer with each scorer component (their screens first, as the engine
    would), then computes the component kinds and combines them (`composite_score`).

    The registry builds one class per definition (`composite_scorer`) and hands each
    instance the shared instances of its scorers, as `boxed_<name>` shares its inner one.
    """

    definition: ClassVar[CompositeDefinition]
    parts: ClassVar[Mapping[str, type[Scorer]]]
    """The scorer components' classes, by component name."""

    def __init__(
        self,
        limits: GradingLimits | None = None,
        settings: ScorerSettings | None = None,
        scorers: Mapping[str, Scorer] | None = None,
    ) -> None:
        super().__init__(limits, settings)
        self.scorers = dict(scorers or {n: cls(self.limits) for n, cls in self.parts.items()})

    def score(self, prompt: JSON, response: str, label: JSON, options: Mapping[str, JSON]) -> Score:
        if not isinstance(response, str):
            return Score.error("response is not a string")
        graded = {}
        for name, scorer in self.scorers.items():
            asked = _options_for(self.parts[name], self.definition.components[name], options)
            settled = self.parts[name].screen(response, label, asked)
            graded[name] = (
                scorer.score(prompt, response, label, asked) if settled is None else settled
            )
        return composite_score(self.definition, response, graded)

    @classmethod
    def screen(
        cls, response: str, label: JSON, options: Mapping[str, JSON] = NO_OPTIONS
    ) -> Score | None:
        """Settled here when every scorer component's screen settles it (the math_verify
        integer answers): the component kinds are linear, so the event loop may run them."""
        graded = {}
        for name, part in cls.parts.items():
            asked = _options_for(part, cls.definition.components[name], options)
            settled = part.screen(response, label, asked)
            if settled is None:
                return None
            graded[name] = settled
        return composite_score(cls.definition, response, graded)


def _options_for(
    part: type[ScorerBase], component: ComponentDefinition, request: Mapping[str, JSON]
) -> Mapping[str, JSON]:
    """A scorer component's options: its definition's, then those of the request it accepts."""
    accepted = {k: v for k, v in request.items() if part.option_problem(k, v) is None}
    return {**component.options, **accepted} if accepted else component.options


def composite_scorer(
    name: str, definition: CompositeDefinition, parts: Mapping[str, type[Scorer]]
) -> type[CompositeScorer]:
    """The scorer class serving `definition` as `name`, its scorer components' classes
    `parts` (component name -> class): options those accept, the longest deadline."""
    options: dict[str, frozenset[str] | None] = {}
    for part in parts.values():
        options.update(part.options)
    deadlines = [part.deadline_s for part in parts.values()]
    return type(
        f"Composite_{name}",
        (CompositeScorer,),
        {
            "__doc__": f"`{name}`: a composite of {', '.join(definition.components)}.",
            "__module__": __name__,
            "name": name,
            "definition": definition,
            "parts": dict(parts),
            "options": options,
            "deadline_s": None if None in deadlines else max(d for d in deadlines if d),
            "correct_is_label": parts[definition.verdict_name].correct_is_label,
            "deterministic": all(part.deterministic for part in parts.values()),
            "grades_groups_together": all(p.grades_groups_together for p in parts.values()),
        },
    )
