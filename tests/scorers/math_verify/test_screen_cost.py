"""What runs on the event loop costs time linear in its input, whatever the input.

Each check times a server-side step at input size n and 10n in the same
run (best of several interleaved repeats, garbage collector off) and
fails when the cost grows far faster than the input: ~10x is linear,
~100x quadratic. A fast machine shrinks both timings alike, so it cannot
hide a non-linear step. Cost is the thread's CPU time, not the wall
clock: on a loaded machine a 10 ms sample is preempted every time and a
0.5 ms one seldom, which made linear steps look 30x (measured at load 4).
"""

from __future__ import annotations

import gc
import math
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

import orjson
import pytest

from reward_service.contracts.slime import sample_from_json
from reward_service.scorers.boxed import boxed_scorer
from reward_service.scorers.math_verify import inline
from reward_service.scorers.math_verify.hazards import answer_region, find_hazard
from reward_service.scorers.math_verify.scorer import MathVerifyScorer
from reward_service.scorers.reasoning import answer_region as answer_region_of

GROWTH = 10
MAX_RATIO = 25.0
"""Cost at 10n over cost at n past which a step is not linear (linear ~10, quadratic ~100)."""
REPEATS = 3
TARGET_CHARS = 4_000
"""Size of the smaller input: big enough that a quadratic step shows, small enough to be quick."""
MIN_SAMPLE_S = 2e-4
"""Each timing sample at size n runs the step this long at least, so timer noise stays small."""


def _seconds(call: Callable[[], object], inner: int) -> float:
    started = time.thread_time()
    for _ in range(inner):
        call()
    return time.thread_time() - started


def _growth(small: Callable[[], object], large: Callable[[], object]) -> tuple[float, float]:
    """Best-of-`REPEATS` seconds of `small` and `large`, timed alternately."""
    inner = max(1, min(1_000, math.ceil(MIN_SAMPLE_S / max(_seconds(small, 1), 1e-9))))
    best_small = best_large = math.inf
    # No gc.collect() first: in a whole-suite worker the heap is large, and a full collection
    # before each of ~250 checks cost more CPU than the checks (124 CPU-s against 25 alone).
    gc.disable()
    try:
        for _ in range(REPEATS):
            best_small = min(best_small, _seconds(small, inner))
            best_large = min(best_large, _seconds(large, inner))
    finally:
        gc.enable()
    return best_small, best_large


def _assert_linear(small: Callable[[], object], large: Callable[[], object]) -> None:
    cost_n, cost_10n = _growth(small, large)
    ratio = cost_10n / cost_n
    assert ratio < MAX_RATIO, f"{cost_n * 1e3:.3f} ms at n, {cost_10n * 1e3:.3f} ms at 10n"


TEXTS: dict[str, Callable[[int], str]] = {
    "ones_tower": lambda n: "so \\boxed{" + "1^" * n + "1}",
    "nines_tower": lambda n: "so \\boxed{" + "9^" * n + "9}",
    "ones_then_tower": lambda n: "\\boxed{" + "1^" * n + "9^9^9^9}",
    "braced_tower": lambda n: "\\boxed{" + "{9^{" * n + "9" + "}}" * n + "}",
    "braced_ones": lambda n: "\\boxed{" + "{1}^" * n + "{1}}",
    "factorial_powers": lambda n: "\\boxed{" + "(1)^{1}!" * n + "}",
    "factorials": lambda n: "\\boxed{" + "9!" * n + "}",
    "nested_braces": lambda n: "{" * n + "1" + "}" * n,
    "nested_parens": lambda n: "(" * n + "1" + ")" * n,
    "nested_brackets": lambda n: "[" * n + "1" + "]" * n,
    "nested_left": lambda n: "\\left(" * n + "1" + "\\right)" * n,
    "open_braces": lambda n: "\\boxed{" + "{" * n,
    "open_parens": lambda n: "\\boxed{" + "(" * n + "^",
    "flood_carets": lambda n: "^" * n,
    "flood_bangs": lambda n: "!" * n,
    "flood_closers": lambda n: "}" * n + "^",
    "flood_boxes_open": lambda n: "\\boxed{" * n,
    "flood_dollars": lambda n: "$" * n,
    "flood_spaces": lambda n: " " * n + "^",
    "flood_digits": lambda n: "9" * n + "^9",
    "flood_backslashes": lambda n: "\\" * n + "^",
    "flood_lefts": lambda n: "\\left(" * n,
    "boxed_digits": lambda n: "\\boxed{" + "9" * n + "}",
    "many_boxes": lambda n: "\\boxed{1} " * n,
    "many_inline_boxes": lambda n: "$\\boxed{1}$ and " * n,
    "box_then_spaces": lambda n: "\\boxed" + " " * n + "{9^9^9}",
    "newlines_then_answer": lambda n: "\n" * n + "$\\boxed{42}$",
    "spaces_then_answer": lambda n: " " * n + "$\\boxed{42}$",
    "braces_then_answer": lambda n: "\\boxed{" + "{}" * n + "}\\boxed{42}",
    "boxes_then_answer": lambda n: "\\boxed{1}" * n + "\\boxed{42}.",
    "think_opens": lambda n: "<think>" * n + "\\boxed{42}",
    "think_ends": lambda n: "</think>" * n + "\\boxed{42}",
    "think_pairs": lambda n: "<think></think>" * n,
    "think_ended_then_reopened": lambda n: "</think>" + "<think" * n + "<think>",
}
"""Adversarial text families, each a function of its size in repeated units."""

