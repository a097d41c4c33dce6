"""Screening spots answers that would stall sympy, and lets real answers through.

The one-pass rewrite detects more than the recursive screen it replaced,
on purpose: a tower followed by other tokens (`2^2^2^2^2^2+1`,
`9^9^9^9 \\cdot 2`), a factorial after a power (`10^{7}!`, read as
`(10^7)!` like math_verify does), repeated factorials (`3!!!!`), a power
of a factorial (`3!^{9^{9}}`) and left-associative towers
(`9^1^{10^{7}}`). Factorials are judged by their true digit count, so
`200000!` (973,351 digits) now passes where `n log10 n` flagged it.
Every case below the old screen also decided is decided the same way.
"""

from __future__ import annotations

import gc
import math
from collections.abc import Iterator

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reward_service.scorers.math_verify import inline
from reward_service.scorers.math_verify.hazards import (
    _TOKEN,
    MAX_DIGITS,
    MAX_NESTING,
    _factorial_log10,
    _number_log10,
    _power_log10,
    answer_region,
    find_hazard,
)
from reward_service.scorers.math_verify.scorer import MathVerifyScorer


@pytest.fixture(autouse=True, scope="module")
def _gc_callbacks_left_as_found() -> Iterator[None]:
    """hypothesis installs a gc callback for the rest of the session; a SIGALRM timeout
    of math_verify's that lands in it is swallowed, which makes later timeout tests flaky."""
    before = list(gc.callbacks)
    yield
    gc.callbacks[:] = before


@pytest.mark.parametrize(
    "answer",
    [
        "9^{9^{9^{9}}}",
        "(10^{100})!",
        "2^{2^{40}}",
        "10^{10^{7}}",
        "1000000!",
        "{" * 13 + "1" + "}" * 13,
        "(" * 50 + "1" + ")" * 50,
        "\\left(" * 14 + "x" + "\\right)" * 14,
        "10^{1000001}",
        "x+9^9^9^9",
        "1^9^9^9^9",
        "\\left(9^{9^{9}}\\right)+1",
        "\\boxed{9^{9^{9^{9}}",
        "0000000000000000000000000009^{9^{9}}",
    ],
)
def test_hazards_are_found(answer: str) -> None:
    """Towers, huge factorials and deep nesting are rejected."""
    assert find_hazard(answer) is not None


@pytest.mark.parametrize(
    "answer",
    [
        "2^2^2^2^2^2+1",
        "9^9^9^9 \\cdot 2",
        "10^{7}!",
        "3!!!!",
        "3!^{9^{9}}",
        "9^1^{10^{7}}",
        "{10^1^{999999}}^{10}",
    ],
)
def test_hazards_the_recursive_screen_missed_are_found(answer: str) -> None:
    """Towers followed by other tokens, factorials of powers, repeated factorials are rejected."""
    assert find_hazard(answer) is not None


@pytest.mark.parametrize(
    ("answer", "reason"),
    [
        ("9^{9^{9^{9}}}", "power tower too large to evaluate"),
        ("(10^{100})!", "factorial too large to evaluate"),
        ("(" * 13 + ")" * 13, f"nesting deeper than {MAX_NESTING} levels"),
    ],
)
def test_hazard_says_what_it_found(answer: str, reason: str) -> None:
    """The reason names the kind of hazard."""
    assert find_hazard(answer) == reason


@pytest.mark.parametrize(
    "answer",
    [
        "42",
        "\\frac{\\sqrt{2}}{2}",
        "2^{2^{20}}",
        "10^{100000}",
        "100000!",
        "e^{x^2}",
        "x^{2^{10}}",
        "(n+1)!",
        "\\begin{pmatrix} 1 & 2 \\\\ 3 & 4 \\end{pmatrix}",
        "[1, 3)",
        "2^{10}",
        "x^2+y^2",
        "10^{100}",
        "5!",
        "3!!!",
        "200000!",
        "10^{999999}",
        "2^2^2^2^2+1",
        "9^9^9^9^x",
        "0.5^{10^{400}}",
        "2^{10}3",
        "\\frac{1}{2}^{10}",
        "1" * 400 + "^2",
        "²^2",
        "٣^{٣^{٣^{٣}}}",
    ],
)
def test_ordinary_answers_pass(answer: str) -> None:
    """Answers sympy handles quickly (or reads no number in) are not rejected."""
    assert find_hazard(answer) is None


def test_region_is_the_last_box() -> None:
    """With a box, only the last one is screened, not the reasoning before it."""
    response = "we note 9^{9^{9^{9}}} is absurd, so \\boxed{3}"
    assert answer_region(response).startswith("\\boxed{3}")
    assert find_hazard(answer_region(response)) is None


def test_region_without_box_is_the_tail() -> None:
    """Without a box, the tail of the response is screened."""
    assert answer_region("a" * 10_000, tail_chars=100) == "a" * 100


