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

Speed, with the verdict unchanged (see `math_verify_answer` for the proof):

* path `inline`: a final `\\boxed{<integer>}` (or `$\\boxed{<integer>}$`)
  graded against integer golds is settled by `screen` in the server
  process, with no worker round trip (`math_verify_inline`);
* path `region`: when the deciding box can be pinned down cheaply, only
  `\\boxed{<content>}` is parsed, not the whole chain of thought;
* path `fast`: plain numbers in that box (and in simple gold labels) are read
  straight into math_verify's sympy values; two plain integers are compared
  without sympy at all;
* path `full`: anything else goes through math_verify whole, as before;
* gold parses per label and verdicts per (gold texts, normalised answer) sit
  in caches of `limits.cache_size` entries each, so the interleaved answers
  of many groups still hit. `Score.details` says which path settled an
  answer and whether the verdict came from the cache; `stats` counts both.
"""

from __future__ import annotations

import logging
import re
from collections import OrderedDict
from collections.abc import Hashable, Mapping
from dataclasses import asdict, dataclass
from typing import Any, ClassVar, Generic, TypeVar

from reward_service.scorers import math_verify_inline
from reward_service.scorers.base import JSON, GradingLimits, Score, Scorer, Status
from reward_service.scorers.hazards import answer_region, find_hazard
from reward_service.scorers.labels import boxed, gold_texts

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")

_CACHEABLE_CHARS = 2000
"""Longer labels and answers are graded but not cached: the caches bound entries, not bytes."""

_PLAIN_GOLD = re.compile(r"[0-9+\-.,/%\\{} acdfrt]+")
"""Gold texts that cannot hold an extraction anchor, so their box alone decides."""


class _TimeoutFlag(logging.Handler):
    """Notices math_verify's 'Timeout during ...' warnings."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.fired = False

    def emit(self, record: logging.LogRecord) -> None:
        if record.getMessage().startswith("Timeout"):
            self.fired = True


class _BoundedCache(Generic[K, V]):
    """A least-recently-used map holding at most `size` entries."""

    def __init__(self, size: int) -> None:
        self._size = size
        self._entries: OrderedDict[K, V] = OrderedDict()

    def get(self, key: K) -> V | None:
        value = self._entries.get(key)
        if value is not None:
            self._entries.move_to_end(key)
        return value

    def put(self, key: K, value: V) -> None:
        if self._size <= 0:
            return
        self._entries[key] = value
        self._entries.move_to_end(key)
        if len(self._entries) > self._size:
            self._entries.popitem(last=False)

    def __len__(self) -> int:
        return len(self._entries)


@dataclass
class GradingStats:
    """How a scorer's answers were settled, for callers to read.

    `fast`, `region` and `full` count the answers graded along each path;
    an answer whose verdict came from the cache counts in `verdict_hits`
    instead, so the five answer counters add up to the answers graded.
    """

    fast: int = 0
    region: int = 0
    full: int = 0
    verdict_hits: int = 0
    verdict_misses: int = 0
    gold_hits: int = 0
    gold_misses: int = 0

    def as_dict(self) -> dict[str, int]:
        """The counters as a JSON-ready mapping."""
        return asdict(self)


@dataclass(frozen=True)
class _Gold:
    """A gold text parsed as math_verify parses it."""

    parsed: list[Any]
    integer: int | None = None
    """Its value when it is a plain integer read on the fast path."""


@dataclass(frozen=True)
class _Verdict:
    correct: bool
    path: str


