"""Hypothesis on every registered scorer: any prompt, answer and label gives a Score."""

from __future__ import annotations

import asyncio
import math
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reward_service.scorers import GradingLimits, Score, ScorerRegistry
from reward_service.scorers.base import AsyncScorer

pytestmark = pytest.mark.filterwarnings(
    # math_verify times out by SIGALRM; when the alarm lands while hypothesis's own
    # gc-timing callback runs, Python reports it there as "unraisable" and the scorer
    # carries on to its Score, which the test still checks. Only that callback's
    # reports are ignored: any other unraisable exception still fails the test.
    "ignore:Exception ignored in. <function gc_cumulative_time"
    ":pytest.PytestUnraisableExceptionWarning"
)

REGISTRY = ScorerRegistry.discover(GradingLimits(timeout_s=1, cache_size=64))

_MATH = "0123456789+-*/^!.,()[]{}<>=|\\ abcdfrxyz$%"
_JSON: st.SearchStrategy[Any] = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(10**30), 10**30)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=40),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=12), children, max_size=4)
    ),
    max_leaves=12,
)
_LATEX = st.text(alphabet=_MATH, max_size=40) | st.sampled_from(
    ["\\frac{1}{2}", "\\sqrt{2}", "\\pi", "[1, 2)", "x^2+1", "\\infty", "A", "(B)", "1,000"]
)
_RESPONSES = (
    st.text(max_size=300)
    | _LATEX.map(lambda t: f"The answer is $\\boxed{{{t}}}$.")
    | st.tuples(st.text(max_size=200), _LATEX).map(lambda p: f"{p[0]}\nAnswer: {p[1]}")
)
_LABELS = _JSON | _LATEX | st.fixed_dictionaries({"answer": _JSON | _LATEX})


RULE_EXAMPLES = 300
MODEL_EXAMPLES = 25
"""Scorers that batch (`batch_size > 1`) run a model: slower per answer, fewer examples."""


def _check_scorer(name: str, prompt: Any, response: str, label: Any) -> None:
    scorer = REGISTRY.get(name)
    score = REGISTRY.scorer_class(name).screen(response, label) or (
        asyncio.run(scorer.score(prompt, response, label, {}))
        if isinstance(scorer, AsyncScorer)
        else scorer.score(prompt, response, label, {})
    )
    assert isinstance(score, Score)
    assert isinstance(score.reward, float)
    assert math.isfinite(score.reward)


@pytest.mark.parametrize("name", REGISTRY.names())
def test_scorer_grades_any_input_without_raising(name: str) -> None:
    """Screened as the engine screens, the scorer returns a Score with a finite float reward."""
    examples = RULE_EXAMPLES if REGISTRY.scorer_class(name).batch_size == 1 else MODEL_EXAMPLES

    @settings(max_examples=examples, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(prompt=_JSON, response=_RESPONSES, label=_LABELS)
    def check(prompt: Any, response: str, label: Any) -> None:
        _check_scorer(name, prompt, response, label)

    check()
