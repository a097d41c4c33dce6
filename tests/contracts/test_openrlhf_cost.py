"""Finding the response in an OpenRLHF query runs on the event loop: its cost is linear."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from reward_service.contracts.openrlhf import read_openrlhf, response_start
from tests.scorers.math_verify.test_screen_cost import GROWTH, TARGET_CHARS, _assert_linear, _units

PAIRS: dict[str, Callable[[int], tuple[str, str]]] = {
    "exact": lambda n: ("Solve \\boxed{7}. " * n, "Solve \\boxed{7}. " * n + "12"),
    "extra_spaces": lambda n: ("Solve \\boxed{7}. " * n, "Solve  \\boxed{7}.  " * n + "12"),
    "dropped_spaces": lambda n: ("a . " * n, "a." * n + "12"),
    "skipped_specials": lambda n: (
        "<|im_start|>user\nhi<|im_end|>\n" * n + "<|im_start|>assistant\n",
        "user\nhi\n" * n + "assistant\n12",
    ),
    "left_pads": lambda n: ("question " * n, "<|endoftext|>" * n + "question " * n + "12"),
    "late_mismatch": lambda n: ("a " * n + "b", "a  " * n + "c"),
    "early_mismatch": lambda n: ("b " + "a " * n, "c " + "a  " * n),
    "one_run_query": lambda n: ("a " * n, "a" * n + "12"),
    "one_run_prompt": lambda n: ("a" * n + "!", " a" * n + " !12"),
    "near_markup": lambda n: (("<|" + "a" * 60 + " ") * n, ("<|" + "a" * 60 + "\n") * n + "12"),
    "unclosed_tags": lambda n: ("<a" * n + " x", "<a" * n + "  x 12"),
    "markup_tail": lambda n: ("q" + "<|im_end|>" * n, "<s>q" + "<|im_end|> " * n + "12"),
    "skipped_tail": lambda n: ("q" + "<|im_end|>" * n, "<s>q" + " " * n + "12"),
    "space_tail": lambda n: ("q" + " " * n, "<s>q" + " " * n + "12"),
    "whitespace_flood": lambda n: (" " * n + "x", "\t" * n + "x 12"),
}
"""Prompt and decoded query shapes, each a function of its size in repeated units."""


@pytest.mark.parametrize("family", PAIRS)
def test_response_search_cost_is_linear(family: str) -> None:
    """`response_start` costs time linear in the prompt and query, whatever their shape."""
    build = PAIRS[family]
    n = _units(lambda units: "".join(build(units)))
    small, large = build(n), build(GROWTH * n)
    _assert_linear(lambda: response_start(*small), lambda: response_start(*large))


def _body(queries: int) -> dict[str, Any]:
    prompt = "<|im_start|>user\nWhat is 5 + 7?<|im_end|>\n<|im_start|>assistant\n"
    decoded = prompt.replace("<|im_start|>", "").replace("<|im_end|>", "")
    return {
        "query": [decoded + "so \\boxed{12}"] * queries,
        "prompts": [prompt] * queries,
        "labels": ["12"] * queries,
    }


def test_body_reading_cost_is_linear_in_queries() -> None:
    """Reading a `/get_reward` body costs time linear in its number of queries."""
    n = TARGET_CHARS // 10  # 400 queries: fewer fit in a CPU cache that 10x as many overflow
    small, large = _body(n), _body(GROWTH * n)
    _assert_linear(lambda: read_openrlhf(small), lambda: read_openrlhf(large))
