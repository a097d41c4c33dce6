"""Reading test suites from labels: every dataset format, and the labels that hold none."""

from __future__ import annotations

import json
from typing import Any

import pytest

from reward_service.scorers.base import JSON
from reward_service.scorers.code.cases import LabelError, Suite, read_suite

IO = {"inputs": ["1\n", "2\n"], "outputs": ["2\n", "4\n"]}
LCB_STDIN = [{"input": "1\n", "output": "2\n", "testtype": "stdin"}]
LCB_CALL = [{"input": "[1, 2]\n3", "output": "[1, 2, 3]", "testtype": "functional"}]

SUITES: list[tuple[JSON, dict[str, Any], Suite]] = [
    (IO, {}, Suite("stdin", ("1\n", "2\n"), ("2\n", "4\n"))),
    (json.dumps(IO), {}, Suite("stdin", ("1\n", "2\n"), ("2\n", "4\n"))),
    ({"input_output": json.dumps(IO)}, {}, Suite("stdin", ("1\n", "2\n"), ("2\n", "4\n"))),
    ({"inputs": [["1", "2"]], "outputs": [["3"]]}, {}, Suite("stdin", ("1\n2",), ("3",))),
    (
        {"inputs": [[1, 2]], "outputs": [[3]], "fn_name": "add"},
        {},
        Suite("call", ("[1, 2]",), ([3],), "add"),
    ),
    (LCB_STDIN, {}, Suite("stdin", ("1\n",), ("2\n",))),
    ({"input": ["1\n"], "output": ["2\n"]}, {}, Suite("stdin", ("1\n",), ("2\n",))),
    (
        {
            "public_tests": {"input": ["1\n"], "output": ["2\n"]},
            "private_tests": {"input": [], "output": []},
            "generated_tests": {"input": ["2\n"], "output": ["4\n"]},
        },
        {},
        Suite("stdin", ("1\n", "2\n"), ("2\n", "4\n")),
    ),
    (
        {"public_test_cases": json.dumps(LCB_CALL), "metadata": '{"func_name": "push"}'},
        {},
        Suite("call", ("[[1, 2], 3]",), ([1, 2, 3],), "push"),
    ),
    (LCB_CALL, {"fn_name": "push"}, Suite("call", ("[[1, 2], 3]",), ([1, 2, 3],), "push")),
    (
        [{**LCB_CALL[0], "metadata": {"func_name": "push"}}],
        {},
        Suite("call", ("[[1, 2], 3]",), ([1, 2, 3],), "push"),
    ),
    (None, dict(IO), Suite("stdin", ("1\n", "2\n"), ("2\n", "4\n"))),
    (
        {"tests": "assert f(1) == 2\nassert f(\n    2\n) == 3\n"},
        {},
        Suite("assert", ("assert f(1) == 2", "assert f(\n    2\n) == 3"), ()),
    ),
    (
        {"tests": "import math\nassert f(1) == 2"},
        {},
        Suite("assert", ("assert f(1) == 2",), (), setup="import math"),
    ),
    (
        {"test_list": ["assert f(1) == 2"], "test_imports": ["import math"]},
        {},
        Suite("assert", ("assert f(1) == 2",), (), setup="import math"),
    ),
    (
        {"test": "def check(candidate):\n    assert candidate(1) == 2\n", "entry_point": "f"},
        {},
        Suite(
            "assert",
            ("check(f)",),
            (),
            "f",
            "def check(candidate):\n    assert candidate(1) == 2\n",
        ),
    ),
]


@pytest.mark.parametrize(("label", "options", "suite"), SUITES)
def test_each_dataset_format_reads_as_its_suite(
    label: JSON, options: dict[str, Any], suite: Suite
) -> None:
    """Every supported label format gives the tests, expected values and function it holds."""
    read = read_suite(label, options)
    assert (read.style, read.inputs, read.expected, read.fn_name, read.setup) == (
        suite.style,
        suite.inputs,
        suite.expected,
        suite.fn_name,
        suite.setup,
    )


UNREADABLE: list[tuple[JSON, str]] = [
    (None, "null"),
    (7, "holds no tests"),
    ("not json", "not JSON"),
    ({"inputs": ["1"], "outputs": []}, "1 inputs but 0 outputs"),
    ({"inputs": [], "outputs": []}, "no tests"),
    ({"inputs": "1", "outputs": "2"}, "must be lists"),
    ({"inputs": [1], "outputs": ["2"]}, "neither a string"),
    ({"inputs": [1], "outputs": [2], "fn_name": "f"}, "not a list of arguments"),
    ({"inputs": [[1]], "outputs": [2], "fn_name": "no such"}, "not an identifier"),
    (LCB_CALL, "need fn_name"),
    ([*LCB_STDIN, *LCB_CALL], "are not one of"),
    (
        {"tests": [{"input": "x\n", "output": "1", "testtype": "functional"}], "fn_name": "f"},
        "not JSON",
    ),
    ({"public_test_cases": "[]", "private_test_cases": "eJzLSM3JyQcABiwCFQ=="}, "pickled"),
    ({"test": "def check(c): pass"}, "entry_point"),
    ({"tests": "x = 1"}, "no tests"),
    ({"inputs": [["1"]] * 1001, "outputs": [["1"]] * 1001}, "more than 1000"),
    ({"answer": 3}, "holds none of"),
    ({"public_tests": {"input": "1", "output": "2"}}, "not a list"),
]


@pytest.mark.parametrize(("label", "reason"), UNREADABLE)
def test_labels_without_readable_tests_say_why(label: JSON, reason: str) -> None:
    """A label that holds no suite raises `LabelError` naming the problem."""
    with pytest.raises(LabelError, match=reason):
        read_suite(label, {})
