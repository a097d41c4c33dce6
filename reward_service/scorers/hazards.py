"""Cheap detection of answers that would stall a symbolic grader.

Some short answers cost sympy seconds, minutes or gigabytes: towers of
powers (`9^{9^{9^{9}}}`), huge factorials (`(10^{100})!`), deep nesting.
`find_hazard` spots them in linear time with no heavy imports, so the
server can answer them without spending a worker's deadline. It is a
filter, not the guarantee: the engine's hard deadline still bounds
anything this misses.
"""

from __future__ import annotations

import math
import re

MAX_NESTING = 12
"""Brackets deeper than this take math_verify's parser ~1 s and more."""

MAX_DIGITS = 1_000_000
"""Integers with more digits than this take sympy seconds to build or compare."""

_TOKEN = re.compile(r"\d+(?:\.\d+)?|\\left|\\right|\\[a-zA-Z]+|\s+|.", re.DOTALL)
_OPEN = {"{": "}", "(": ")", "[": "]"}
_CLOSE = {"}", ")", "]"}
_IGNORED = {"\\left", "\\right"}


def _tree(text: str) -> list[object]:
    """Group tokens by brackets into nested lists."""
    root: list[object] = []
    stack = [root]
    for match in _TOKEN.finditer(text):
        token = match.group()
        if token.isspace() or token in _IGNORED:
            continue
        if token in _OPEN:
            group: list[object] = []
            stack[-1].append(group)
            stack.append(group)
        elif token in _CLOSE:
            if len(stack) > 1:
                stack.pop()
        else:
            stack[-1].append(token)
    return root


def _log10(item: object) -> float | None:
    """log10 of a purely numeric item (number, group, power, factorial), else None."""
    if isinstance(item, str):
        if item[:1].isdigit():
            value = float(item)
            return math.log10(value) if value > 0 else 0.0
        return None
    if isinstance(item, list):
        return _chain_log10(item)
    return None


def _chain_log10(items: list[object]) -> float | None:
    """Evaluate `base (!)* (^ exponent)?` right-associatively, in log10 space."""
    if not items:
        return None
    base = _log10(items[0])
    if base is None:
        return None
    rest = items[1:]
    while rest and rest[0] == "!":
        base = _factorial_log10(base)
        rest = rest[1:]
    if not rest:
        return base
    if rest[0] != "^" or len(rest) < 2:
        return None
    exponent = _chain_log10(rest[1:])
    if exponent is None:
        return None
    return _power_log10(base, exponent)


def _power_log10(base_log10: float, exponent_log10: float) -> float:
    try:
        return base_log10 * math.pow(10.0, exponent_log10)
    except OverflowError:
        return math.inf


def _factorial_log10(n_log10: float) -> float:
    try:
        n = math.pow(10.0, n_log10)
        return n * math.log10(n) if n > 1 else 0.0
    except (OverflowError, ValueError):
        return math.inf


def _walk(items: list[object]) -> str | None:
    for i, item in enumerate(items):
        if isinstance(item, list):
            found = _walk(item)
            if found:
                return found
        elif item in {"^", "!"} and i > 0:
            start = i - 1
            if item == "^" and i + 1 < len(items):
                digits = _chain_log10(items[start:])
                if digits is not None and digits > MAX_DIGITS:
                    return "power tower too large to evaluate"
            if item == "!":
                digits = _log10(items[start])
                if digits is not None and _factorial_log10(digits) > MAX_DIGITS:
                    return "factorial too large to evaluate"
    return None


def find_hazard(text: str) -> str | None:
    """Why grading `text` would likely stall a symbolic grader, or None."""
    if _deepest_nesting(text) > MAX_NESTING:
        return f"nesting deeper than {MAX_NESTING} levels"
    if "^" not in text and "!" not in text:
        return None
    return _walk(_tree(text))


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
