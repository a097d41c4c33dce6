"""The Python programs that run call-based and assert-style tests in the sandbox.

Each is the solution's source plus a small driver, run as one program. The
solution runs as a module named `__solution__`, so its `if __name__ ==
"__main__":` block (often a demo that reads input) does not run.

* call-based: standard input holds the JSON list of arguments; the driver
  calls the function (or `Solution().<name>`, LeetCode style; `typing`'s
  names are predefined, as LeetCode's signatures assume) and writes the
  return value as JSON after a per-answer mark. The expected value never
  enters the sandbox: the worker compares.
* assert-style: the driver runs the tests one by one in the solution's
  namespace and writes one report per test after the mark, `done` last: a
  program that exits early (`sys.exit`, `os._exit`) leaves no `done` and
  fails. A lifted test (`lifted.py`: `assert <expr> == <literal>`) is only
  its expression here, and the report is its value as literal text of exact
  built-in types, which the worker compares; any other test runs as a
  statement and the report is its verdict, made inside the program's own
  process (a solution that forges it could pass those).
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Sequence
from typing import Literal

from reward_service.scorers.base import JSON

NOT_JSON = "!"
"""What a call-based driver writes after the mark for a value JSON cannot encode."""
DONE = "done"
"""What an assert driver writes after its last verdict: the tests ran to their end."""

_CALL = """\
import json as _json, os as _os, sys as _sys
_args = _json.loads(_sys.stdin.read())
_ns = {{"__name__": "__solution__", "__builtins__": __builtins__}}
exec("from typing import *", _ns)
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

_ASSERT = """\
import json as _json, os as _os, sys as _sys, traceback as _traceback
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
_ns = {{"__name__": "__solution__", "__builtins__": __builtins__}}
exec(compile({source!r}, "<solution>", "exec"), _ns)
exec(compile({setup!r}, "<setup>", "exec"), _ns)
for _i, (_test, _lifted) in enumerate({tests!r}):
    try:
        if _lifted:
            _value = eval(compile(_test, "<test %d>" % _i, "eval"), _ns)
            try:
                _verdict = ["value", _literal(_value)]
            except (TypeError, ValueError, RecursionError) as _error:
                _verdict = ["wrong_output", str(_error)[:300]]
        else:
            exec(compile(_test, "<test %d>" % _i, "exec"), _ns)
            _verdict = ["ok", ""]
    except AssertionError:
        _verdict = ["wrong_output", "AssertionError in " + _test[:300]]
    except MemoryError:
        _verdict = ["memory_limit", "MemoryError"]
    except BaseException:
        _verdict = ["runtime_error", _traceback.format_exc(limit=-1)[-300:]]
    _report(_verdict)
    if {stop!r} and _verdict[0] not in ("ok", "value"):
        break
_report({done!r})
"""


def new_mark() -> str:
    """A fresh mark separating a driver's result from the solution's own output."""
    return f"<<reward-service {secrets.token_hex(8)}>>"


def call_driver(source: str, fn_name: str, mark: str) -> str:
    """A program that calls `fn_name` with the arguments on its stdin, the result after `mark`."""
    return _CALL.format(source=source, name=fn_name, mark=mark, not_json=NOT_JSON)


def assert_driver(
    source: str, setup: str, tests: Sequence[tuple[str, bool]], mark: str, stop: bool
) -> str:
    """A program running `tests` after `setup` in the solution namespace, reports after `mark`.

    Each test is `(source, lifted)`: an expression whose value is reported, or a statement
    whose verdict is.
    """
    listed = [(test, lifted) for test, lifted in tests]
    return _ASSERT.format(source=source, setup=setup, tests=listed, mark=mark, stop=stop, done=DONE)


Reading = tuple[Literal["value", "not_json"], JSON]


def driver_results(stdout: bytes, mark: str) -> list[Reading]:
    """Each line a driver wrote after `mark`, in order: `("value", v)` or `("not_json", None)`."""
    readings: list[Reading] = []
    for piece in stdout.split(mark.encode())[1:]:
        line = piece.split(b"\n", 1)[0]
        try:
            readings.append(("value", json.loads(line)))
        except (ValueError, RecursionError):
            readings.append(("not_json", None))
    return readings
