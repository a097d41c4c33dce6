"""What the judge scorers do on the event loop with an answer or a judge's reply (finding the
final answer, reading the verdict) costs time linear in its size, whatever its shape."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from reward_service.scorers.llm_judge.judge_prompt import final_answer, read_verdict
from tests.scorers.math_verify.test_screen_cost import GROWTH, _assert_linear, _units

REPLIES: dict[str, Callable[[int], str]] = {
    "spaces_after_verdict": lambda n: "VERDICT:" + " " * n + "x",
    "stars_and_spaces": lambda n: "VERDICT:" + " " * n + "*" * n + " " * n + "x",
    "many_verdicts": lambda n: "VERDICT: CORRECT " * n,
    "think_markers": lambda n: "</think>" * n + "VERDICT: CORRECT",
}
RESPONSES: dict[str, Callable[[int], str]] = {
    "think_markers": lambda n: "</think>" * n + "42",
    "open_think": lambda n: "<think>" + "a " * n,
    "whitespace": lambda n: " " * n + "42" + " " * n,
}


@pytest.mark.parametrize("family", REPLIES)
def test_reading_a_verdict_is_linear(family: str) -> None:
    """`read_verdict` costs time linear in the judge's reply."""
    build = REPLIES[family]
    n = _units(build)
    small, large = build(n), build(GROWTH * n)
    _assert_linear(lambda: read_verdict(small), lambda: read_verdict(large))


@pytest.mark.parametrize("family", RESPONSES)
def test_finding_the_final_answer_is_linear(family: str) -> None:
    """`final_answer` costs time linear in the response."""
    build = RESPONSES[family]
    n = _units(build)
    small, large = build(n), build(GROWTH * n)
    _assert_linear(lambda: final_answer(small, 4000), lambda: final_answer(large, 4000))
