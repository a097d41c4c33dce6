"""Reward components: the shaping terms open-r1, DAPO and their kin add to a task's verdict.

Each is a pure function of the response (and, for `cosine_length`, of whether the
verdict was correct), linear in the response's length, so a composite scorer
(`scorers.composite`) can compute them anywhere, the event loop included. `KINDS`
names them as a composite's settings do, each with the model of its parameters.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict, Field, PositiveInt, model_validator

from reward_service.scorers.components.length import cosine_scaled, soft_overlong
from reward_service.scorers.components.repetition import repetition_penalty
from reward_service.scorers.components.think_format import tag_count, think_answer_format


class _Params(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class NoParams(_Params):
    """A component that takes no parameters."""


class CosineParams(_Params):
    """`cosine_length`'s parameters: open-r1's `get_cosine_scaled_reward` defaults."""

    max_length: PositiveInt = 1000
    min_value_correct: float = 0.5
    max_value_correct: float = 1.0
    min_value_wrong: float = -1.0
    max_value_wrong: float = -0.5


class OverlongParams(_Params):
    """`soft_overlong`'s parameters (DAPO's `L_max`, `L_cache` and penalty factor)."""

    max_length: PositiveInt
    buffer: PositiveInt
    factor: float = Field(default=1.0, ge=0.0)

    @model_validator(mode="after")
    def _buffer_inside(self) -> OverlongParams:
        if self.buffer > self.max_length:
            raise ValueError("buffer must not exceed max_length")
        return self


class RepetitionParams(_Params):
    """`repetition`'s parameters: open-r1's recipe uses 3-grams and -1.0."""

    ngram_size: PositiveInt = 3
    max_penalty: float = Field(default=-1.0, le=0.0)


ComponentFunction = Callable[[str, bool, BaseModel], float]
"""A component: (response, whether the verdict was correct, its parameters) -> value."""


@dataclass(frozen=True)
class Kind:
    """One component kind: its parameters' model and its function."""

    params: type[BaseModel]
    value: ComponentFunction


def _cosine(response: str, correct: bool, params: BaseModel) -> float:
    assert isinstance(params, CosineParams)
    return cosine_scaled(len(response), correct, **params.model_dump())


def _overlong(response: str, correct: bool, params: BaseModel) -> float:
    assert isinstance(params, OverlongParams)
    return soft_overlong(len(response), **params.model_dump())


def _repetition(response: str, correct: bool, params: BaseModel) -> float:
    assert isinstance(params, RepetitionParams)
    return repetition_penalty(response, **params.model_dump())


KINDS: dict[str, Kind] = {
    "think_answer_format": Kind(NoParams, lambda response, _c, _p: think_answer_format(response)),
    "tag_count": Kind(NoParams, lambda response, _c, _p: tag_count(response)),
    "cosine_length": Kind(CosineParams, _cosine),
    "soft_overlong": Kind(OverlongParams, _overlong),
    "repetition": Kind(RepetitionParams, _repetition),
}
"""The component kinds a composite's settings name."""
