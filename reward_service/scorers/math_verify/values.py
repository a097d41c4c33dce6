"""Plain-number answers read straight into the sympy values math_verify builds.

`exact_value` reads the normalised forms that are plain numbers (integers,
decimals, grouped thousands, integer fractions, integer percents) and intervals
between two integers (`[a, b)`, `(a, b]`, `[a, b]`, `(a, b)` with a < b) into the
values math_verify's LaTeX parser builds for them, skipping antlr, which takes
~25 ms of full-context prediction on every interval, however often it has seen
one; the differential test checks every one against plain `parse`.
"""

from __future__ import annotations

import re
from typing import Any

from sympy import Integer, Interval, Mul, Number, Rational, UnevaluatedExpr

_MAX_DIGITS = 1000
_INTEGER = re.compile(rf"[+-]?\d{{1,{_MAX_DIGITS}}}")
_DECIMAL = re.compile(r"-?(?:0|[1-9]\d{0,30})\.\d{1,30}")
_GROUPED = re.compile(r"-?[1-9]\d{0,2}(?:,\d{3}){1,10}")
_FRACTION = re.compile(r"(-?)\\frac\{(-?\d{1,30})\}\{([1-9]\d{0,29})\}")
_PERCENT = re.compile(r"(\d{1,30})\\?%")
_PERCENT_FACTOR = UnevaluatedExpr(Rational(1, 100))
_ENDPOINT = r"-?(?:0|[1-9]\d{0,29})"
_INTERVAL = re.compile(rf"([\[(]) ?({_ENDPOINT}) ?, ?({_ENDPOINT}) ?([\])])")


def plain_integer(latex: str) -> int | None:
    """The value of a normalised answer that is a bare (signed) integer."""
    return int(latex) if _INTEGER.fullmatch(latex) else None


def exact_value(latex: str) -> Any | None:
    """The sympy value math_verify builds for a plain-number answer, else None."""
    integer = plain_integer(latex)
    if integer is not None:
        return Integer(integer)
    if _GROUPED.fullmatch(latex):
        return Integer(int(latex.replace(",", "")))
    if _DECIMAL.fullmatch(latex):
        unsigned = Number(latex.lstrip("-"))
        return -unsigned if latex.startswith("-") else unsigned
    fraction = _FRACTION.fullmatch(latex)
    if fraction:
        sign, top, bottom = fraction.groups()
        value = Rational(int(top), int(bottom))
        return -value if sign else value
    percent = _PERCENT.fullmatch(latex)
    if percent:
        return Mul(Integer(int(percent[1])), _PERCENT_FACTOR, evaluate=False)
    return _interval(latex)


def _interval(latex: str) -> Any | None:
    """The `Interval` math_verify builds for an interval between two integers, a < b (an
    empty or one-point one, which sympy turns into another set, is left to math_verify)."""
    found = _INTERVAL.fullmatch(latex)
    if found is None:
        return None
    opening, low, high, closing = found.groups()
    if int(low) >= int(high):
        return None
    return Interval(Integer(int(low)), Integer(int(high)), opening == "(", closing == ")")
