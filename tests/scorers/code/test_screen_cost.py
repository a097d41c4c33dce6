"""The `code` screen runs in the server: its cost is linear in the response, whatever its shape."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from reward_service.scorers.code.scorer import CodeScorer
from tests.scorers.math_verify.test_screen_cost import GROWTH, _assert_linear, _units

TEXTS: dict[str, Callable[[int], str]] = {
    "backtick_run": lambda n: "`" * n,
    "backtick_line_runs": lambda n: "```" * n + "\n",
    "open_fences": lambda n: "```python\n" * n,
    "closed_blocks": lambda n: "```python\nprint(1)\n```\n" * n,
    "fence_then_long_line": lambda n: "```python\n" + "x" * n,
    "other_languages": lambda n: "```text\n1\n```\n" * n,
    "thinks": lambda n: "</think>" * n + "```python\nprint(1)\n```",
    "think_prefixes": lambda n: "</think" * n,
    "indented_fences": lambda n: " " * n + "```python\n" + " " * n + "```",
    "newlines": lambda n: "\n" * n,
}
"""Adversarial response families, each a function of its size in repeated units."""


@pytest.mark.parametrize("family", TEXTS)
def test_code_screen_cost_is_linear(family: str) -> None:
    """`CodeScorer.screen` costs time linear in the response on every adversarial shape."""
    build = TEXTS[family]
    n = _units(build)
    small, large = build(n), build(GROWTH * n)
    _assert_linear(lambda: CodeScorer.screen(small, {}), lambda: CodeScorer.screen(large, {}))


@pytest.mark.parametrize(
    ("response", "settled"),
    [("no code here", True), ("```python\nprint(1)", True), ("```python\nprint(1)\n```", False)],
)
def test_screen_settles_responses_without_a_program(response: str, settled: bool) -> None:
    """The screen answers `no_answer` for a response with no program and lets programs through."""
    score = CodeScorer.screen(response, {})
    assert (score is not None and score.status.value == "no_answer") is settled
