"""`boxed_<type>`: SLIME's `boxed_` prefix, any scorer graded on the last box alone.

SLIME's `--rm-type boxed_<type>` replaces the response with
`math_utils.extract_answer(response) or ""` and grades that with `<type>`,
label and options unchanged. Here the box is looked for in the answer region
only (`scorers.reasoning`): a response whose reasoning never closed, or closed
twice, is graded as "", as a response with no box (SLIME reads the whole
response: `think=keep`). The registry serves `boxed_<name>` for every
scorer it knows, built by `boxed_scorer`.

SLIME's extraction is narrower than `math_dataset.last_boxed` (the `math`
scorers' finder), so it has its own function here: only the last `\\boxed`
counts, and only when `{` follows it at once. `\\boxed 5`, `\\boxed {5}`,
an unclosed last box, and `\\fbox{5}` without any `\\boxed` all give ""
(SLIME's `\\fbox` fallback is unreachable: `extract_answer` first requires
`\\boxed` in the text).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from typing import ClassVar

from reward_service.scorers.base import (
    JSON,
    NO_OPTIONS,
    AsyncScorer,
    GradingLimits,
    Score,
    Scorer,
    ScorerBase,
    ScorerSettings,
    ScoringInput,
)
from reward_service.scorers.reasoning import KEEP, Unanswered, final_answer
from reward_service.scorers.slime.math_dataset import closing_brace

BOXED_PREFIX = "boxed_"
_BOX = "\\boxed"


def boxed_content(response: str, options: Mapping[str, JSON] = NO_OPTIONS) -> str:
    """What SLIME grades for `boxed_<type>`: the last `\\boxed{...}`'s content in the answer
    region, else ""."""
    region = final_answer(response, options)
    return "" if isinstance(region, Unanswered) else _last_box(region)


def _inner(options: Mapping[str, JSON], inner: type[ScorerBase]) -> Mapping[str, JSON]:
    """The options an inner scorer reading `think` gets: the box's content is the answer
    region already, so it is read whole (`think=keep`), never as a response whose reasoning
    never closed."""
    return {**options, "think": KEEP} if "think" in inner.options else options


def _last_box(response: str) -> str:
    start = response.rfind(_BOX)
    brace = start + len(_BOX)
    if start < 0 or not response.startswith("{", brace):
        return ""
    end = closing_brace(response, brace)
    return "" if end is None else response[brace + 1 : end]


class BoxedScorer(Scorer):
    """Grades the content of a response's last box with the scorer class `inner`.

    The registry hands each instance its own `inner` instance as `scorer`,
    so a scorer that loads a model loads it once for both names.
    """

    inner: ClassVar[type[Scorer]]

    def __init__(
        self,
        limits: GradingLimits | None = None,
        settings: ScorerSettings | None = None,
        scorer: Scorer | None = None,
    ) -> None:
        super().__init__(limits, settings)
        self.scorer = scorer or (
            self.inner(self.limits) if settings is None else self.inner(self.limits, settings)
        )

    def score(self, prompt: JSON, response: str, label: JSON, options: Mapping[str, JSON]) -> Score:
        return self.scorer.score(
            prompt, boxed_content(response, options), label, _inner(options, self.inner)
        )

    def score_many(self, items: Sequence[ScoringInput]) -> list[Score]:
        return self.scorer.score_many(
            [
                (prompt, boxed_content(response, opts), label, _inner(opts, self.inner))
                for prompt, response, label, opts in items
            ]
        )

    @classmethod
    def screen(
        cls, response: str, label: JSON, options: Mapping[str, JSON] = NO_OPTIONS
    ) -> Score | None:
        """The inner scorer's screen, on what it will grade: linear, as both steps are."""
        return cls.inner.screen(boxed_content(response, options), label, _inner(options, cls.inner))


class BoxedAsyncScorer(AsyncScorer):
    """`BoxedScorer` for an I/O-bound `inner`: the shared instance is opened and closed as
    `inner` (the engine's), and the two names share its concurrency bound."""

    inner: ClassVar[type[AsyncScorer]]

    def __init__(
        self,
        limits: GradingLimits | None = None,
        settings: ScorerSettings | None = None,
        scorer: AsyncScorer | None = None,
    ) -> None:
        super().__init__(limits, settings)
        self.scorer = scorer or self.inner(self.limits, settings)

    async def score(
        self, prompt: JSON, response: str, label: JSON, options: Mapping[str, JSON]
    ) -> Score:
        return await self.scorer.score(
            prompt, boxed_content(response, options), label, _inner(options, self.inner)
        )

    @classmethod
    def screen(
        cls, response: str, label: JSON, options: Mapping[str, JSON] = NO_OPTIONS
    ) -> Score | None:
        return cls.inner.screen(boxed_content(response, options), label, _inner(options, cls.inner))


@functools.cache
def boxed_scorer(inner: type[ScorerBase], name: str) -> type[BoxedScorer | BoxedAsyncScorer]:
    """The `boxed_<name>` scorer class around `inner` (same batch size, options, settings and
    deadline), built once."""
    attributes = {
        "__doc__": f"`{BOXED_PREFIX}{name}`: `{name}` on the content of the last box.",
        "__module__": __name__,
        "name": BOXED_PREFIX + name,
        "inner": inner,
        "batch_size": inner.batch_size,
        "options": inner.options,
        "settings_model": inner.settings_model,
        "deadline_s": inner.deadline_s,
        "correct_is_label": inner.correct_is_label,
        "deterministic": inner.deterministic,
        "grades_groups_together": inner.grades_groups_together,
    }
    base: type[BoxedScorer | BoxedAsyncScorer]
    base = BoxedAsyncScorer if issubclass(inner, AsyncScorer) else BoxedScorer
    if issubclass(inner, AsyncScorer):
        attributes["concurrency"] = inner.concurrency
    return type(f"Boxed{inner.__name__}", (base,), attributes)
