"""The Python programs that run call-based and assert-style tests in the sandbox.

Each is the solution's source plus a small driver, run as one program. The
solution runs as a module named `__solution__`, so its `if __name__ ==
"__main__":` block (often a demo that reads input) does not run.

* call-based: standard input holds the JSON list of arguments; the driver
  calls the function (or `Solution().<name>`, LeetCode style; `typing`'s
  names are predefined, as LeetCode's signatures assume) and writes the
  return value as JSON after a per-answer mark. The expected value never
  enters the sandbox: the worker compares.
* assert-style (`plans.py` plans them): the calls driver makes the calls
  a plan recorded, with literal arguments, and writes each value as literal
  text of exact built-in types; the reference driver runs label code only,
  to record a plan or to reach the verdicts with those values. No driver
  that holds the solution holds an expected value. The statements driver,
  for suites that cannot be planned, runs the tests in the solution's own
  namespace (its verdicts are forgeable). Each driver writes one report per
  call or test after its mark and `done` last: a program that exits early
  leaves no `done` and fails.
"""

from __future__ import annotations

import contextlib
import json
import re
import secrets
import sys
import typing
from collections.abc import Iterator, Sequence
from typing import Literal

from reward_service.scorers.base import JSON

NOT_JSON = "!"
"""What a call-based driver writes after the mark for a value JSON cannot encode."""
DONE = "done"
"""What an assert driver writes after its last verdict: the tests ran to their end."""

_CALL = """\
import json as _json, os as _os, sys as _sys
_sys.set_int_max_str_digits(0)
_args = _json.loads(_sys.stdin.read())
_ns = {{"__name__": "__solution__", "__builtins__": __builtins__}}
for _name in {typing_names!r}:
    _ns[_name] = getattr(__import__("typing"), _name)
exec(compile({source!r}, "<solution>", "exec"), _ns)
_fn = _ns.get({name!r})
if _fn is None and isinstance(_ns.get("Solution"), type):
    _fn = getattr(_ns["Solution"](), {name!r}, None)
if not callable(_fn):
    raise SystemExit("the solution defines no function " + {name!r})
_value = _fn(*_args)
try:
    _text = _json.dumps(_value)
except (TypeError, ValueError, RecursionError):
    _text = {not_json!r}
_sys.stdout.flush()
_os.write(1, ("\\n" + {mark!r} + _text + "\\n").encode())
"""

_REPORT = """\
import ast as _ast, json as _json, os as _os, sys as _sys, traceback as _traceback
_sys.set_int_max_str_digits(0)
def _report(_value):
    _sys.stdout.flush()
    _os.write(1, ("\\n" + {mark!r} + _json.dumps(_value) + "\\n").encode())
def _literal(_v, _depth=0):
    _t = type(_v)
    if _depth > 100:
        raise ValueError("nested too deep")
    if _v is None or _t in (bool, int, str, bytes, complex):
        return repr(_v)
    if _t is float:
        if _v != _v:
            return "nan"
        return repr(_v) if abs(_v) != float("inf") else ("1e999" if _v > 0 else "-1e999")
    if _t in (list, tuple, set, frozenset):
        _items = ", ".join(_literal(_x, _depth + 1) for _x in _v)
        if _t is list:
            return "[" + _items + "]"
        if _t is tuple:
            return "(" + _items + ("," if len(_v) == 1 else "") + ")"
        return "{{" + _items + "}}" if _v else "set()"
    if _t is dict:
        _pairs = (_literal(_k, _depth + 1) + ": " + _literal(_x, _depth + 1)
                  for _k, _x in _v.items())
        return "{{" + ", ".join(_pairs) + "}}"
    raise TypeError("a value of type " + _t.__name__ + " is no literal")
def _failure():
    _kind, _error = _sys.exc_info()[:2]
    if _kind is AssertionError:
        return ["wrong_output", "AssertionError"]
    if _kind is MemoryError:
        return ["memory_limit", "MemoryError"]
    return ["runtime_error", _traceback.format_exc(limit=-1)[-300:]]
"""
"""What every driver starts with: its report writer, literal text of values, failure kinds."""

