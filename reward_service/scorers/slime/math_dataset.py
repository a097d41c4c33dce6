"""MATH-dataset answers: find the boxed answer, normalise it, compare it.

Shared by the `math` and `deepscaler` scorers, which follow SLIME's
`math_utils` semantics: the answer is the content of the last `\\boxed{}`
(or `\\fbox{}`); it matches the gold when Hendrycks' MATH string
normalisation makes both identical, or when the PRM800K-style normalisation
makes them identical or sympy proves their difference zero.

sympy only sees short answers that pass a screen (few letters, no towers of
powers, no factorials), under one `signal.alarm` per comparison when running
on the main thread.
"""

from __future__ import annotations

import contextlib
import math
import re
import signal
import threading
import warnings
from collections.abc import Iterator
from types import FrameType
from typing import NoReturn

from reward_service.scorers.base import JSON, Score, Status
from reward_service.scorers.labels import gold_texts

MAX_SYMPY_CHARS = 200
"""Longer answers are compared as strings only (MATH answers are under 160)."""

_DETAIL_CHARS = 200
_BRACE = re.compile(r"[{}]")
_BOX = re.compile(r"\\(?:boxed|fbox)")
_TEXT_WRAPPED = re.compile(r"^\\text\{(?P<text>.+?)\}$")


class _SympyTimeout(BaseException):
    """Raised by the alarm; a BaseException so sympy's `except Exception` cannot swallow it."""


def closing_brace(text: str, start: int) -> int | None:
    """Index of the `}` that closes the `{` at `start`, or None when unclosed."""
    depth = 0
    for match in _BRACE.finditer(text, start):
        depth += 1 if match.group() == "{" else -1
        if depth == 0:
            return match.start()
    return None


def last_boxed(text: str) -> str | None:
    """The content of the last `\\boxed{...}` or `\\fbox{...}`; None if absent or unclosed.

    `\\boxed 5` (a space, no braces) yields `5`, as in the MATH dataset.
    """
    start = max(text.rfind("\\boxed"), text.rfind("\\fbox"))
    if start < 0:
        return None
    rest = text[start + (6 if text.startswith("\\boxed", start) else 5) :]
    body = rest.lstrip()
    if body.startswith("{"):
        offset = len(rest) - len(body)
        end = closing_brace(rest, offset)
        return None if end is None else rest[offset + 1 : end]
    if body and len(body) < len(rest):
        return body.split(maxsplit=1)[0].split("$", 1)[0]
    return None


# Hendrycks' MATH normalisation ----------------------------------------------

_HENDRYCKS_REPLACEMENTS = (
    ("\n", ""),
    ("\\!", ""),
    ("\\\\", "\\"),
    ("tfrac", "frac"),
    ("dfrac", "frac"),
    ("\\left", ""),
    ("\\right", ""),
    ("^{\\circ}", ""),
    ("^\\circ", ""),
    ("\\$", ""),
)
_SQRT_SHORTHAND = re.compile(r"\\sqrt([^{])")
_FRAC_TWO_CHARS = re.compile(r"\\frac([^{])([^{])")
_FRAC_ONE_CHAR = re.compile(r"\\frac([^{])(?=\{)")
_SIMPLE_RATIO = re.compile(r"(-?(?:0|[1-9]\d*))/(-?(?:0|[1-9]\d*))")


def _braced_shorthand(latex: str) -> str:
    """`\\sqrt3` -> `\\sqrt{3}`, `\\frac12` -> `\\frac{1}{2}`, `\\frac1{72}` -> `\\frac{1}{72}`."""
    latex = _SQRT_SHORTHAND.sub(r"\\sqrt{\1}", latex)
    return _FRAC_ONE_CHAR.sub(r"\\frac{\1}", _FRAC_TWO_CHARS.sub(r"\\frac{\1}{\2}", latex))


def hendrycks_normal(answer: str) -> str:
    """The MATH dataset's string normalisation: `\\dfrac12` and `1/2` become `\\frac{1}{2}`."""
    answer = answer.strip()
    wrapped = _TEXT_WRAPPED.search(answer)
    if wrapped:
        answer = wrapped.group("text").strip()
    for old, new in _HENDRYCKS_REPLACEMENTS:
        answer = answer.replace(old, new)
    answer = answer.split("\\text{ ", 1)[0]  # "\text{ " only ever introduces units
    answer = answer.replace("\\%", "").replace(" .", " 0.").replace("{.", "{0.")
    if answer.startswith("."):
        answer = "0" + answer
    left, equals, right = answer.partition("=")
    if equals and "=" not in right and len(left) <= 2:
        answer = right
    answer = _braced_shorthand(answer.replace(" ", ""))
    if answer == "0.5":
        return "\\frac{1}{2}"
    ratio = _SIMPLE_RATIO.fullmatch(answer)
    return f"\\frac{{{ratio[1]}}}{{{ratio[2]}}}" if ratio else answer


