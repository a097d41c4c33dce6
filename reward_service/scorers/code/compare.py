"""Comparing a program's result with the expected one, as the code benchmarks do.

Standard output: line by line, each line's trailing whitespace stripped and
trailing empty lines dropped (so `\\r\\n` and a missing final newline do not
matter; leading spaces and inner blank lines do). With a float tolerance,
lines compare token by token (split on whitespace) and two tokens that both
read as numbers match when within the tolerance, absolute or relative.

Return values: JSON-decoded, tuples already lists, `true` never equal to
`1` (JSON keeps them apart; `1 == 1.0` still holds); with a tolerance,
numbers match within it at any depth. An expected value that is a one-element list
also matches its element, as APPS wraps call-based outputs.

The tolerance loosens only where a float is involved (`numbers_close`, the one
number comparison, for static assert plans too): two integers, as tokens
(`[+-]?[0-9]+`) or as JSON values, always compare exactly, so `1000001` is not
`1000000` at 1e-6; an integer against a float (`1` and `1.0000001`) is within it.
"""

from __future__ import annotations

import math
import re

from reward_service.scorers.base import JSON, echo


class ToleranceError(ValueError):
    """A float tolerance that is not a finite number in [0, 1)."""


def parse_tolerance(value: JSON) -> float | None:
    """The `float_tolerance` option as a number, None when off (absent, `0`, `off`)."""
    if value is None or value in ("", "off", "none"):
        return None
    if isinstance(value, bool):
        raise ToleranceError("float_tolerance is a boolean, not a number")
    try:
        tolerance = float(value)
    except (TypeError, ValueError):
        raise ToleranceError(f"float_tolerance {echo(value)} is not a number") from None
    if not (math.isfinite(tolerance) and 0 <= tolerance < 1):
        raise ToleranceError(f"float_tolerance {tolerance!r} is not in [0, 1)")
    return tolerance or None


def _lines(text: str) -> list[str]:
    lines = [line.rstrip() for line in text.split("\n")]
    while lines and not lines[-1]:
        lines.pop()
    return lines


_INTEGER = re.compile(r"[+-]?[0-9]+")


def numbers_close(a: int | float, b: int | float, tolerance: float | None) -> bool:
    """`a == b`, or within `tolerance` (absolute or relative) when a float is involved.

    Two ints are compared exactly whatever the tolerance: it is for floating-point
    error, which integers do not have.
    """
    if tolerance is None or (isinstance(a, int) and isinstance(b, int)):
        return a == b
    try:
        return math.isclose(a, b, rel_tol=tolerance, abs_tol=tolerance)
    except OverflowError:  # an integer past any float
        return a == b


def _integer_digits(token: str) -> tuple[bool, str]:
    """An integer token's value as (negative, digits without leading zeros), read in linear
    time and without `int`'s limit on digits."""
    digits = token.lstrip("+-").lstrip("0") or "0"
    return token.startswith("-") and digits != "0", digits


def _number(token: str) -> float | None:
    try:
        return float(token)
    except ValueError:
        return None


def _tokens_match(got: str, want: str, tolerance: float) -> bool:
    if got == want:
        return True
    if _INTEGER.fullmatch(got) and _INTEGER.fullmatch(want):
        return _integer_digits(got) == _integer_digits(want)
    a, b = _number(got), _number(want)
    return a is not None and b is not None and numbers_close(a, b, tolerance)


def outputs_match(got: str, want: str, tolerance: float | None = None) -> bool:
    """True when standard output `got` is the expected `want`, line by line."""
    got_lines, want_lines = _lines(got), _lines(want)
    if tolerance is None or got_lines == want_lines:
        return got_lines == want_lines
    if len(got_lines) != len(want_lines):
        return False
    for got_line, want_line in zip(got_lines, want_lines, strict=True):
        got_tokens, want_tokens = got_line.split(), want_line.split()
        if len(got_tokens) != len(want_tokens) or not all(
            map(_tokens_match, got_tokens, want_tokens, [tolerance] * len(got_tokens))
        ):
            return False
    return True


def _values_equal(got: JSON, want: JSON, tolerance: float | None) -> bool:
    if isinstance(got, list) and isinstance(want, list):
        return len(got) == len(want) and all(
            _values_equal(a, b, tolerance) for a, b in zip(got, want, strict=True)
        )
    if isinstance(got, dict) and isinstance(want, dict):
        return got.keys() == want.keys() and all(
            _values_equal(got[k], want[k], tolerance) for k in got
        )
    if isinstance(got, bool) is not isinstance(want, bool):
        return False  # JSON's true is no number: a function returning True for 1 is wrong
    if tolerance is not None and _is_number(got) and _is_number(want):
        assert isinstance(got, int | float) and isinstance(want, int | float)
        return numbers_close(got, want, tolerance)
    return bool(got == want)


def _is_number(value: JSON) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def values_match(got: JSON, want: JSON, tolerance: float | None = None) -> bool:
    """True when return value `got` is the expected `want` (or its only element)."""
    if _values_equal(got, want, tolerance):
        return True
    return isinstance(want, list) and len(want) == 1 and _values_equal(got, want[0], tolerance)