_CALLS = (
    _REPORT
    + """\
_calls = _json.loads(_sys.stdin.read())
_ns = {{"__name__": "__solution__", "__builtins__": __builtins__}}
exec(compile({source!r}, "<solution>", "exec"), _ns)
for _name, _args, _kwargs in _calls:
    try:
        if not callable(_ns.get(_name)):
            raise NameError("the solution defines no function " + _name)
        _value = _ns[_name](*_ast.literal_eval(_args), **_ast.literal_eval(_kwargs))
        try:
            _verdict = ["value", _literal(_value)]
        except (TypeError, ValueError, RecursionError) as _error:
            _verdict = ["wrong_output", str(_error)[:300]]
    except BaseException:
        _verdict = _failure()
    _report(_verdict)
    if {stop!r} and _verdict[0] != "value":
        break
_report({done!r})
"""
)

_REFERENCE = (
    _REPORT
    + """\
import math as _math, random as _random
class _Stop(BaseException):
    pass
_state = {{"calls": [], "stop": None}}
class _Pending:
    def __bool__(self):
        return True
    def __iter__(self):
        return iter(())
    def __len__(self):
        return 0
    def __int__(self):
        return 0
    def __index__(self):
        return 0
    def __float__(self):
        return 0.0
    def __hash__(self):
        return 0
    def __repr__(self):
        return "<pending>"
    def __format__(self, spec):
        return "<pending>"
    def __contains__(self, item):
        return True
def _absorb(self, *args, **kwargs):
    return self
for _op in ("eq ne lt le gt ge add radd sub rsub mul rmul truediv rtruediv floordiv rfloordiv "
            "mod rmod pow rpow neg pos abs invert and rand or ror xor rxor lshift rshift "
            "getitem call getattr round matmul divmod").split():
    setattr(_Pending, "__" + _op + "__", _absorb)
_PENDING = _Pending()
if {mode!r} == "verdict":
    _given = _json.loads(_sys.stdin.read())
def _called(_name, _args, _kwargs):
    try:
        _key = [_name, _literal(tuple(_args)), _literal(dict(_kwargs))]
    except (TypeError, ValueError, RecursionError):
        _key = None
    if {mode!r} == "plan":
        if _key is None:
            _state["stop"] = ["unplannable", "an argument of " + _name + " is no literal value"]
            raise _Stop()
        _state["calls"].append(_key)
        return _PENDING
    _k = len(_state["calls"])
    if _key is None or _k >= len(_given["calls"]) or _given["calls"][_k] != _key:
        _state["stop"] = ["diverged", _name]
        raise _Stop()
    _state["calls"].append(_key)
    _kind, _text = _given["results"][_k]
    if _kind != "value":
        _state["stop"] = ["solution", _kind, _text]
        raise _Stop()
    return _ast.literal_eval(_text)
def _stub(_name):
    return lambda *args, **kwargs: _called(_name, args, kwargs)
def _eq(a, b):
    if type(a) in (list, tuple) and type(a) is type(b):
        return len(a) == len(b) and all(map(_eq, a, b))
    if type(a) is dict and type(b) is dict:
        return a.keys() == b.keys() and all(_eq(a[k], b[k]) for k in a)
    numbers = (int, float)
    if type(a) in numbers and type(b) in numbers and float in (type(a), type(b)):
        try:
            return _math.isclose(a, b, rel_tol={tolerance!r}, abs_tol={tolerance!r})
        except OverflowError:
            return a == b
    return a == b
for _module in {modules!r}:
    globals()[_module] = __import__(_module)
for _name in {stubs!r}:
    globals()[_name] = _stub(_name)
_random.seed(0)
exec(compile({setup!r}, "<setup>", "exec"), globals())
_passed = ("ok", "planned")
for _i, _test in enumerate({tests!r}):
    _first = len(_state["calls"])
    try:
        exec(compile(_test, "<test %d>" % _i, "exec"), globals())
        _verdict = ["ok", ""]
    except BaseException:
        _verdict = _failure()
    if _state["stop"] is not None:
        _verdict, _state["stop"] = _state["stop"], None
    if {mode!r} == "plan" and _verdict[0] != "unplannable":
        _calls = _state["calls"][_first:]
        _verdict = ["planned", _calls] if _verdict[0] == "ok" else ["unplannable", _verdict[1]]
    _report(_verdict)
    if _verdict[0] in ("unplannable", "diverged") or {stop!r} and _verdict[0] not in _passed:
        break
_report({done!r})
"""
)

