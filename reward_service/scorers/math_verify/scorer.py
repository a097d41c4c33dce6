"""The default scorer: HuggingFace math_verify, configured for RL rewards.

Option `extraction` picks how the answer is found in the response:

* `final` (the default): the committed final answer, as open-r1 and TRL
  read it; the config below.
* `any`: exactly `math_verify.parse(response)` with math_verify's own
  defaults (`LatexExtractionConfig()`, `ExprExtractionConfig()`,
  `extraction_mode="any_match"`), as verl's math_verify reward and most
  evaluation scripts call it: a bare `-5`, `$(3,2)$` or `$$f(y) = y$$`
  counts, and so does the last number of a truncated chain of thought.
  The gold and `verify` are as in `final`.

Either mode reads only the answer region (option `think`, `scorers.reasoning`):
by default what follows the one `</think>`, and a reasoning block that never
closed or closed twice is `no_answer`. math_verify itself parses the whole
response (`think=keep`).

An `extraction` value other than these two (from a label object, which is
not validated before grading) grades as status `error`; the detail answer
says which mode graded (`"extraction"`).

Extraction config of `final`, and why:

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
run this on their main thread. `parse` and `verify` are called with
`raise_on_error=True`, so a timeout arrives as math_verify's
`TimeoutException` and becomes the `timeout` status, whatever the logging
configuration or start method; other errors keep math_verify's default
meaning (nothing parsed, not equal).

Speed in `final`, with the verdict unchanged (see `extract` for the proof):

* path `inline`: a final `\\boxed{<integer>}` (or `$\\boxed{<integer>}$`)
  graded against integer golds is settled by `screen` in the server
  process, with no worker round trip (`inline`);
* path `region`: when the deciding box can be pinned down cheaply, only
  `\\boxed{<content>}` is parsed, not the whole chain of thought;
* path `fast`: plain numbers and intervals between two integers in that box
  (and in simple gold labels) are read straight into math_verify's sympy
  values; two plain integers are compared without sympy at all;
* path `full`: anything else goes through math_verify whole, as before;
* gold parses per label and verdicts per (mode, gold texts, normalised
  answer) sit in caches of `limits.cache_size` entries each, so the
  interleaved answers of many groups still hit. `Score.details` says which
  path settled an answer and whether the verdict came from the cache;
  `stats` counts both;
* equivalent answers share one `verify`: `verify(gold, answer)` is the OR,
  over gold x answer pairs, of `sympy_expr_eq` on two sympy values (a
  function of their trees, which `srepr` spells out) and of string equality
  on two strings (stripped, not empty); a value paired with a string is
  False. So an answer, once parsed (fast or region), is correct when one of
  its strings is one of the gold's, and otherwise gets the verdict of any
  earlier answer to the same gold texts whose sympy values have the same
  `srepr` (`_by_value`), whatever its text: `\\frac{6}{8}` and `\\frac{3}{4}`,
  `\\pi/3` and `\\frac{\\pi}{3}`, `[1,2)` and `[1, 2)`. Values sympy builds
  apart keep apart: `\\sqrt{12}` and `2\\sqrt{3}`, `0.75` (a Float) and
  `\\frac{3}{4}`, each graded on its own.

`any` has none of these proofs, so it takes none of the shortcuts: no
inline settling and no hazard screen in the server (math_verify's timeouts
and the engine's deadline bound a hazardous answer), and the whole
response is parsed (path `full`). Its verdicts are cached per (mode, gold
texts, response) for responses short enough to cache: `parse` and `verify`
are deterministic, and a verdict a timeout may have caused is never
cached. Gold parses do not depend on the mode, so both modes share them.
"""

from __future__ import annotations

import itertools
import re
from collections import OrderedDict
from collections.abc import Hashable, Mapping
from dataclasses import asdict, dataclass
from typing import Any, ClassVar, Generic, TypeVar

from reward_service.scorers.base import (
    JSON,
    NO_OPTIONS,
    GradingLimits,
    Score,
    Scorer,
    Status,
    echo,
)
from reward_service.scorers.labels import boxed, gold_texts
from reward_service.scorers.math_verify import inline
from reward_service.scorers.math_verify.hazards import answer_region, find_hazard
from reward_service.scorers.reasoning import THINK_MODES, Unanswered, final_answer

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")

_CACHEABLE_CHARS = 2000
"""Longer labels and answers are graded but not cached: the caches bound entries, not bytes."""

FINAL = "final"
ANY = "any"
EXTRACTION_MODES = frozenset({FINAL, ANY})

