"""Test suites from labels, in the formats of the public code-RL datasets.

A label is a JSON object, or a JSON string holding one (a list is read as
LiveCodeBench's test list). A label object routed with `{"scorer": "code",
...}` may carry its tests beside `scorer` instead of under `answer`: then
they arrive as options, and are read from there. The formats:

* standard input/output: `{"inputs": [...], "outputs": [...]}` (APPS, TACO;
  also under `input_output`, itself an object or a JSON string, as APPS
  stores it), or CodeContests' `{"input": [...], "output": [...]}`, alone
  or as `public_tests`, `private_tests`, `generated_tests` (all of them run);
* call-based: the same with `fn_name`; each input is the list of arguments,
  each output the expected return value;
* LiveCodeBench: a list of `{"input", "output", "testtype"}` (under
  `tests`, `test_cases`, `public_test_cases`/`private_test_cases` or as the
  label itself; open-r1's `verification_info.test_cases` with `type`
  `stdin_stdout` too); `functional` inputs are newline-separated JSON
  arguments and outputs JSON values, the function named by `fn_name` or by
  `func_name` in `metadata` (an object or a JSON string) of the label or of
  its first test (rLLM/DeepCoder put it there); a list mixes no test types;
* assert-style: `tests` or `test_list` (a string of statements, or a list of
  them, MBPP) with optional `test_imports` and `test_setup_code`, or `test`
  and `entry_point` (HumanEval: `test` defines `check(candidate)`);
* MultiPL-E: `tests` a string of code in the program's own `language` (not
  `python`, which is assert-style; MultiPL-E's `py` is a harness), with optional
  `stop_tokens`: a harness run after the program (`harness.py`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Literal

from reward_service.scorers.base import JSON, echo

Style = Literal["stdin", "call", "assert", "harness"]

MAX_TESTS = 1_000
"""Tests one label may hold; past it the label is unreadable."""
_LCB_KEYS = ("tests", "test_cases", "public_test_cases", "private_test_cases")
_NESTING_KEYS = ("input_output", "verification_info")
"""Keys whose object (or JSON string of one) holds the tests: APPS's, open-r1's."""
_TEST_TYPES = {None: "stdin", "stdin_stdout": "stdin"}
"""Test types other datasets name otherwise (open-r1's `stdin_stdout`), as LiveCodeBench's."""
_CONTESTS_KEYS = ("public_tests", "private_tests", "generated_tests")
_PYTHON = frozenset({"python", "python3"})
"""`language`s whose `tests` string stays assert-style (MultiPL-E's own Python is `py`)."""
"""CodeContests' test sets, each `{"input": [...], "output": [...]}`."""


class LabelError(ValueError):
    """A label that holds no test suite this scorer can read; the message says why."""


@dataclass(frozen=True)
class Suite:
    """The tests of one label.

    `stdin`: `inputs` are standard inputs, `expected` the outputs (text).
    `call`: `inputs` are JSON argument lists, `expected` the return values.
    `assert`: `inputs` are test statements (Python source); `setup` runs first.
    `harness`: `inputs` is the harness, in `language`; `stop_tokens` cut the program.
    """

    style: Style
    inputs: tuple[str, ...]
    expected: tuple[JSON, ...] = ()
    fn_name: str = ""
    setup: str = ""
    spec: Mapping[str, JSON] = field(default_factory=dict)
    """The label object the tests came from, for the options it carries."""
    language: str = ""
    """A harness's language, as the label names it (MultiPL-E's `java`, `js`, `rs`...)."""
    stop_tokens: tuple[str, ...] = ()


def _decoded(value: JSON, what: str) -> JSON:
    if isinstance(value, str):
        try:
            return json.loads(value)
        except (ValueError, RecursionError) as exc:
            raise LabelError(f"{what} is a string but not JSON: {exc}") from None
    return value


def _text(value: JSON, what: str) -> str:
    """A standard input or output: a string, or a list of lines (APPS writes both)."""
    if isinstance(value, str):
        return value
    if isinstance(value, list) and all(isinstance(line, str) for line in value):
        return "\n".join(value)
    raise LabelError(f"{what} is neither a string nor a list of strings")


def _args(value: JSON, what: str) -> str:
    if not isinstance(value, list):
        raise LabelError(f"{what} is not a list of arguments")
    return json.dumps(value)


def _listed(tests: Mapping[str, JSON], key: str) -> list[JSON]:
    value = tests.get(key, [])
    if not isinstance(value, list):
        raise LabelError(f"{key} of a CodeContests test set is not a list")
    return value


def _count(n: int) -> None:
    if n == 0:
        raise LabelError("label holds no tests")
    if n > MAX_TESTS:
        raise LabelError(f"label holds {n} tests, more than {MAX_TESTS}")


def _fn_name(spec: Mapping[str, JSON]) -> str:
    name = spec.get("fn_name") or spec.get("entry_point")
    if not name:
        metadata = _decoded(spec.get("metadata"), "metadata")
        name = metadata.get("func_name") if isinstance(metadata, dict) else None
    if name is None:
        return ""
    if not isinstance(name, str) or not name.isidentifier():
        raise LabelError(f"function name {echo(name)} is not an identifier")
    return name


def _io_suite(spec: Mapping[str, JSON]) -> Suite:
    inputs, outputs = spec.get("inputs"), spec.get("outputs")
    if not isinstance(inputs, list) or not isinstance(outputs, list):
        raise LabelError("inputs and outputs must be lists")
    if len(inputs) != len(outputs):
        raise LabelError(f"{len(inputs)} inputs but {len(outputs)} outputs")
    _count(len(inputs))
    fn_name = _fn_name(spec)
    if fn_name:
        args = tuple(_args(value, f"input {i}") for i, value in enumerate(inputs))
        return Suite("call", args, tuple(outputs), fn_name)
    texts = tuple(_text(value, f"input {i}") for i, value in enumerate(inputs))
    wanted = tuple(_text(value, f"output {i}") for i, value in enumerate(outputs))
    return Suite("stdin", texts, wanted)


def _functional(case: Mapping[str, JSON], i: int) -> tuple[str, JSON]:
    source = _text(case.get("input"), f"test {i} input")
    try:
        args = [json.loads(line) for line in source.split("\n") if line.strip()]
        return json.dumps(args), json.loads(_text(case.get("output"), f"test {i} output"))
    except (ValueError, RecursionError) as exc:
        raise LabelError(f"functional test {i} is not JSON: {exc}") from None


def _listed_suite(cases: list[JSON], spec: Mapping[str, JSON]) -> Suite:
    _count(len(cases))
    if not all(isinstance(case, dict) for case in cases):
        raise LabelError("a test list holds something other than objects")
    types = {_TEST_TYPES.get(t, t) for t in (c.get("testtype", c.get("type")) for c in cases)}
    if len(types) != 1 or not types <= {"stdin", "functional"}:
        raise LabelError(f"test types {sorted(map(str, types))} are not one of stdin, functional")
    if types == {"stdin"}:
        inputs = tuple(_text(c.get("input"), f"test {i} input") for i, c in enumerate(cases))
        outputs = tuple(_text(c.get("output"), f"test {i} output") for i, c in enumerate(cases))
        return Suite("stdin", inputs, outputs)
    fn_name = _fn_name(spec) or _fn_name(cases[0])
    if not fn_name:
        raise LabelError("functional tests need fn_name or metadata.func_name")
    pairs = [_functional(case, i) for i, case in enumerate(cases)]
    return Suite("call", tuple(a for a, _ in pairs), tuple(o for _, o in pairs), fn_name)


def _statements(value: JSON, what: str) -> tuple[str, tuple[str, ...]]:
    """Setup code and test chunks: each chunk runs from a top-level `assert` to the next."""
    if isinstance(value, list) and all(isinstance(t, str) for t in value):
        return "", tuple(t for t in value if t.strip())
    if not isinstance(value, str):
        raise LabelError(f"{what} is neither a string nor a list of strings")
    chunks: list[list[str]] = [[]]
    for line in value.split("\n"):
        if line.startswith("assert") and not line[6:7].isidentifier():
            chunks.append([])
        chunks[-1].append(line)
    setup, *tests = ("\n".join(chunk).strip() for chunk in chunks)
    return setup, tuple(tests)


def _joined(*parts: str) -> str:
    """Source parts, one after another, the empty ones left out."""
    return "\n".join(part for part in parts if part.strip())


def _assert_suite(spec: Mapping[str, JSON]) -> Suite:
    imports = spec.get("test_imports") or []
    setup = spec.get("test_setup_code") or ""
    if isinstance(imports, str):
        imports = [imports]
    if not (isinstance(imports, list) and all(isinstance(s, str) for s in imports)):
        raise LabelError("test_imports is not a list of strings")
    if not isinstance(setup, str):
        raise LabelError("test_setup_code is not a string")
    prelude = _joined(*imports, setup)
    if "test" in spec:
        test, entry = spec.get("test"), _fn_name(spec)
        if not isinstance(test, str) or not entry:
            raise LabelError("a HumanEval label needs test (a string) and entry_point")
        return Suite("assert", (f"check({entry})",), (), entry, _joined(prelude, test))
    key = "tests" if "tests" in spec else "test_list"
    setup, tests = _statements(spec[key], key)
    _count(len(tests))
    return Suite("assert", tests, (), "", _joined(prelude, setup))


def _harness_suite(spec: Mapping[str, JSON], tests: str, language: str) -> Suite:
    stops = spec.get("stop_tokens") or []
    if not (isinstance(stops, list) and all(isinstance(s, str) for s in stops)):
        raise LabelError("stop_tokens is not a list of strings")
    if not tests.strip():
        raise LabelError("label holds no tests")
    return Suite("harness", (tests,), language=language, stop_tokens=tuple(stops))


def _test_list(spec: Mapping[str, JSON], key: str) -> list[JSON]:
    """The LiveCodeBench test objects under `key`, or [] when it holds none."""
    value = spec.get(key)
    if isinstance(value, str) and not value.lstrip().startswith("["):
        if key == "private_test_cases" and value.strip():
            raise LabelError(
                "private_test_cases is not a JSON list (LiveCodeBench ships it pickled, which "
                "this service never loads): store it decoded"
            )
        return []
    value = _decoded(value, key)
    if isinstance(value, list) and value and all(isinstance(case, dict) for case in value):
        return value
    return []


def read_suite(label: JSON, options: Mapping[str, JSON]) -> Suite:
    """The test suite a label holds (its tests may sit in `options`); raises `LabelError`."""
    spec = _decoded(label, "label")
    suite = _suite(spec, options)
    return replace(suite, spec=spec) if isinstance(spec, dict) else suite


def _suite(spec: JSON, options: Mapping[str, JSON]) -> Suite:
    if spec is None:
        if not options:
            raise LabelError("label is null and holds no tests")
        spec = dict(options)
    if isinstance(spec, list):
        return _listed_suite(spec, options)
    if not isinstance(spec, dict):
        raise LabelError(f"label of type {type(spec).__name__} holds no tests")
    for key in _NESTING_KEYS:
        if key in spec:
            nested = _decoded(spec[key], key)
            if not isinstance(nested, dict):
                raise LabelError(f"{key} holds no object")
            spec = {**spec, **nested}
    if "inputs" in spec or "outputs" in spec:
        return _io_suite(spec)
    contests = [spec[key] for key in _CONTESTS_KEYS if isinstance(spec.get(key), dict)]
    if contests or isinstance(spec.get("input"), list):
        inputs = [i for tests in contests or [spec] for i in _listed(tests, "input")]
        outputs = [o for tests in contests or [spec] for o in _listed(tests, "output")]
        return _io_suite({**spec, "inputs": inputs, "outputs": outputs})
    listed = [case for key in _LCB_KEYS for case in _test_list(spec, key)]
    if listed:
        return _listed_suite(listed, spec)
    tests, language = spec.get("tests"), spec.get("language")
    if isinstance(tests, str) and isinstance(language, str) and language.lower() not in _PYTHON:
        return _harness_suite(spec, tests, language)
    if "tests" in spec or "test_list" in spec or "test" in spec:
        return _assert_suite(spec)
    raise LabelError(
        "label holds none of inputs/outputs, a test list, tests/test_list or test/entry_point"
    )
