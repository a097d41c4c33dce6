"""The default scorer: HuggingFace math_verify, configured for RL rewards.

Extraction config, and why:

* Answer: `\\boxed{}` first (`boxed_match_priority=0`), then LaTeX or plain
  expressions only after an anchor such as "final answer is" or "Answer:"
  (`try_extract_without_anchor=False`). A truncated chain of thought whose
  last line happens to hold the gold number earns nothing: rewarding it
  teaches the policy to stop mid-thought.
* `extraction_mode="first_match"`: only the last box (or last anchored
  answer) counts; math_verify does not fall back to earlier numbers in the
  reasoning, which would reward answers the model did not commit to.
* Gold: wrapped in `\\boxed{}` unless already boxed (a bare `\\sqrt{2}`
  parses to nothing), parsed with math_verify's default config, cached.
* `verify(gold, answer)` in that order: the comparison is not symmetric.

math_verify's own timeouts (`signal.alarm`, whole seconds) stay on: workers
run this on their main thread. It reports a timeout only by logging, so a
log handler turns that into the `timeout` status.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from functools import lru_cache
from typing import Any

from reward_service.scorers.base import JSON, GradingLimits, Score, Scorer, Status
from reward_service.scorers.hazards import answer_region, find_hazard


class _TimeoutFlag(logging.Handler):
    """Notices math_verify's 'Timeout during ...' warnings."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.fired = False

    def emit(self, record: logging.LogRecord) -> None:
        if record.getMessage().startswith("Timeout"):
            self.fired = True


def gold_texts(label: JSON) -> list[str] | str:
    """The gold answers a label holds, or the reason it holds none."""
    if label is None:
        return "label is null"
    if isinstance(label, bool):
        return "label is a boolean"
    if isinstance(label, int):
        return [str(label)]
    if isinstance(label, float):
        return [str(int(label)) if label.is_integer() else repr(label)]
    if isinstance(label, str):
        return [label.strip()] if label.strip() else "label is empty"
    if isinstance(label, list):
        usable = [texts for texts in map(gold_texts, label) if isinstance(texts, list)]
        return [text for texts in usable for text in texts] or "label list holds no answer"
    return f"label of type {type(label).__name__} holds no answer"


def boxed(text: str) -> str:
    """`text` wrapped in `\\boxed{}` unless it already holds a box."""
    return text if "\\boxed" in text or "\\fbox" in text else f"\\boxed{{{text}}}"


class MathVerifyScorer(Scorer):
    """1.0 when math_verify finds the boxed answer equal to the gold, else 0.0."""

    name = "math_verify"

    def __init__(self, limits: GradingLimits | None = None) -> None:
        super().__init__(limits)
        from math_verify import ExprExtractionConfig, LatexExtractionConfig, parse, verify

        self._parse = parse
        self._verify = verify
        self._answer_config = (
            LatexExtractionConfig(boxed_match_priority=0, try_extract_without_anchor=False),
            ExprExtractionConfig(try_extract_without_anchor=False),
        )
        self._gold_config = (LatexExtractionConfig(), ExprExtractionConfig())
        self._timeouts = _TimeoutFlag()
        logging.getLogger("math_verify").addHandler(self._timeouts)
        self._parse_gold = lru_cache(maxsize=self.limits.cache_size)(self._parse_gold_uncached)

    def _parse_gold_uncached(self, text: str) -> list[Any]:
        return list(
            self._parse(
                boxed(text),
                self._gold_config,
                extraction_mode="first_match",
                parsing_timeout=self.limits.timeout_s,
            )
        )

    @classmethod
    def screen(cls, response: str, label: JSON) -> Score | None:
        hazard = find_hazard(answer_region(response))
        return Score.no_answer(f"rejected: {hazard}") if hazard else None

    def score(self, prompt: JSON, response: str, label: JSON, options: Mapping[str, JSON]) -> Score:
        golds = gold_texts(label)
        if isinstance(golds, str):
            return Score.error(golds)
        self._timeouts.fired = False
        gold = [parsed for text in golds for parsed in self._parse_gold(text)]
        if not gold:
            return self._unreadable("gold label could not be parsed", gold=golds[0])
        answer = self._parse(
            response,
            self._answer_config,
            extraction_mode="first_match",
            parsing_timeout=self.limits.timeout_s,
        )
        if not answer:
            return self._unreadable("no answer found", reward_if_read=True)
        correct = self._verify(gold, answer, timeout_seconds=self.limits.timeout_s)
        pred = str(answer[-1])[:200]
        if not correct and self._timeouts.fired:
            return Score(0.0, Status.TIMEOUT, {"reason": "math_verify timed out", "pred": pred})
        return Score.verdict(bool(correct), pred=pred)

    def _unreadable(self, reason: str, reward_if_read: bool = False, **details: JSON) -> Score:
        if self._timeouts.fired:
            return Score(0.0, Status.TIMEOUT, {"reason": "math_verify timed out", **details})
        if reward_if_read:
            return Score.no_answer(reason, **details)
        return Score.error(reason, **details)