_PLAIN_GOLD = re.compile(r"[0-9+\-.,/%\\{} acdfrt]+|[\[(][0-9\- ,]+[\])]")
"""Gold texts that cannot hold an extraction anchor, so their box alone decides: plain
numbers and intervals between integers (no backslash, so no `\\(` or `\\[` environment)."""


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
    value_hits: int = 0
    """Answers of `fast` or `region` whose verdict came from an answer of equal values."""
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
    pred: str


_VerdictKey = tuple[str, tuple[str, ...], str]
"""(extraction mode, gold texts, normalised answer in `final` or the response in `any`)."""
_ValueKey = tuple[tuple[str, ...], tuple[str, ...]]
"""(gold texts, `srepr` of each sympy value of a parsed answer)."""


_WARM_UP: tuple[tuple[str, str, Mapping[str, JSON]], ...] = (
    ("so $\\boxed{\\frac{3}{4}}$.", "0.75", NO_OPTIONS),
    ("so $\\boxed{2\\sqrt{3}}$.", "\\sqrt{12}", NO_OPTIONS),
    ("so $\\boxed{3\\sqrt{2}}$.", "\\sqrt{12}", NO_OPTIONS),
    ("so $\\boxed{[1, 3)}$.", "[1,3)", NO_OPTIONS),
    ("so $\\boxed{\\frac{\\pi}{3}}$.", "\\pi/3", NO_OPTIONS),
    ("so $\\boxed{3\\pi}$.", "\\pi/3", NO_OPTIONS),
    ("The final answer is $x^2 + 1$.", "x^2+1", NO_OPTIONS),
    ("so $\\boxed{\\frac{1}{2}}$ or 0.5", "1/2", {"extraction": "any"}),
)
"""Answers that take each of the scorer's paths (fast, region, full; `any`) once, and a
wrong radical and multiple of pi: a first unequal symbolic pair costs ~0.15 s of sympy's
lazy set-up, which would otherwise land on a worker's first real answers."""


def extraction_mode(options: Mapping[str, JSON]) -> str | None:
    """The `extraction` option's mode (default `final`), or None when it names no mode."""
    mode = options.get("extraction", FINAL)
    return mode if isinstance(mode, str) and mode in EXTRACTION_MODES else None


def _invalid_mode(options: Mapping[str, JSON]) -> Score:
    asked = echo(options.get("extraction"))
    valid = ", ".join(sorted(EXTRACTION_MODES))
    return Score.error(f"option 'extraction' takes one of {valid}, not {asked}")


