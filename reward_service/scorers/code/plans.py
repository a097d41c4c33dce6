"""Assert tests planned so that no expected value shares a process with the solution.

An assert suite (MBPP's `assert f(2) == 4`, HumanEval's `check(candidate)`)
is graded in runs that keep the solution and the label's code apart:

1. *plan* (label code only, once per label): the tests run with every name
   they call but do not define bound to a stub that records the call's
   arguments as literal text and answers a placeholder; asserts are
   evaluated, not checked. A suite whose tests all read `assert
   f(<literals>) == <literal>` (or `is True`, `not f(...)`, `f(...)`, a
   `set`/`sorted`/`tuple`/`list`/`frozenset` around the call) is planned
   here instead, from its syntax (`Tests.static`).
2. *calls* (the solution only): each planned call is made, its value
   written as literal text of exact built-in types.
3. *verdict* (label code only): the tests run for real, each stub answering
   the solution's value for its call, in order. Static plans are judged in
   the worker instead (`Check`), with no third run.

The solution never sees a test, a literal of one or the label's setup, only
its calls' arguments; the values it answers are data (literals) wherever
they are compared, so `__eq__` tricks, forged reports and early exits gain
nothing. A suite that cannot be planned (a call whose argument is the
result of another, a solution function used other than by calling it, an
argument that is no literal, a test that fails with placeholders) or whose
verdict run calls off the plan (control flow that depends on a result)
runs as statements in the solution's namespace instead: forgeable, and
reported as such (`docs/code.md`).
"""

from __future__ import annotations

import ast
import builtins
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Literal

from reward_service.scorers.code.compare import numbers_close
from reward_service.scorers.code.drivers import big_ints

_CANDIDATE = "candidate"
"""HumanEval's `check(candidate)` argument, renamed to the entry point when unfolded."""
_BUILTINS = frozenset(dir(builtins))
_MODULES = frozenset(sys.stdlib_module_names)
_WRAPPERS = {"set": set, "sorted": sorted, "tuple": tuple, "list": list, "frozenset": frozenset}
"""Builtins a static test may put around its call; the worker applies them to the value."""
_READ_ERRORS = (ValueError, TypeError, SyntaxError, RecursionError, MemoryError)


@dataclass(frozen=True)
class Call:
    """One call of a solution function: its name and arguments, as literal text."""

    name: str
    args: str
    """A tuple literal: the positional arguments."""
    kwargs: str
    """A dict literal: the keyword arguments."""

    def listed(self) -> list[str]:
        return [self.name, self.args, self.kwargs]


@dataclass(frozen=True)
class Check:
    """How the worker judges a statically planned test from its call's value."""

    relation: Literal["==", "is", "is not", "truthy", "falsy", "constant"]
    expected: object = None
    wrapper: str | None = None

    def holds(self, value: object, tolerance: float | None) -> bool:
        if self.relation == "constant":
            return bool(self.expected)
        if self.wrapper is not None:
            try:
                value = _WRAPPERS[self.wrapper](value)  # type: ignore[operator]
            except (TypeError, ValueError, RecursionError):
                return False
        if self.relation == "==":
            return equal(value, self.expected, tolerance)
        if self.relation == "is":
            return value is self.expected
        if self.relation == "is not":
            return value is not self.expected
        return bool(value) is (self.relation == "truthy")


@dataclass(frozen=True)
class StaticTest:
    calls: tuple[Call, ...]
    """None or one call."""
    check: Check


Plan = tuple[tuple[Call, ...], ...]
"""The calls each test makes, in order."""


@dataclass(frozen=True)
class Tests:
    """An assert suite ready to plan: the label's setup and one source per test."""

    setup: str
    sources: tuple[str, ...]
    static: tuple[StaticTest, ...] | None
    """Every test's call and check, when all are of a static shape."""
    stubs: tuple[str, ...]
    """The names the tests call and may not define: each is a stub in label-only runs."""
    modules: tuple[str, ...]
    """Standard modules the tests use but do not import (the solution would have)."""

    def plan(self) -> Plan | None:
        """The static plan, when there is one."""
        return None if self.static is None else tuple(test.calls for test in self.static)

    def plan_sources(self) -> tuple[str, ...]:
        """The tests with each assert only evaluated, for the plan run."""
        return tuple(_rewrite(source, _Evaluated()) for source in self.sources)

    def verdict_sources(self, tolerance: float | None) -> tuple[str, ...]:
        """The tests, `==` and `!=` through the driver's `_eq` when there is a tolerance."""
        if tolerance is None:
            return self.sources
        return tuple(_rewrite(source, _Tolerant()) for source in self.sources)