def test_region_ends_where_the_box_closes() -> None:
    """The region is the box itself, so text after it is never screened."""
    response = "so \\boxed{\\frac{1}{2}} and then 9^{9^{9^{9}}}"
    assert answer_region(response) == "\\boxed{\\frac{1}{2}}"


@pytest.mark.parametrize(
    ("token", "value"),
    [("7", 7), ("0", 1), ("000123.5", 123.5), ("0.25", 0.25), ("9" * 40, int("9" * 40))],
)
def test_numbers_are_read_as_their_log10(token: str, value: float) -> None:
    """A number token's log10 comes from its length and leading digits (zero reads as one)."""
    assert _number_log10(token) == pytest.approx(math.log10(value))


# A slow, plainly recursive reading of the same rules, for small inputs only.

_Item = str | list["_Item"]


class _Hazard(Exception):
    pass


def _reference_tree(tokens: list[str], root: bool = True) -> list[_Item]:
    items: list[_Item] = []
    while tokens:
        token = tokens.pop(0)
        if token in "{([":
            items.append(_reference_tree(tokens, root=False))
        elif token in "})]":
            if not root:
                return items
        elif not token.isspace() and token not in ("\\left", "\\right"):
            items.append(token)
    return items


def _depth(items: list[_Item]) -> int:
    return max((1 + _depth(item) for item in items if isinstance(item, list)), default=0)


def _small(digits: float) -> float:
    if digits > MAX_DIGITS:
        raise _Hazard
    return digits


def _operand(item: _Item) -> float | None:
    if isinstance(item, list):
        return _reference_value(item)
    return _number_log10(item) if item[0] in "0123456789" else None


def _right_associative(values: list[float]) -> float:
    if len(values) == 1:
        return values[0]
    return _small(_power_log10(values[0], _right_associative(values[1:])))


def _chain_value(elements: list[tuple[float, int]], complete: bool) -> float | None:
    """Check every step of both readings of `a (!)* (^ b (!)*)*`; its value when complete."""
    own: list[float] = []
    left = 0.0
    for index, (value, bangs) in enumerate(elements):
        left = value if index == 0 else _small(_power_log10(left, value))
        for _ in range(bangs):
            value = _small(_factorial_log10(value))
            left = _small(_factorial_log10(left))
        own.append(value)
    return max(_right_associative(own), left) if complete else None


def _reference_value(items: list[_Item]) -> float | None:
    """The group's value when it is exactly one numeric chain; raises `_Hazard`."""
    operands = [_operand(item) for item in items]
    chains: list[tuple[int, int, float | None]] = []
    start = 0
    while start < len(items):
        first = operands[start]
        if first is None:
            start += 1
            continue
        elements = [(first, 0)]
        end = start + 1
        while end < len(items):
            following = operands[end + 1] if end + 1 < len(items) else None
            if items[end] == "!":
                elements[-1] = (elements[-1][0], elements[-1][1] + 1)
                end += 1
            elif items[end] == "^" and following is not None:
                elements.append((following, 0))
                end += 2
            else:
                break
        complete = not (end < len(items) and items[end] == "^")
        chains.append((start, end, _chain_value(elements, complete)))
        start = end
    if len(chains) == 1 and chains[0][:2] == (0, len(items)):
        return chains[0][2]
    return None


def _reference_hazard(text: str) -> bool:
    tree = _reference_tree(_TOKEN.findall(text))
    if _depth(tree) > MAX_NESTING:
        return True
    try:
        _reference_value(tree)
    except _Hazard:
        return True
    return False


_PIECES = [
    *"0129^^^!!{}()[] x+",
    "9",
    "10",
    "0.5",
    "99999",
    "1000000",
    "\\left(",
    "\\right)",
    "\\cdot",
    "^{",
    "}^",
    "9^9",
]


@settings(max_examples=1500, deadline=None)
@given(st.lists(st.sampled_from(_PIECES), max_size=30).map("".join))
def test_screen_agrees_with_a_recursive_reading(text: str) -> None:
    """On small inputs, the one-pass screen flags exactly what a plainly recursive reading flags."""
    assert (find_hazard(text) is not None) == _reference_hazard(text)


_RUNS = [*_PIECES, "\\boxed{", "$", "\\", "\n", "1^", "{9^"]
_SHAPES = st.lists(
    st.tuples(st.sampled_from(_RUNS), st.integers(1, 3_000)), min_size=1, max_size=8
).map(lambda runs: "".join(piece * count for piece, count in runs))
_REASONS = (
    "power tower too large to evaluate",
    "factorial too large to evaluate",
    f"nesting deeper than {MAX_NESTING} levels",
)


@settings(max_examples=200, deadline=None)
@given(_SHAPES | st.text(max_size=2_000))
def test_screens_never_raise(text: str) -> None:
    """Long runs of adversarial pieces never make a screen raise (no RecursionError)."""
    assert find_hazard(text) in (None, *_REASONS)
    assert find_hazard(answer_region(text)) in (None, *_REASONS)
    inline.settle(text, "42")
    MathVerifyScorer.screen(text, "42")
    MathVerifyScorer.screen(text, [1, "2", None])