class MathVerifyScorer(Scorer):
    """1.0 when math_verify finds the boxed answer equal to the gold, else 0.0."""

    name = "math_verify"
    correct_is_label = True
    grades_groups_together = True
    options: ClassVar[Mapping[str, frozenset[str] | None]] = {
        "extraction": EXTRACTION_MODES,
        "think": THINK_MODES,
    }
    preload: ClassVar[tuple[str, ...]] = ("reward_service.scorers.math_verify.warm_up",)
    inline_integers: ClassVar[bool] = True
    """`screen` settles bare-integer answers itself. `inline`
    proves those verdicts for this class's extraction config only: a
    subclass that changes the config must set this False."""

    def __init__(self, limits: GradingLimits | None = None) -> None:
        super().__init__(limits)
        from math_verify import ExprExtractionConfig, LatexExtractionConfig, parse, verify
        from math_verify.errors import TimeoutException
        from math_verify.utils import timeout

        from reward_service.scorers.math_verify import extract, values

        self._extract = extract
        self._values = values
        self._parse = parse
        self._verify = verify
        self._timeout_error = TimeoutException
        self._read_answer = timeout(self.limits.timeout_s)(self._read_answer_untimed)
        self._answer_config = (extract.ANSWER_LATEX, extract.ANSWER_EXPR)
        self._default_config = (LatexExtractionConfig(), ExprExtractionConfig())
        """math_verify's own: `parse`'s default, used for golds and for `any` answers."""
        self._timed_out = False
        """Whether math_verify timed out during the answer being graded."""
        self._golds: _BoundedCache[str, _Gold] = _BoundedCache(self.limits.cache_size)
        self._verdicts: _BoundedCache[_VerdictKey, _Verdict] = _BoundedCache(self.limits.cache_size)
        self._by_value: _BoundedCache[_ValueKey, bool] = _BoundedCache(self.limits.cache_size)
        self.stats = GradingStats()

    def warm(self) -> None:
        """Grade `_WARM_UP` (each grading path, both extraction modes), then forget it:
        the first region parse in a process pays ~0.2-0.3 s of math_verify's and sympy's
        lazy set-up, which would otherwise land on a worker's first real answers. The
        forkserver has done it once already (`warm_up`, preloaded), so in a worker this
        costs ~0.02 s."""
        for response, label, options in _WARM_UP:
            self.score(None, response, label, options)
        self._golds = _BoundedCache(self.limits.cache_size)
        self._verdicts = _BoundedCache(self.limits.cache_size)
        self._by_value = _BoundedCache(self.limits.cache_size)
        self.stats = GradingStats()

    @classmethod
    def screen(
        cls, response: str, label: JSON, options: Mapping[str, JSON] = NO_OPTIONS
    ) -> Score | None:
        mode = extraction_mode(options)
        if mode is None:
            return _invalid_mode(options)
        answer = final_answer(response, options)
        if isinstance(answer, Unanswered):
            return answer.score(extraction=mode)
        if mode == ANY:
            return None
        settled = inline.settle(answer, label) if cls.inline_integers else None
        if settled is not None:
            return settled
        hazard = find_hazard(answer_region(answer))
        return Score.no_answer(f"rejected: {hazard}", extraction=FINAL) if hazard else None

    def score(self, prompt: JSON, response: str, label: JSON, options: Mapping[str, JSON]) -> Score:
        mode = extraction_mode(options)
        if mode is None:
            return _invalid_mode(options)
        answer = final_answer(response, options)
        if isinstance(answer, Unanswered):
            return answer.score(extraction=mode)
        texts = gold_texts(label)
        if isinstance(texts, str):
            return Score.error(texts, extraction=mode)
        self._timed_out = False
        golds = [self._gold(text) for text in texts]
        gold = [parsed for entry in golds for parsed in entry.parsed]
        if not gold:
            score = self._unreadable("gold label could not be parsed", gold=texts[0])
        elif mode == ANY:
            score = self._score_any(gold, tuple(texts), answer)
        else:
            score = self._score_final(golds, gold, tuple(texts), answer)
        return Score(score.reward, score.status, {**score.details, "extraction": mode})

    def _score_final(
        self, golds: list[_Gold], gold: list[Any], texts: tuple[str, ...], response: str
    ) -> Score:
        try:
            found = self._read_answer(response)
        except self._timeout_error:
            return self._timed_out_score(path="region")
        if found is None:
            return self._grade_full(gold, response, FINAL)
        content, latex = found
        key = (FINAL, texts, latex)
        cached = self._cached(key)
        if cached is not None:
            return cached
        return self._grade_region(golds, gold, content, latex, key)

    def _score_any(self, gold: list[Any], texts: tuple[str, ...], response: str) -> Score:
        key = (ANY, texts, response)
        cached = self._cached(key)
        if cached is not None:
            return cached
        score = self._grade_full(gold, response, ANY)
        if score.status not in (Status.OK, Status.WRONG):
            return score
        self._remember(key, _Verdict(score.status is Status.OK, "full", score.details["pred"]))
        return Score(score.reward, score.status, {**score.details, "cache": "miss"})

    def _cached(self, key: _VerdictKey) -> Score | None:
        """The cached verdict for `key`, counted as a hit or a miss."""
        cached = self._verdicts.get(key)
        if cached is None:
            self.stats.verdict_misses += 1
            return None
        self.stats.verdict_hits += 1
        return Score.verdict(cached.correct, pred=cached.pred, path=cached.path, cache="hit")

    def _remember(self, key: _VerdictKey, verdict: _Verdict) -> None:
        """Cache a verdict unless its key is too long to be worth the memory."""
        if sum(map(len, key[1])) + len(key[2]) <= _CACHEABLE_CHARS:
            self._verdicts.put(key, verdict)

    def _gold(self, text: str) -> _Gold:
        entry = self._golds.get(text)
        if entry is not None:
            self.stats.gold_hits += 1
            return entry
        self.stats.gold_misses += 1
        entry = self._read_plain_gold(text) or _Gold(
            self._parsed(boxed(text), self._default_config)
        )
        if not self._timed_out and len(text) <= _CACHEABLE_CHARS:
            self._golds.put(text, entry)
        return entry

    def _read_answer_untimed(self, response: str) -> tuple[str, str] | None:
        """The deciding box content of `response` and its normalised LaTeX, if provable."""
        content = self._extract.final_box(response)
        return None if content is None else (content, self._extract.normalized(content))

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
        value = self._values.exact_value(latex)
        if value is None:
            return None
        return _Gold([value, latex], self._values.plain_integer(latex))

    def _grade_region(
        self,
        golds: list[_Gold],
        gold: list[Any],
        content: str,
        latex: str,
        key: _VerdictKey,
    ) -> Score:
        integer = self._values.plain_integer(latex)
        if integer is not None and all(entry.integer is not None for entry in golds):
            self.stats.fast += 1
            return self._settle(key, any(entry.integer == integer for entry in golds), "fast")
        value = self._values.exact_value(latex)
        if value is not None:
            self.stats.fast += 1
            path, answer = "fast", [value, latex]
        else:
            self.stats.region += 1
            path = "region"
            answer = self._parsed(self._extract.region(content), self._answer_config, "first_match")
        if not answer:
            return self._unreadable("no answer found", reward_if_read=True, path=path)
        if _strings_match(gold, answer):
            return self._settle(key, True, path)
        value_key = _value_key(key[1], answer) if len(latex) <= _CACHEABLE_CHARS else None
        shared = self._by_value.get(value_key) if value_key is not None else None
        if shared is not None:
            self.stats.value_hits += 1
            self._remember(key, _Verdict(shared, path, key[2][:200]))
            return Score.verdict(shared, pred=key[2][:200], path=path, cache="hit")
        correct = self._equal(gold, answer)
        return self._settle(key, correct, path, value_key)

    def _settle(
        self, key: _VerdictKey, correct: bool, path: str, value_key: _ValueKey | None = None
    ) -> Score:
        """The verdict on a region answer, cached (also under its value key) unless a
        timeout may have caused it."""
        pred = key[2][:200]
        if not correct and self._timed_out:
            return self._timed_out_score(pred=pred, path=path)
        self._remember(key, _Verdict(correct, path, pred))
        if value_key is not None:
            self._by_value.put(value_key, correct)
        return Score.verdict(correct, pred=pred, path=path, cache="miss")

    def _grade_full(self, gold: list[Any], response: str, mode: str) -> Score:
        """The verdict on the whole response, read as `mode` reads it."""
        self.stats.full += 1
        if mode == ANY:
            answer = self._parsed(response, self._default_config, "any_match")
        else:
            answer = self._parsed(response, self._answer_config, "first_match")
        if not answer:
            return self._unreadable("no answer found", reward_if_read=True, path="full")
        correct = self._equal(gold, answer)
        pred = str(answer[-1])[:200]
        if not correct and self._timed_out:
            return self._timed_out_score(pred=pred, path="full")
        return Score.verdict(bool(correct), pred=pred, path="full")

    def _parsed(
        self, text: str, config: tuple[Any, ...], extraction: str = "first_match"
    ) -> list[Any]:
        """math_verify's `parse(text)`; a timeout is noted and parses to nothing."""
        try:
            return list(
                self._parse(
                    text,
                    config,
                    extraction_mode=extraction,
                    parsing_timeout=self.limits.timeout_s,
                    raise_on_error=True,
                )
            )
        except self._timeout_error:
            self._timed_out = True
        except Exception as exc:  # math_verify's default: what fails to parse parses to nothing
            _reraise_thread_misuse(exc)
        return []

    def _equal(self, gold: list[Any], answer: list[Any]) -> bool:
        """math_verify's `verify(gold, answer)`, pair by pair, so a timeout is noted, not logged."""
        for expected, found in itertools.product(gold, answer):
            try:
                if self._verify(
                    expected, found, timeout_seconds=self.limits.timeout_s, raise_on_error=True
                ):
                    return True
            except self._timeout_error:
                self._timed_out = True
            except Exception as exc:  # math_verify's default: a pair that fails is not equal
                _reraise_thread_misuse(exc)
        return False

    def _timed_out_score(self, **details: JSON) -> Score:
        return Score(0.0, Status.TIMEOUT, {"reason": "math_verify timed out", **details})

    def _unreadable(self, reason: str, reward_if_read: bool = False, **details: JSON) -> Score:
        if self._timed_out:
            return self._timed_out_score(**details)
        if reward_if_read:
            return Score.no_answer(reason, **details)
        return Score.error(reason, **details)


def _strings_match(gold: list[Any], answer: list[Any]) -> bool:
    """Whether a string of `answer` equals a string of `gold` as `verify` compares them
    (stripped, not empty): then `verify` is True, whatever the values."""
    golds = {g.strip() for g in gold if isinstance(g, str)} - {""}
    return any(isinstance(a, str) and a.strip() in golds for a in answer)


def _value_key(texts: tuple[str, ...], answer: list[Any]) -> _ValueKey:
    """What else `verify(gold, answer)` reads of `answer` (module docstring): its sympy
    values, their trees spelled out by `srepr`."""
    from sympy import srepr

    return texts, tuple(srepr(a) for a in answer if not isinstance(a, str))


def _reraise_thread_misuse(exc: Exception) -> None:
    """math_verify's signal timeouts need the main thread; off it, failing loudly beats 0.0."""
    if isinstance(exc, ValueError) and "threaded environment" in str(exc):
        raise exc