class MathVerifyScorer(Scorer):
    """1.0 when math_verify finds the boxed answer equal to the gold, else 0.0."""

    name = "math_verify"
    inline_integers: ClassVar[bool] = True
    """`screen` settles bare-integer answers itself. `math_verify_inline`
    proves those verdicts for this class's extraction config only: a
    subclass that changes the config must set this False."""

    def __init__(self, limits: GradingLimits | None = None) -> None:
        super().__init__(limits)
        from math_verify import ExprExtractionConfig, LatexExtractionConfig, parse, verify
        from math_verify.errors import TimeoutException
        from math_verify.utils import timeout

        from reward_service.scorers import math_verify_answer

        self._answer = math_verify_answer
        self._parse = parse
        self._verify = verify
        self._timeout_error = TimeoutException
        self._read_answer = timeout(self.limits.timeout_s)(self._read_answer_untimed)
        self._answer_config = (math_verify_answer.ANSWER_LATEX, math_verify_answer.ANSWER_EXPR)
        self._gold_config = (LatexExtractionConfig(), ExprExtractionConfig())
        self._timeouts = _TimeoutFlag()
        logging.getLogger("math_verify").addHandler(self._timeouts)
        self._golds: _BoundedCache[str, _Gold] = _BoundedCache(self.limits.cache_size)
        self._verdicts: _BoundedCache[tuple[tuple[str, ...], str], _Verdict] = _BoundedCache(
            self.limits.cache_size
        )
        self.stats = GradingStats()

    @classmethod
    def screen(cls, response: str, label: JSON) -> Score | None:
        settled = math_verify_inline.settle(response, label) if cls.inline_integers else None
        if settled is not None:
            return settled
        hazard = find_hazard(answer_region(response))
        return Score.no_answer(f"rejected: {hazard}") if hazard else None

    def score(self, prompt: JSON, response: str, label: JSON, options: Mapping[str, JSON]) -> Score:
        texts = gold_texts(label)
        if isinstance(texts, str):
            return Score.error(texts)
        self._timeouts.fired = False
        golds = [self._gold(text) for text in texts]
        gold = [parsed for entry in golds for parsed in entry.parsed]
        if not gold:
            return self._unreadable("gold label could not be parsed", gold=texts[0])
        try:
            found = self._read_answer(response)
        except self._timeout_error:
            return self._timed_out(path="region")
        if found is None:
            return self._grade_full(gold, response)
        content, latex = found
        key = (tuple(texts), latex)
        cached = self._verdicts.get(key)
        if cached is not None:
            self.stats.verdict_hits += 1
            return Score.verdict(cached.correct, pred=latex[:200], path=cached.path, cache="hit")
        self.stats.verdict_misses += 1
        return self._grade_region(golds, gold, content, latex, key)

    def _gold(self, text: str) -> _Gold:
        entry = self._golds.get(text)
        if entry is not None:
            self.stats.gold_hits += 1
            return entry
        self.stats.gold_misses += 1
        entry = self._read_plain_gold(text) or _Gold(
            list(
                self._parse(
                    boxed(text),
                    self._gold_config,
                    extraction_mode="first_match",
                    parsing_timeout=self.limits.timeout_s,
                )
            )
        )
        if not self._timeouts.fired and len(text) <= _CACHEABLE_CHARS:
            self._golds.put(text, entry)
        return entry

    def _read_answer_untimed(self, response: str) -> tuple[str, str] | None:
        """The deciding box content of `response` and its normalised LaTeX, if provable."""
        content = self._answer.final_box(response)
        return None if content is None else (content, self._answer.normalized(content))

    def _read_plain_gold(self, text: str) -> _Gold | None:
        """A plain-number gold read without antlr; its box is the only match there is."""
        if not _PLAIN_GOLD.fullmatch(text):
            return None
        try:
            found = self._read_answer(boxed(text))
        except self._timeout_error:
            return None
        if found is None:
            return None
        latex = found[1]
        value = self._answer.exact_value(latex)
        if value is None:
            return None
        return _Gold([value, latex], self._answer.plain_integer(latex))

    def _grade_region(
        self,
        golds: list[_Gold],
        gold: list[Any],
        content: str,
        latex: str,
        key: tuple[tuple[str, ...], str],
    ) -> Score:
        integer = self._answer.plain_integer(latex)
        if integer is not None and all(entry.integer is not None for entry in golds):
            self.stats.fast += 1
            return self._settle(key, any(entry.integer == integer for entry in golds), "fast")
        value = self._answer.exact_value(latex)
        if value is not None:
            self.stats.fast += 1
            path, answer = "fast", [value, latex]
        else:
            self.stats.region += 1
            path = "region"
            answer = self._parse(
                self._answer.region(content),
                self._answer_config,
                extraction_mode="first_match",
                parsing_timeout=self.limits.timeout_s,
            )
        if not answer:
            return self._unreadable("no answer found", reward_if_read=True, path=path)
        correct = bool(self._verify(gold, answer, timeout_seconds=self.limits.timeout_s))
        return self._settle(key, correct, path)

    def _settle(self, key: tuple[tuple[str, ...], str], correct: bool, path: str) -> Score:
        """The verdict on a region answer, cached unless a timeout may have caused it."""
        latex = key[1]
        if not correct and self._timeouts.fired:
            return self._timed_out(pred=latex[:200], path=path)
        if sum(map(len, key[0])) + len(latex) <= _CACHEABLE_CHARS:
            self._verdicts.put(key, _Verdict(correct, path))
        return Score.verdict(correct, pred=latex[:200], path=path, cache="miss")

    def _grade_full(self, gold: list[Any], response: str) -> Score:
        self.stats.full += 1
        answer = self._parse(
            response,
            self._answer_config,
            extraction_mode="first_match",
            parsing_timeout=self.limits.timeout_s,
        )
        if not answer:
            return self._unreadable("no answer found", reward_if_read=True, path="full")
        correct = self._verify(gold, answer, timeout_seconds=self.limits.timeout_s)
        pred = str(answer[-1])[:200]
        if not correct and self._timeouts.fired:
            return self._timed_out(pred=pred, path="full")
        return Score.verdict(bool(correct), pred=pred, path="full")

    def _timed_out(self, **details: JSON) -> Score:
        return Score(0.0, Status.TIMEOUT, {"reason": "math_verify timed out", **details})

    def _unreadable(self, reason: str, reward_if_read: bool = False, **details: JSON) -> Score:
        if self._timeouts.fired:
            return self._timed_out(**details)
        if reward_if_read:
            return Score.no_answer(reason, **details)
        return Score.error(reason, **details)