# PRM800K-style normalisation and sympy equality ------------------------------

_UNIT_WORDS = (
    "degree|cm|centimeter|meter|mile|second|minute|hour|day|week|month|year|foot|feet|inch|yard"
)
_UNITS = re.compile(rf"(?:{_UNIT_WORDS})(?:es)?s? *(?:\^[0-9]+)?")
_DEGREES = re.compile(r"\^ *\\circ")
_THIN_SPACE_COMMA = re.compile(r",\\! *")
_MINUS_SPACE = re.compile(r"- *")
_MIXED_NUMBER = re.compile(r"([0-9]) +(\(?[0-9])")
_THOUSANDS = re.compile(r"(\d),(\d\d\d)(?=$|\D)")
_INTEGER = re.compile(r"-?\d+")
_FRACTION = re.compile(r"-?\d+/0*[1-9]\d*")
_LATEX_WORDS = (
    ("\\pi", "pi"),
    ("\\infty", "inf"),
    ("\\cup", "U"),
    ("\\cdot", "*"),
    ("\\times", "*"),
)
_LATEX_COMMAND = re.compile(r"\\([a-zA-Z]+)")
_LATEX_SPACING = re.compile(r"\\[,;:! ]")
_BARE_OPERAND = re.compile(r"-?[0-9.]+|[a-zA-Z]")
_TUPLE_BRACKETS = "()[]"
_UNSAFE_FOR_SYMPY = ("^{", "^(", "**", "!", "_")
_UNSAFE_POWERS = re.compile(r"\^[0-9]+\^|\^[0-9][0-9]")
_MAX_CARETS = 3


def _strip_thousands_commas(text: str) -> str:
    while True:
        stripped = _THOUSANDS.sub(r"\1\2", text)
        if stripped == text:
            return text
        text = stripped


def _integer_value(text: str) -> int | None:
    """`text` as an integer when it reads as one ("12", "12.0", "1,000"), else None."""
    text = _strip_thousands_commas(text)
    try:
        if _INTEGER.fullmatch(text):
            return int(text)
        value = float(text)
    except ValueError:
        return None
    if not math.isfinite(value) or abs(value - round(value)) > 1e-7:
        return None
    return round(value)


def _operand(text: str) -> str:
    return text if _BARE_OPERAND.fullmatch(text) else f"({text})"


def _rewrite_command(text: str, command: str, render: str) -> str:
    """Replace `\\command{a}{b}` groups, innermost last, with `render` filled by operands."""
    arity = render.count("{}")
    while (start := text.find(command)) >= 0:
        position = start + len(command)
        operands = []
        for _ in range(arity):
            if not text.startswith("{", position):
                return text
            end = closing_brace(text, position)
            if end is None:
                return text
            operands.append(_operand(_latex_to_plain(text[position + 1 : end])))
            position = end + 1
        text = text[:start] + render.format(*operands) + text[position:]
    return text


def _latex_to_plain(expr: str) -> str:
    """A plain-text reading of simple LaTeX: `\\frac{1}{2}` -> `1/2`, `\\sqrt{x}` -> `sqrt(x)`."""
    expr = _braced_shorthand(expr.replace("\\tfrac", "\\frac").replace("\\dfrac", "\\frac"))
    expr = _rewrite_command(expr, "\\frac", " {}/{}")  # the space keeps "7\frac34" a mixed number
    expr = _rewrite_command(expr, "\\sqrt", "sqrt({})")
    for old, new in _LATEX_WORDS:
        expr = expr.replace(old, new)
    expr = _LATEX_SPACING.sub("", expr.replace("\\left", "").replace("\\right", ""))
    return _LATEX_COMMAND.sub(r"\1", expr).strip()


def prm800k_normal(expr: str) -> str:
    """The PRM800K grader's normalisation: units, LaTeX, spaces and case removed."""
    wrapped = _TEXT_WRAPPED.search(expr)
    if wrapped:
        expr = wrapped.group("text")
    expr = expr.replace("\\%", "").replace("\\$", "").replace("$", "").replace("%", "")
    expr = expr.replace(" or ", " , ").replace(" and ", " , ")
    expr = expr.replace("million", "*10^6").replace("billion", "*10^9")
    expr = expr.replace("trillion", "*10^12")
    expr = _DEGREES.sub("", _UNITS.sub("", expr))
    if len(expr) > 1 and expr[0] == "{" and expr[-1] == "}":
        expr = expr[1:-1]
    expr = _THIN_SPACE_COMMA.sub("", expr)
    integer = _integer_value(expr)
    if integer is not None:
        expr = str(integer)
    if "\\" in expr:
        expr = _latex_to_plain(expr)
    expr = _MIXED_NUMBER.sub(r"\1+\2", _MINUS_SPACE.sub("-", expr))
    expr = expr.replace(" ", "").replace("{", "").replace("}", "").lower()
    integer = _integer_value(expr)
    return expr if integer is None else str(integer)