_STATEMENTS = (
    _REPORT
    + """\
_ns = {{"__name__": "__solution__", "__builtins__": __builtins__}}
exec(compile({source!r}, "<solution>", "exec"), _ns)
exec(compile({setup!r}, "<setup>", "exec"), _ns)
for _i, _test in enumerate({tests!r}):
    try:
        exec(compile(_test, "<test %d>" % _i, "exec"), _ns)
        _verdict = ["ok", ""]
    except BaseException:
        _verdict = _failure()
    _report(_verdict)
    if {stop!r} and _verdict[0] != "ok":
        break
_report({done!r})
"""
)


def new_mark() -> str:
    """A fresh mark separating a driver's result from the solution's own output."""
    return f"<<reward-service {secrets.token_hex(8)}>>"


def call_driver(source: str, fn_name: str, mark: str) -> str:
    """A program that calls `fn_name` with the arguments on its stdin, the result after `mark`.

    The solution's namespace holds what `from typing import *` would give it, of the names
    its source spells: all of them cost a run some 70 page faults (each name's object
    written to, a copy of its page), the few it uses nearly nothing."""
    return _CALL.format(
        source=source,
        name=fn_name,
        mark=mark,
        not_json=NOT_JSON,
        typing_names=sorted(set(_IDENTIFIER.findall(source)) & _TYPING_NAMES),
    )


_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_TYPING_NAMES = frozenset(typing.__all__)


def calls_driver(source: str, mark: str, stop: bool) -> str:
    """A program making the calls on its stdin (JSON `[name, args, kwargs]`, literal text)
    with the solution's functions, each value as literal text after `mark`."""
    return _CALLS.format(source=source, mark=mark, stop=stop, done=DONE)


def reference_driver(
    setup: str,
    tests: Sequence[str],
    names: tuple[Sequence[str], Sequence[str]],
    mark: str,
    mode: Literal["plan", "verdict"],
    stop: bool,
    tolerance: float | None = None,
) -> str:
    """A program of label code only: `setup`, then `tests`, each name of `names[0]` a
    stub and each module of `names[1]` imported, `random` seeded the same every run.

    `plan`: each stub records its call and answers a placeholder; the report per test is
    `["planned", calls]`, or `["unplannable", why]` for a call with no literal arguments.
    `verdict`: stdin holds the plan's calls and the solution's results; each stub answers
    its call's value (`["diverged", name]` for a call off the plan, `["solution", kind,
    text]` where the solution failed), and the report per test is its verdict. Tests
    compare with `_eq` (a float tolerance) where the worker wrote it in.
    """
    stubs, modules = names
    return _REFERENCE.format(
        setup=setup,
        tests=list(tests),
        stubs=list(stubs),
        modules=list(modules),
        mark=mark,
        mode=mode,
        stop=stop,
        tolerance=tolerance or 0.0,
        done=DONE,
    )


def statements_driver(source: str, setup: str, tests: Sequence[str], mark: str, stop: bool) -> str:
    """A program running `tests` as statements after `setup`, in the solution's namespace
    (forgeable: used only for suites that cannot be planned), a verdict per test."""
    return _STATEMENTS.format(
        source=source, setup=setup, tests=list(tests), mark=mark, stop=stop, done=DONE
    )


Reading = tuple[Literal["value", "not_json"], JSON]


def driver_results(stdout: bytes, mark: str) -> list[Reading]:
    """Each line a driver wrote after `mark`, in order: `("value", v)` or `("not_json", None)`.

    Integers of up to `BIG_INT_DIGITS` digits are read (a program may print them)."""
    readings: list[Reading] = []
    with big_ints():
        for piece in stdout.split(mark.encode())[1:]:
            line = piece.split(b"\n", 1)[0]
            try:
                readings.append(("value", json.loads(line)))
            except (ValueError, RecursionError):
                readings.append(("not_json", None))
    return readings


BIG_INT_DIGITS = 100_000
"""The longest integer the worker reads from a run: Python's default stops at 4,300 digits
(`factorial(5000)` has 16,326); reading costs grow with the square of the digits (0.07 s
at this bound, 6 s at a million, the most a 1 MiB output could hold)."""


@contextlib.contextmanager
def big_ints() -> Iterator[None]:
    """Within: integers of up to `BIG_INT_DIGITS` digits convert to and from text."""
    before = sys.get_int_max_str_digits()
    sys.set_int_max_str_digits(BIG_INT_DIGITS)
    try:
        yield
    finally:
        sys.set_int_max_str_digits(before)