def prepare(tests: Sequence[str], setup: str, entry_point: str) -> Tests | None:
    """The suite as the plan runs it, or None when its code does not parse.

    A HumanEval suite (one `check(<entry>)` test, `check` defined in `setup`) is
    unfolded into the asserts of `check`, `candidate` renamed, when its body holds
    asserts only (constant ones such as `assert True` left out).
    """
    with big_ints():
        return _prepared(tests, setup, entry_point)


def _prepared(tests: Sequence[str], setup: str, entry_point: str) -> Tests | None:
    try:
        setup_tree = ast.parse(setup)
        trees = [ast.parse(test) for test in tests]
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    if entry_point and list(tests) == [f"check({entry_point})"]:
        unfolded = _unfolded_check(setup_tree, entry_point)
        if unfolded is not None:
            trees = unfolded
    sources = tuple(ast.unparse(tree) for tree in trees)
    bound, loaded, called = _names([setup_tree, *trees])
    statics = [_static(tree, bound) for tree in trees]
    static = None if None in statics else tuple(s for s in statics if s is not None)
    stubs = (loaded | called) - _BUILTINS - (_MODULES - called)
    modules = (loaded & _MODULES) - bound - called
    return Tests(setup, sources, static, tuple(sorted(stubs)), tuple(sorted(modules)))


def _unfolded_check(setup: ast.Module, entry_point: str) -> list[ast.Module] | None:
    checks = [n for n in setup.body if isinstance(n, ast.FunctionDef) and n.name == "check"]
    if len(checks) != 1 or [a.arg for a in checks[0].args.args] != [_CANDIDATE]:
        return None
    unfolded: list[ast.Module] = []
    for statement in checks[0].body:
        if isinstance(statement, ast.Pass) or (
            isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Constant)
        ):
            continue
        if not isinstance(statement, ast.Assert):
            return None
        if isinstance(statement.test, ast.Constant) and statement.test.value:
            continue
        renamed = _Rename(entry_point).visit(statement)
        unfolded.append(ast.Module([renamed], type_ignores=[]))
    return unfolded or None


class _Rename(ast.NodeTransformer):
    def __init__(self, entry_point: str) -> None:
        self._entry = entry_point

    def visit_Name(self, node: ast.Name) -> ast.Name:
        return ast.Name(self._entry, node.ctx) if node.id == _CANDIDATE else node


def _names(trees: Sequence[ast.AST]) -> tuple[set[str], set[str], set[str]]:
    """The names the code binds, the names it reads, and the names it calls directly."""
    bound: set[str] = set()
    loaded: set[str] = set()
    called: set[str] = set()
    for node in _walk(trees):
        if isinstance(node, ast.Name):
            (loaded if isinstance(node.ctx, ast.Load) else bound).add(node.id)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            bound.add(node.name)
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
        elif isinstance(node, ast.alias):
            bound.add((node.asname or node.name).split(".")[0])
        elif isinstance(node, ast.ExceptHandler | ast.MatchAs | ast.MatchStar) and node.name:
            bound.add(node.name)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            called.add(node.func.id)
    return bound, loaded - called, called


def _walk(trees: Sequence[ast.AST]) -> Iterator[ast.AST]:
    for tree in trees:
        yield from ast.walk(tree)


