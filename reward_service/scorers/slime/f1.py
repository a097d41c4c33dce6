"""`f1`: SLIME's `--rm-type f1`, the SQuAD / HotpotQA token F1.

Both texts are lower-cased, stripped of ASCII punctuation and of the
articles a/an/the, and split on whitespace; the reward is the F1 of the
token multisets, in [0, 1]. As in HotpotQA (and SLIME), `yes`, `no` and
`noanswer` must match exactly or score 0. The answer region is compared
(`scorers.reasoning`; SLIME compares the whole response, `think=keep`);
a list label holds alternatives and the best one counts.
"""

from __future__ import annotations

import re
import string
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from typing import ClassVar

from reward_service.scorers.base import JSON, Score, Scorer, Status
from reward_service.scorers.labels import gold_texts
from reward_service.scorers.reasoning import THINK_MODES, Unanswered, final_answer

EXACT_ONLY = frozenset({"yes", "no", "noanswer"})
"""Answers that earn nothing for partial overlap."""

_PUNCTUATION = str.maketrans("", "", string.punctuation)
_ARTICLES = re.compile(r"\b(?:a|an|the)\b")


def normalize_answer(text: str) -> str:
    """SQuAD normalisation: `The Eiffel-Tower!` -> `eiffeltower`."""
    return " ".join(_ARTICLES.sub(" ", text.lower().translate(_PUNCTUATION)).split())


@dataclass(frozen=True)
class TokenF1:
    f1: float
    precision: float
    recall: float


def token_f1(prediction: str, gold: str) -> TokenF1:
    """Token-overlap F1 of two already normalised texts."""
    if prediction != gold and (prediction in EXACT_ONLY or gold in EXACT_ONLY):
        return TokenF1(0.0, 0.0, 0.0)
    predicted, expected = prediction.split(), gold.split()
    same = sum((Counter(predicted) & Counter(expected)).values())
    if same == 0:
        return TokenF1(0.0, 0.0, 0.0)
    precision, recall = same / len(predicted), same / len(expected)
    return TokenF1(2 * precision * recall / (precision + recall), precision, recall)


class F1Scorer(Scorer):
    """The best token F1 of the response against the label's answers, in [0, 1]."""

    name = "f1"
    options: ClassVar[Mapping[str, frozenset[str] | None]] = {"think": THINK_MODES}

    def score(self, prompt: JSON, response: str, label: JSON, options: Mapping[str, JSON]) -> Score:
        texts = gold_texts(label)
        if isinstance(texts, str):
            return Score.error(texts)
        golds = [gold for gold in map(normalize_answer, texts) if gold]
        if not golds:
            return Score.error("label has no words once normalised")
        answer = final_answer(response, options)
        if isinstance(answer, Unanswered):
            return answer.score()
        if not answer.strip():
            return Score.no_answer("empty response")
        prediction = normalize_answer(answer)
        best = max((token_f1(prediction, gold) for gold in golds), key=lambda m: m.f1)
        return Score(
            best.f1,
            Status.OK if best.f1 > 0 else Status.WRONG,
            {"f1": best.f1, "precision": best.precision, "recall": best.recall},
        )
