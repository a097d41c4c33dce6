"""Cheap detection of answers that would stall a symbolic grader.

Some short answers cost sympy seconds, minutes or gigabytes: towers of
powers (`9^{9^{9^{9}}}`), huge factorials (`(10^{100})!`), deep nesting.
`find_hazard` spots them with no heavy imports, so the server can answer
them without spending a worker's deadline.

It runs on the server's event loop, so every step is linear by
construction (`tests/scorers/math_verify/test_screen_cost.py` holds it to that): one
pass counts bracket depth, one pass reads tokens with an explicit stack
of bracket groups instead of recursion. A group's value is computed once,
when it closes; a chain of powers and factorials (`a^b^c!`) once, when it
ends, with one right-to-left pass over its operands. Chains are read both
ways a grader might: right-associative with `!` on its operand
(`a^(b^(c!))`, what a tower means) and left-associative with `!` on the
power so far (`((a^b)^c)!`, how math_verify's LaTeX parser reads it); any
step of either reading with more than `MAX_DIGITS` digits is a hazard.

It is a filter, not the guarantee: the engine's hard deadline still
bounds anything this misses.
"""

from __future__ import annotations

import math
import re

MAX_NESTING = 12
"""Brackets deeper than this take math_verify's parser ~1 s and more."""

MAX_DIGITS = 1_000_000
"""Integers with more digits than this take sympy seconds to build or compare."""

_TOWER = "power tower too large to evaluate"
_FACTORIAL = "factorial too large to evaluate"

# ASCII digits only: math_verify's parser reads no other digits as numbers.
_TOKEN = re.compile(r"[0-9]+(?:\.[0-9]+)?|\\[a-zA-Z]+|\s+|.", re.DOTALL)
_DIGITS = frozenset("0123456789")
_OPEN = frozenset("{([")
_CLOSE = frozenset("})]")
_IGNORED = frozenset({"\\left", "\\right"})
_SIGNIFICANT = 17
"""Leading digits of a number that decide its log10 to float precision."""
_LN10 = math.log(10.0)


class _Found(Exception):
    """A hazard: ends the scan at once, its message the reason."""


def _number_log10(token: str) -> float:
    """log10 of a number token, from its length and leading digits (0 reads as 1)."""
    integer, _, fraction = token.lstrip("0").partition(".")
    if len(integer) > _SIGNIFICANT:
        return math.log10(float(integer[:_SIGNIFICANT])) + len(integer) - _SIGNIFICANT
    value = float(f"{integer or 0}.{fraction[:_SIGNIFICANT] or 0}")
    return math.log10(value) if value > 0 else 0.0


def _power_log10(base_log10: float, exponent_log10: float) -> float:
    if base_log10 == 0.0:
        return 0.0
    try:
        return base_log10 * math.pow(10.0, exponent_log10)
    except OverflowError:
        return math.copysign(math.inf, base_log10)


def _factorial_log10(n_log10: float) -> float:
    try:
        n = math.pow(10.0, n_log10)
        return math.lgamma(n + 1) / _LN10 if n > 1 else 0.0
    except OverflowError:
        return math.inf


def _checked(digits: float, reason: str) -> float:
    if digits > MAX_DIGITS:
        raise _Found(reason)
    return digits


class _Group:
    """A bracket group being read, with the chain `base (!)* (^ operand (!)*)*` in progress.

    Every value is a log10, so a value's digit count is the value itself.
    """

    __slots__ = ("caret", "chain", "prefix", "sole")

    def __init__(self) -> None:
        self.chain: list[float] = []
        """Each operand of the chain so far, with its own `!`s applied."""
        self.prefix = 0.0
        """The chain so far, read left-associatively with `!` on the power so far."""
        self.caret = False
        """The chain ends in `^`, waiting for its exponent."""
        self.sole = True
        """Everything read so far belongs to the group's first chain."""

    def operand(self, value: float) -> None:
        """A number, or a group with a numeric value."""
        if self.caret:
            self.caret = False
            self.chain.append(value)
            self.prefix = _checked(_power_log10(self.prefix, value), _TOWER)
            return
        if self.chain:
            self.end()
            self.sole = False
        self.chain.append(value)
        self.prefix = value

    def power(self) -> None:
        """A `^`."""
        if self.chain and not self.caret:
            self.caret = True
        else:
            self.other()

    def factorial(self) -> None:
        """A `!`."""
        if self.chain and not self.caret:
            self.chain[-1] = _checked(_factorial_log10(self.chain[-1]), _FACTORIAL)
            self.prefix = _checked(_factorial_log10(self.prefix), _FACTORIAL)
        else:
            self.other()

    def other(self) -> None:
        """Any token that cannot be part of a numeric chain."""
        self.end()
        self.sole = False

    def end(self) -> float | None:
        """Finish the chain in progress, checking every suffix of its right-associative reading.

        Returns the chain's value, or None when it is empty or ends in `^`.
        """
        chain, caret = self.chain, self.caret
        self.chain, self.caret = [], False
        if not chain or caret:
            return None
        value = chain[-1]
        for index in range(len(chain) - 2, -1, -1):
            value = _checked(_power_log10(chain[index], value), _TOWER)
        return max(value, self.prefix)

    def close(self) -> float | None:
        """The group's value when it is one numeric chain, else None."""
        value = self.end()
        return value if self.sole else None


def _close_innermost(stack: list[_Group]) -> None:
    """Close the innermost group and hand its value to the enclosing one."""
    value = stack.pop().close()
    if value is None:
        stack[-1].other()
    else:
        stack[-1].operand(value)


def _scan(text: str) -> None:
    """Raise `_Found` at the first power or factorial in `text` that is too large."""
    stack = [_Group()]
    for token in _TOKEN.findall(text):
        group = stack[-1]
        if token[0] in _DIGITS:
            group.operand(_number_log10(token))
        elif token == "^":
            group.power()
        elif token == "!":
            group.factorial()
        elif token in _OPEN:
            stack.append(_Group())
        elif token in _CLOSE:
            if len(stack) > 1:
                _close_innermost(stack)
        elif not token.isspace() and token not in _IGNORED:
            group.other()
    while len(stack) > 1:
        _close_innermost(stack)
    stack[0].end()


def find_hazard(text: str) -> str | None:
    """Why grading `text` would likely stall a symbolic grader, or None."""
    if _deepest_nesting(text) > MAX_NESTING:
        return f"nesting deeper than {MAX_NESTING} levels"
    if "^" not in text and "!" not in text:
        return None
    try:
        _scan(text)
    except _Found as found:
        return str(found)
    return None


_BRACKET = re.compile(r"[{}()\[\]]")


def _deepest_nesting(text: str) -> int:
    depth = deepest = 0
    for bracket in _BRACKET.finditer(text):
        if bracket.group() in _OPEN:
            depth += 1
            deepest = max(deepest, depth)
        elif depth:
            depth -= 1
    return deepest


_BOXED = re.compile(r"\\(?:boxed|fbox)\s*\{")


_BRACE = re.compile(r"[{}]")


def answer_region(response: str, tail_chars: int = 4096) -> str:
    """The part of a response a math grader would parse: the last box, else the tail."""
    boxes = list(_BOXED.finditer(response, max(0, len(response) - 200_000)))
    if not boxes:
        return response[-tail_chars:]
    box = boxes[-1]
    depth = 1
    for brace in _BRACE.finditer(response, box.end(), box.end() + tail_chars):
        depth += 1 if brace.group() == "{" else -1
        if depth == 0:
            return response[box.start() : brace.end()]
    return response[box.start() : box.end() + tail_chars]