def _tuple_items(expr: str) -> list[str]:
    expr = _strip_thousands_commas(expr)
    inner = expr[1:-1]
    if (
        len(expr) > 2
        and expr[0] in _TUPLE_BRACKETS
        and expr[-1] in _TUPLE_BRACKETS
        and not any(bracket in inner for bracket in _TUPLE_BRACKETS)
    ):
        return [item.strip() for item in inner.split(",")]
    return [expr]


def _sympy_may_evaluate(expr: str) -> bool:
    """False for text, many-variable expressions and power towers that could stall sympy."""
    letters = {ch for ch in expr.replace("sqrt", "").replace("frac", "") if ch.isalpha()}
    return (
        len(letters) <= 2
        and expr.count("^") <= _MAX_CARETS
        and not any(unsafe in expr for unsafe in _UNSAFE_FOR_SYMPY)
        and _UNSAFE_POWERS.search(expr) is None
    )


def _sympy_equal(gold: str, given: str) -> bool:
    expr = f"({gold})-({given})"
    if not _sympy_may_evaluate(expr):
        return False
    import sympy  # here, not at import: the server process loads this module for `screen`
    from sympy.parsing import sympy_parser

    transformations = (
        *sympy_parser.standard_transformations,
        sympy_parser.implicit_multiplication_application,
    )
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            difference = sympy_parser.parse_expr(
                expr.replace("^", "**"), transformations=transformations
            )
            return bool(sympy.simplify(difference) == 0)
    except Exception:
        return False


def _item_equal(gold: str, given: str) -> bool:
    if _FRACTION.fullmatch(gold) and _FRACTION.fullmatch(given):
        return gold == given  # an unreduced fraction is not the answer
    if (_integer_value(gold) is None) != (_integer_value(given) is None):
        return False
    return _sympy_equal(gold, given)


def prm800k_equal(given: str, gold: str) -> bool:
    """Equal after PRM800K normalisation, item by item for tuples and intervals."""
    gold, given = prm800k_normal(gold), prm800k_normal(given)
    if gold == given:
        return True
    if not given:
        return False
    gold_items, given_items = _tuple_items(gold), _tuple_items(given)
    if len(gold_items) != len(given_items):
        return False
    if len(gold_items) > 1 and (gold[0], gold[-1]) != (given[0], given[-1]):
        return False
    return all(map(_item_equal, gold_items, given_items))


@contextlib.contextmanager
def _alarm(seconds: int) -> Iterator[None]:
    """Raise `_SympyTimeout` after `seconds`; a no-op off the main thread."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def expire(signum: int, frame: FrameType | None) -> NoReturn:
        raise _SympyTimeout

    previous = signal.signal(signal.SIGALRM, expire)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        if previous is not None:
            signal.signal(signal.SIGALRM, previous)


def answers_equal(given: str, gold: str, timeout_s: int) -> bool:
    """Hendrycks-equal, or (for short answers) PRM800K/sympy-equal within `timeout_s`.

    Raises `_SympyTimeout` when sympy overruns; `grade_boxed` turns it into a status.
    """
    if hendrycks_normal(given) == hendrycks_normal(gold):
        return True
    if max(len(given), len(gold)) > MAX_SYMPY_CHARS:
        return False
    with _alarm(timeout_s):
        return prm800k_equal(given, gold)


def grade_boxed(solution: str, label: JSON, timeout_s: int) -> Score:
    """1.0 when the last boxed answer of `solution` equals the label (or any label in a list)."""
    golds = gold_texts(label)
    if isinstance(golds, str):
        return Score.error(golds)
    unboxed = [last_boxed(gold) if _BOX.search(gold) else gold for gold in golds]
    usable = [gold for gold in unboxed if gold]
    if not usable:
        return Score.error("label's \\boxed{} is empty or not closed")
    given = last_boxed(solution)
    if given is None:
        return Score.no_answer("no \\boxed{} answer")
    details = {"pred": given[:_DETAIL_CHARS], "gold": usable[0][:_DETAIL_CHARS]}
    try:
        correct = any(answers_equal(given, gold, timeout_s) for gold in usable)
    except _SympyTimeout:
        return Score(0.0, Status.TIMEOUT, {"reason": "sympy comparison timed out", **details})
    return Score.verdict(correct, **details)
