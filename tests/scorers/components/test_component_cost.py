"""Every reward component and answer class costs time linear in the response, whatever it holds.

Timed as `tests/scorers/math_verify/test_screen_cost.py` times the screens (CPU time at n
and 10n, best of interleaved repeats): composites may run these on the event loop.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from reward_service.grading.group_facts import answer_class
from reward_service.scorers.components import KINDS
from tests.scorers.math_verify.test_screen_cost import _assert_linear

SHAPES: dict[str, Callable[[int], str]] = {
    "prose": lambda n: "we carry the one " * (n // 17),
    "one_word": lambda n: "a " * (n // 2),
    "counters": lambda n: "1. " * (n // 3),
    "think_opens": lambda n: "<think>\n" * (n // 8),
    "middles": lambda n: "<think>\n" + "\n</think>\n<answer>\n" * (n // 19),
    "answer_closes": lambda n: "<think>\nx\n</think>\n<answer>\n" + "\n</answer>" * (n // 10),
    "formatted": lambda n: "<think>\n" + "x" * n + "\n</think>\n<answer>\n4\n</answer>",
    "no_spaces": lambda n: "x" * n,
    "punctuation": lambda n: "!?" * (n // 2),
}
PARAMS = {"soft_overlong": {"max_length": 100, "buffer": 50}}
CHARS = 4_000


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("kind", KINDS)
def test_component_cost_is_linear(kind: str, shape: str) -> None:
    """Each component kind at 10x the response costs about 10x, not 100x."""
    spec = KINDS[kind]
    params = spec.params.model_validate(PARAMS.get(kind, {}))
    small, large = SHAPES[shape](CHARS), SHAPES[shape](CHARS * 10)
    _assert_linear(lambda: spec.value(small, True, params), lambda: spec.value(large, True, params))


ANSWERS: dict[str, Callable[[int], str]] = {
    "digits": lambda n: "1" * n,
    "fracs": lambda n: "\\frac{" * n,
    "dollars": lambda n: "$" * n,
    "lefts": lambda n: "\\left" * (n // 5),
    "spaces": lambda n: "1 " * (n // 2),
    "dfracs": lambda n: "\\dfrac" * (n // 6),
}


@pytest.mark.parametrize("shape", ANSWERS)
def test_answer_class_cost_is_linear(shape: str) -> None:
    """Canonicalising a final answer at 10x its length costs about 10x."""
    small, large = ANSWERS[shape](CHARS), ANSWERS[shape](CHARS * 10)
    _assert_linear(lambda: answer_class(small), lambda: answer_class(large))