def _static(tree: ast.Module, bound: set[str]) -> StaticTest | None:
    """The test's call and check, when it is one assert of a static shape."""
    if len(tree.body) != 1 or not isinstance(tree.body[0], ast.Assert):
        return None
    test = tree.body[0].test
    if isinstance(test, ast.Constant):
        return StaticTest((), Check("constant", test.value))
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        call = _call(test.operand, bound)
        return None if call is None else StaticTest((call,), Check("falsy"))
    if isinstance(test, ast.Call):
        call = _call(test, bound)
        return None if call is None else StaticTest((call,), Check("truthy"))
    if not isinstance(test, ast.Compare) or len(test.ops) != 1:
        return None
    op, left, right = test.ops[0], test.left, test.comparators[0]
    if isinstance(op, ast.Is | ast.IsNot):
        call = _call(left, bound)
        if call is None or not isinstance(right, ast.Constant):
            return None
        if right.value not in (True, False, None) or type(right.value) not in (bool, type(None)):
            return None
        return StaticTest((call,), Check("is" if isinstance(op, ast.Is) else "is not", right.value))
    if not isinstance(op, ast.Eq):
        return None
    for expression, literal in ((left, right), (right, left)):
        readable, expected = _literal(literal)
        wrapper, inner = _unwrapped(expression, bound)
        call = _call(inner, bound)
        if readable and call is not None:
            return StaticTest((call,), Check("==", expected, wrapper))
    return None


def _unwrapped(node: ast.expr, bound: set[str]) -> tuple[str | None, ast.expr]:
    """`set(<call>)` and its like: the wrapper's name and the call; else (None, node)."""
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in _WRAPPERS
        and node.func.id not in bound
        and len(node.args) == 1
        and not node.keywords
    ):
        return node.func.id, node.args[0]
    return None, node


def _call(node: ast.expr, bound: set[str]) -> Call | None:
    """A call of a solution function (a name the label neither binds nor has built in)
    with literal arguments, as a `Call`; else None."""
    if (
        not isinstance(node, ast.Call)
        or not isinstance(node.func, ast.Name)
        or node.func.id in bound
        or node.func.id in _BUILTINS
        or any(isinstance(arg, ast.Starred) for arg in node.args)
        or any(keyword.arg is None for keyword in node.keywords)
    ):
        return None
    values = [*node.args, *(keyword.value for keyword in node.keywords)]
    if not all(_literal(value)[0] for value in values):
        return None
    args = ast.unparse(ast.Tuple(list(node.args), ast.Load()))
    keys: list[ast.expr | None] = [ast.Constant(k.arg) for k in node.keywords]
    kwargs = ast.unparse(ast.Dict(keys, [k.value for k in node.keywords]))
    return Call(node.func.id, args, kwargs)


def _literal(node: ast.expr) -> tuple[bool, object]:
    try:
        return True, ast.literal_eval(node)
    except _READ_ERRORS:
        return False, None


def _rewrite(source: str, transformer: ast.NodeTransformer) -> str:
    with big_ints():
        tree = transformer.visit(ast.parse(source))
        return ast.unparse(ast.fix_missing_locations(tree))


class _Evaluated(ast.NodeTransformer):
    """`assert x, msg` becomes `x`: with placeholders for values, a plan checks nothing."""

    def visit_Assert(self, node: ast.Assert) -> ast.Expr:
        return ast.Expr(self.visit(node.test))


class _Tolerant(ast.NodeTransformer):
    """`a == b` becomes `_eq(a, b)` and `a != b` `not _eq(a, b)`."""

    def visit_Compare(self, node: ast.Compare) -> ast.expr:
        self.generic_visit(node)
        if len(node.ops) != 1 or not isinstance(node.ops[0], ast.Eq | ast.NotEq):
            return node
        call = ast.Call(ast.Name("_eq", ast.Load()), [node.left, node.comparators[0]], [])
        return call if isinstance(node.ops[0], ast.Eq) else ast.UnaryOp(ast.Not(), call)


def read_value(text: object) -> tuple[bool, object]:
    """The value a driver wrote as literal text: `(True, value)`, or `(False, None)`."""
    if not isinstance(text, str):
        return False, None
    try:
        with big_ints():
            return True, ast.literal_eval(text)
    except _READ_ERRORS:
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
    if type(got) in numbers and type(want) in numbers:
        assert isinstance(got, int | float) and isinstance(want, int | float)
        return numbers_close(got, want, tolerance)
    return equal(got, want, None)