SCREENS: dict[str, Callable[[str], object]] = {
    "reasoning": answer_region_of,
    "find_hazard": find_hazard,
    "answer_region": answer_region,
    "settle": lambda text: inline.settle(text, "42"),
    "screen": lambda text: MathVerifyScorer.screen(text, "42"),
    "screen_any": lambda text: MathVerifyScorer.screen(text, "42", {"extraction": "any"}),
    "boxed_screen": lambda text: boxed_scorer(MathVerifyScorer, "math_verify").screen(text, "42"),
}


def _units(build: Callable[[int], str]) -> int:
    """How many units make a text of about `TARGET_CHARS`."""
    per_unit = (len(build(100)) - len(build(0))) / 100
    return max(1, round(TARGET_CHARS / per_unit))


@pytest.mark.parametrize("family", TEXTS)
@pytest.mark.parametrize("screen", SCREENS)
def test_screen_cost_is_linear(screen: str, family: str) -> None:
    """A server-side screen's cost grows linearly with an adversarial answer's size."""
    check, build = SCREENS[screen], TEXTS[family]
    n = _units(build)
    small, large = build(n), build(GROWTH * n)
    _assert_linear(lambda: check(small), lambda: check(large))


BODIES: dict[str, Callable[[int], dict[str, Any]]] = {
    "long_response": lambda n: {"prompt": "p", "response": "x" * n, "label": "1"},
    "list_response": lambda n: {"response": ["ab"] * n, "label": "1"},
    "object_response": lambda n: {"response": {f"k{i}": i for i in range(n)}, "label": "1"},
    "label_options": lambda n: {
        "response": "1",
        "label": {"answer": "1", **{f"o{i}": i for i in range(n)}},
    },
    "label_list": lambda n: {"response": "1", "label": list(range(n))},
    "chat_prompt": lambda n: {"prompt": [{"role": "user", "content": "hi"}] * n, "response": "1"},
}
"""Request bodies that grow in one field, read as the app reads them (orjson)."""


@pytest.mark.parametrize("family", BODIES)
def test_sample_reading_cost_is_linear(family: str) -> None:
    """Reading a parsed request body into a Sample costs time linear in the body."""
    n = TARGET_CHARS // 4
    small, large = (orjson.loads(orjson.dumps(BODIES[family](size))) for size in (n, GROWTH * n))
    _assert_linear(lambda: sample_from_json(small), lambda: sample_from_json(large))


def _nested(depth: int) -> Any:
    value: Any = "1"
    for _ in range(depth):
        value = [value]
    return value


def test_deeply_nested_response_costs_linear_time() -> None:
    """A response nested as deep as orjson allows is read in time linear in its depth."""
    small, large = ({"response": _nested(depth), "label": "1"} for depth in (100, 1000))
    _assert_linear(lambda: sample_from_json(small), lambda: sample_from_json(large))


LABELS: dict[str, Callable[[int], Any]] = {
    "integer_list": lambda n: list(range(n)),
    "string_list": lambda n: [str(i) for i in range(n)],
    "mixed_list": lambda n: [str(i) if i % 2 else {"x": i} for i in range(n)],
    "long_string": lambda n: " " * n + "42",
    "long_digits": lambda n: "9" * n,
}


@pytest.mark.parametrize("family", LABELS)
def test_label_reading_cost_is_linear(family: str) -> None:
    """Screening an answer against a large label costs time linear in the label."""
    n = TARGET_CHARS // 4
    small, large = LABELS[family](n), LABELS[family](GROWTH * n)
    response = "so \\boxed{42}."
    _assert_linear(
        lambda: MathVerifyScorer.screen(response, small),
        lambda: MathVerifyScorer.screen(response, large),
    )


def test_screen_does_not_import_math_verify() -> None:
    """The screen runs in the server process without loading math_verify (~0.5 s, ~60 MB)."""
    code = (
        "import sys\n"
        "from reward_service.scorers.math_verify.scorer import MathVerifyScorer\n"
        "assert MathVerifyScorer.screen('so \\\\boxed{9^{9^{9^{9}}}}', '1') is not None\n"
        "assert MathVerifyScorer.screen('so \\\\boxed{1^1^1}', '1') is None\n"
        "assert 'math_verify' not in sys.modules, 'screen imported math_verify'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
