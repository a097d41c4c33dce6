"""`exact`: the answer region (`scorers.reasoning`) equals the label once whitespace is
normalised."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import ClassVar

from reward_service.scorers.base import JSON, Score, Scorer
from reward_service.scorers.reasoning import THINK_MODES, Unanswered, final_answer


def normalize_whitespace(text: str) -> str:
    """Collapse every run of whitespace to one space and trim the ends."""
    return " ".join(text.split())


def label_text(label: JSON) -> str | None:
    """A label as the text an answer must equal; None when there is none."""
    if label is None:
        return None
    if isinstance(label, str):
        return label
    return json.dumps(label, ensure_ascii=False)


class ExactScorer(Scorer):
    """1.0 when the whole response equals the label (whitespace-normalised), else 0.0."""

    name = "exact"
    correct_is_label = True
    options: ClassVar[Mapping[str, frozenset[str] | None]] = {"think": THINK_MODES}

    def score(self, prompt: JSON, response: str, label: JSON, options: Mapping[str, JSON]) -> Score:
        gold = label_text(label)
        if gold is None:
            return Score.error("label is null")
        region = final_answer(response, options)
        if isinstance(region, Unanswered):
            return region.score()
        answer = normalize_whitespace(region)
        if not answer:
            return Score.no_answer("empty response")
        return Score.verdict(answer == normalize_whitespace(gold))
