"""Assert tests whose verdict the worker makes, not the program.

`assert f(2) == [1, 2]` holds its expected value as a literal. Such a test
is *lifted*: only the expression `f(2)` enters the sandbox, the program's
driver writes the value it computes as literal text (exact built-in types
only), and the worker reads it back with `ast.literal_eval` and compares it
with the literal using Python's `==`. A program that forges its verdicts
(a driver report of its own, an object whose `__eq__` is always true, an
early exit) then gains nothing: it never sees the expected values. Tests of
any other shape run as statements inside the program, whose verdict is the
program's own.
"""

from __future__ import annotations

import ast
import math
from collections.abc import Sequence
from dataclasses import dataclass

from reward_service.scorers.base import JSON

_CANDIDATE = "candidate"
"""HumanEval's `check(candidate)` argument, renamed to the entry point when lifted."""


@dataclass(frozen=True)
class LiftedTest:
    """One assert test: an expression and its expected value (lifted), or a statement."""

    source: str
    """The expression to evaluate, when lifted; else the statement to run."""
    expected: object = None
    lifted: bool = False


def lift(tests: Sequence[str], setup: str, entry_point: str) -> tuple[LiftedTest, ...]:
    """The tests as the driver runs them, each lifted when its shape allows.

    A HumanEval suite (one `check(<entry>)` test, `check` defined in `setup`)
    is unfolded into the asserts of `check` when every statement of its body
    is one this module can lift; otherwise it stays one statement.
    """
    if entry_point and list(tests) == [f"check({entry_point})"]:
        unfolded = _unfolded_check(setup, entry_point)
        if unfolded is not None:
            return unfolded
    return tuple(_lifted(test) or LiftedTest(test) for test in tests)


def _lifted(test: str) -> LiftedTest | None:
    try:
        body = ast.parse(test).body
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    return _lifted_assert(body[0]) if len(body) == 1 else None


def _lifted_assert(node: ast.stmt) -> LiftedTest | None:
    """`assert <expr> == <literal>` (either way round), else None."""
    if not isinstance(node, ast.Assert) or not isinstance(node.test, ast.Compare):
        return None
    compare = node.test
    if len(compare.ops) != 1 or not isinstance(compare.ops[0], ast.Eq):
        return None
    left, right = compare.left, compare.comparators[0]
    for expression, literal in ((left, right), (right, left)):
        try:
            expected = ast.literal_eval(literal)
        except (ValueError, TypeError, SyntaxError, RecursionError, MemoryError):
            continue
        try:
            ast.literal_eval(expression)
        except (ValueError, TypeError, SyntaxError, RecursionError, MemoryError):
            return LiftedTest(ast.unparse(expression), expected, lifted=True)
        return None  # literal == literal tests nothing of the program
    return None


class _Rename(ast.NodeTransformer):
    def __init__(self, entry_point: str) -> None:
        self._entry = entry_point

    def visit_Name(self, node: ast.Name) -> ast.Name:
        return ast.Name(self._entry, node.ctx) if node.id == _CANDIDATE else node


def _unfolded_check(setup: str, entry_point: str) -> tuple[LiftedTest, ...] | None:
    try:
        module = ast.parse(setup)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    checks = [n for n in module.body if isinstance(n, ast.FunctionDef) and n.name == "check"]
    if len(checks) != 1 or [a.arg for a in checks[0].args.args] != [_CANDIDATE]:
        return None
    lifted: list[LiftedTest] = []
    for statement in checks[0].body:
        if isinstance(statement, ast.Pass) or (
            isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Constant)
        ):
            continue
        test = _lifted_assert(_Rename(entry_point).visit(statement))
        if test is None:
            return None
        lifted.append(test)
    return tuple(lifted) or None


def read_value(text: JSON) -> tuple[bool, object]:
    """The value a driver wrote as literal text: `(True, value)`, or `(False, None)`."""
    if not isinstance(text, str):
        return False, None
    try:
        return True, ast.literal_eval(text)
    except (ValueError, TypeError, SyntaxError, RecursionError, MemoryError):
        return False, None


def equal(got: object, want: object, tolerance: float | None) -> bool:
    """Python's `got == want`; with `tolerance`, floats anywhere inside may differ by it."""
    if tolerance is None:
        try:
            return bool(got == want)
        except RecursionError:
            return False
    if type(got) in (list, tuple) and type(got) is type(want):
        assert isinstance(got, list | tuple) and isinstance(want, list | tuple)
        return len(got) == len(want) and all(
            equal(a, b, tolerance) for a, b in zip(got, want, strict=True)
        )
    if isinstance(got, dict) and isinstance(want, dict):
        return got.keys() == want.keys() and all(equal(got[k], want[k], tolerance) for k in got)
    numbers = (int, float)
    if type(got) in numbers and type(want) in numbers and float in (type(got), type(want)):
        assert isinstance(got, int | float) and isinstance(want, int | float)
        try:
            return math.isclose(got, want, rel_tol=tolerance, abs_tol=tolerance)
        except OverflowError:  # an integer past any float
            return got == want
    return equal(got, want, None)
