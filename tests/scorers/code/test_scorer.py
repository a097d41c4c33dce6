"""The `code` scorer end to end: programs run against every label format, options and details."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from reward_service.errors import SandboxUnavailable
from reward_service.sandbox import Kind, Outcome, Program
from reward_service.scorers.base import JSON, Status
from reward_service.scorers.code.drivers import big_ints
from reward_service.scorers.code.sandboxed import default_sandbox
from reward_service.scorers.code.scorer import MAX_PROGRAM_CHARS, CodeScorer
from reward_service.scorers.code.settings import CodeSettings
from reward_service.testing import RecordingSandbox

ARGS = [1, 4, 7]
"""The tests' inputs; a wrong solution is right on the first two only."""


def _fenced(source: str) -> str:
    return f"<think>\nTriple it.\n</think>\nSure:\n```python\n{source}\n```\n"


STDIN_OK = "print(3 * int(input()))"
STDIN_BAD = "x = int(input())\nprint(3 * x if x < 5 else x)"
CALL_OK = "def triple(x):\n    return 3 * x"
CALL_BAD = "def triple(x):\n    return 3 * x if x < 5 else x"
CLASS_OK = "class Solution:\n    def triple(self, x: int) -> int:\n        return 3 * x"
CLASS_BAD = "class Solution:\n    def triple(self, x: List[int]) -> int:\n        return x"
IO = {"inputs": [f"{x}\n" for x in ARGS], "outputs": [f"{3 * x}\n" for x in ARGS]}
CALL = {"inputs": [[x] for x in ARGS], "outputs": [3 * x for x in ARGS], "fn_name": "triple"}
LCB_STDIN = [{"input": f"{x}\n", "output": f"{3 * x}\n"} for x in ARGS]
LCB_CALL = [{"input": f"{x}", "output": f"{3 * x}", "testtype": "functional"} for x in ARGS]
ASSERTS = "\n".join(f"assert triple({x}) == {3 * x}" for x in ARGS)
CHECK = "def check(candidate):\n" + "".join(f"    assert candidate({x}) == {3 * x}\n" for x in ARGS)

FORMATS: dict[str, tuple[JSON, dict[str, JSON], str, str]] = {
    "stdin": (IO, {}, STDIN_OK, STDIN_BAD),
    "stdin-json-string": (json.dumps(IO), {}, STDIN_OK, STDIN_BAD),
    "stdin-apps-input_output": ({"input_output": json.dumps(IO)}, {}, STDIN_OK, STDIN_BAD),
    "stdin-beside-scorer": (None, dict(IO), STDIN_OK, STDIN_BAD),
    "stdin-codecontests": (
        {
            "public_tests": {"input": IO["inputs"][:1], "output": IO["outputs"][:1]},
            "private_tests": {"input": IO["inputs"][1:], "output": IO["outputs"][1:]},
        },
        {},
        STDIN_OK,
        STDIN_BAD,
    ),
    "stdin-open-r1": (
        {
            "verification_info": {
                "language": "python",
                "test_cases": [{**case, "type": "stdin_stdout"} for case in LCB_STDIN],
            }
        },
        {},
        STDIN_OK,
        STDIN_BAD,
    ),
    "call": (CALL, {}, CALL_OK, CALL_BAD),
    "call-apps-wrapped": ({**CALL, "outputs": [[3 * x] for x in ARGS]}, {}, CALL_OK, CALL_BAD),
    "call-class-solution": (CALL, {}, CLASS_OK, CLASS_BAD),
    "livecodebench-stdin": (LCB_STDIN, {}, STDIN_OK, STDIN_BAD),
    "livecodebench-functional": (
        {"public_test_cases": json.dumps(LCB_CALL), "metadata": '{"func_name": "triple"}'},
        {},
        CLASS_OK,
        CLASS_BAD,
    ),
    "mbpp-tests": ({"tests": ASSERTS}, {}, CALL_OK, CALL_BAD),
    "mbpp-test_list": (
        {"test_list": ASSERTS.split("\n"), "test_imports": ["import math"]},
        {},
        CALL_OK,
        CALL_BAD,
    ),
    "humaneval": ({"test": CHECK, "entry_point": "triple"}, {}, CALL_OK, CALL_BAD),
}


@pytest.mark.parametrize("name", list(FORMATS))
def test_correct_solution_passes_in_every_format(scorer: CodeScorer, name: str) -> None:
    """A correct program earns 1.0 (`ok`) under every label format."""
    label, options, good, _ = FORMATS[name]
    score = scorer.score("p", _fenced(good), label, options)
    assert (score.reward, score.status, score.details["first_failure"]) == (1.0, Status.OK, None)


@pytest.mark.parametrize("name", list(FORMATS))
def test_wrong_solution_fails_in_every_format(scorer: CodeScorer, name: str) -> None:
    """A program wrong on one test earns 0.0 (`wrong`) under every label format."""
    label, options, _, bad = FORMATS[name]
    score = scorer.score("p", _fenced(bad), label, options)
    assert (score.reward, score.status) == (0.0, Status.WRONG)
    assert score.details["first_failure"]["kind"] == "wrong_output"


def test_detail_reports_tests_format_language_and_layers(scorer: CodeScorer) -> None:
    """The details name the passed and total tests, the first failure, format, language, layers."""
    score = scorer.score("p", _fenced(STDIN_BAD), IO, {})
    assert {k: score.details[k] for k in ("passed", "total", "format", "language")} == {
        "passed": 2,
        "total": 3,
        "format": "stdin",
        "language": "python",
    }
    assert score.details["first_failure"] == {"test": 2, "kind": "wrong_output", "stderr": ""}
    assert score.details["sandbox"] == list(scorer.sandbox.layers)


KINDS = [
    ("x = int(input())\nif x == 4:\n    raise ValueError('four')\nprint(3 * x)", "runtime_error"),
    ("x = int(input())\nwhile x == 4:\n    pass\nprint(3 * x)", "time_limit"),
    ("x = int(input())\nprint('y' * (3 * 2**20) if x == 4 else 3 * x)", "output_limit"),
    ("x = int(input())\nblob = bytearray(2**40) if x == 4 else b''\nprint(3 * x)", "memory_limit"),
]


@pytest.mark.parametrize(("source", "kind"), KINDS)
def test_first_failure_names_its_kind_and_test(scorer: CodeScorer, source: str, kind: str) -> None:
    """A run that crashes, loops, floods or runs out of memory fails with that kind, on its test."""
    score = scorer.score("p", _fenced(source), {**IO, "time_limit_s": 1.0}, {})
    assert score.reward == 0.0
    assert (score.details["first_failure"]["test"], score.details["first_failure"]["kind"]) == (
        1,
        kind,
    )


def test_runtime_error_keeps_an_excerpt_of_stderr(scorer: CodeScorer) -> None:
    """A crash's first failure carries the tail of its traceback."""
    score = scorer.score("p", _fenced("raise ValueError('boom')"), IO, {})
    assert "ValueError: boom" in score.details["first_failure"]["stderr"]


@pytest.mark.parametrize("name", ["stdin", "call", "mbpp-tests"])
def test_partial_gives_the_fraction_passed(scorer: CodeScorer, name: str) -> None:
    """With `partial`, a program right on two tests of three earns 2/3 and the run goes on."""
    label, options, _, bad = FORMATS[name]
    score = scorer.score("p", _fenced(bad), label, {**options, "partial": "1"})
    assert (score.reward, score.status, score.details["passed"]) == (2 / 3, Status.WRONG, 2)


def test_call_based_return_value_is_judged_apart_from_prints(scorer: CodeScorer) -> None:
    """The solution's own prints neither fail a right return value nor pass a wrong one."""
    chatty = "def triple(x):\n    print('debug', 3 * x)\n    return 3 * x"
    mimic = "def triple(x):\n    print(3 * x)\n    return None"
    assert scorer.score("p", _fenced(chatty), CALL, {}).reward == 1.0
    assert scorer.score("p", _fenced(mimic), CALL, {}).reward == 0.0


@pytest.mark.parametrize(
    "source",
    [
        f"{CALL_OK}\nimport sys\nsys.exit(0)",
        f"{CALL_OK}\nimport os\nos._exit(0)",
        "def triple(x):\n    import os\n    os._exit(0)",
        "def triple(x):\n    raise SystemExit(0)",
    ],
)
def test_assert_tests_fail_a_program_that_exits_before_they_end(
    scorer: CodeScorer, source: str
) -> None:
    """An assert-style program that exits with status 0 before its tests finish earns 0.0."""
    score = scorer.score("p", _fenced(source), {"tests": ASSERTS}, {})
    assert (score.reward, score.details["first_failure"]["kind"]) == (0.0, "runtime_error")


def test_call_based_solutions_find_typing_s_names(scorer: CodeScorer) -> None:
    """What LeetCode's signatures use without importing (`typing`'s names, as `from typing
    import *` gives them) is defined for the solution, however rare the name."""
    source = (
        "class Solution:\n"
        "    def triple(self, x: Optional[int], f: Callable[[int], int] = None,\n"
        "               q: Deque[int] = None, d: DefaultDict[str, List[int]] = None) -> int:\n"
        "        return 3 * x\n"
    )
    assert scorer.score("p", _fenced(source), CALL, {}).reward == 1.0


def test_call_based_tests_fail_a_program_that_exits_before_returning(scorer: CodeScorer) -> None:
    """A call-based program that exits with status 0 instead of returning earns 0.0."""
    score = scorer.score("p", _fenced("import os\nos._exit(0)"), CALL, {})
    assert (score.reward, score.details["first_failure"]["kind"]) == (0.0, "runtime_error")


def test_float_tolerance_option_accepts_close_outputs(scorer: CodeScorer) -> None:
    """Outputs off in the seventh digit fail by default and pass with `float_tolerance=1e-6`."""
    label = {"inputs": ["3\n"], "outputs": ["0.333333333\n"]}
    program = _fenced("print(round(1 / int(input()), 7))")
    assert scorer.score("p", program, label, {}).reward == 0.0
    assert scorer.score("p", program, label, {"float_tolerance": "1e-6"}).reward == 1.0


@pytest.mark.parametrize(
    ("response", "reason"),
    [
        ("print(1)", "no closed"),
        ("```python\nprint(1)", "no closed"),
        (_fenced("x = 1\n" * MAX_PROGRAM_CHARS), "longer than"),
    ],
)
def test_response_without_a_program_is_no_answer(
    scorer: CodeScorer, response: str, reason: str
) -> None:
    """No closed code block, or one past the size cap: `no_answer`, reward 0.0."""
    score = scorer.score("p", response, IO, {})
    assert (score.reward, score.status) == (0.0, Status.NO_ANSWER)
    assert reason in score.details["reason"]


@pytest.mark.parametrize(
    ("label", "options", "reason"),
    [
        ("not json", {}, "not JSON"),
        (None, {}, "null"),
        ({"inputs": ["1"], "outputs": []}, {}, "outputs"),
        (IO, {"partial": "maybe"}, "partial"),
        (IO, {"time_limit_s": "soon"}, "time_limit_s"),
        ({**IO, "memory_mb": -5}, {}, "memory_mb"),
        (IO, {"float_tolerance": "2"}, "float_tolerance"),
    ],
)
def test_unreadable_label_or_option_is_error(
    scorer: CodeScorer, label: JSON, options: dict[str, JSON], reason: str
) -> None:
    """A label holding no tests or an option that cannot be used: `error`, with the reason."""
    score = scorer.score("p", _fenced(STDIN_OK), label, options)
    assert (score.reward, score.status) == (0.0, Status.ERROR)
    assert reason in score.details["reason"]


@pytest.mark.parametrize(
    ("name", "value", "refused"),
    [
        ("partial", "1", False),
        ("partial", "maybe", True),
        ("float_tolerance", "1e-6", False),
        ("float_tolerance", "lots", True),
        ("time_limit_s", "1.5", False),
        ("time_limit_s", "-1", True),
        ("memory_mb", "512", False),
        ("memory_mb", "big", True),
        ("language", "cpp", True),
    ],
)
def test_url_options_are_checked_before_grading(name: str, value: str, refused: bool) -> None:
    """`option_problem` refuses unknown options and values no answer could use."""
    assert (CodeScorer.option_problem(name, value) is not None) is refused


ONES: dict[str, Any] = {"inputs": ["\n"] * 10, "outputs": ["1\n"] * 10}


def _recorded(label: JSON, options: dict[str, JSON], sandbox: RecordingSandbox) -> Any:
    settings = CodeSettings(time_limit_s=2.0, max_time_limit_s=5.0, max_memory_mb=512)
    return CodeScorer(settings=settings, sandbox_factory=lambda _: sandbox).score(
        "p", _fenced("print(1)"), label, options
    )


def test_tests_run_in_doubling_chunks_until_partial_asks_for_all() -> None:
    """Stopping at a failure, tests reach the sandbox 1, 2, 4, 3 at a time; `partial`: all 10."""
    sandbox = RecordingSandbox(stdout=b"1\n")
    assert _recorded(ONES, {}, sandbox).reward == 1.0
    assert [(len(call.stdins), call.stop_at_first_failure) for call in sandbox.calls] == [
        (1, True),
        (2, True),
        (4, True),
        (3, True),
    ]
    sandbox = RecordingSandbox(stdout=b"1\n")
    assert _recorded(ONES, {"partial": True}, sandbox).reward == 1.0
    assert [(len(call.stdins), call.stop_at_first_failure) for call in sandbox.calls] == [
        (10, False)
    ]


@pytest.mark.parametrize(
    ("asked", "time_s", "memory_mb"),
    [
        ({}, 2.0, 256),
        ({"time_limit_s": 3, "memory_mb": 300}, 3.0, 300),
        ({"time_limit_s": "60", "memory_mb": 4096}, 5.0, 512),
        ({"time_limit_s": {"seconds": 1, "nanos": 500_000_000}}, 1.5, 256),
    ],
)
def test_label_time_and_memory_apply_per_test_up_to_the_caps(
    asked: dict[str, JSON], time_s: float, memory_mb: int
) -> None:
    """The label's `time_limit_s` and `memory_mb` set each run's limits, capped by the service."""
    sandbox = RecordingSandbox(stdout=b"1\n")
    _recorded({**ONES, **asked}, {}, sandbox)
    assert {(call.limits.time_s, call.limits.memory_mb) for call in sandbox.calls} == {
        (time_s, memory_mb)
    }


def test_budget_running_out_fails_the_answer_as_time_limit() -> None:
    """When the sandbox stops for the answer's budget, the next test fails `time_limit`."""
    score = _recorded(ONES, {}, RecordingSandbox(stdout=b"1\n", runs_left=5))
    assert (score.reward, score.details["passed"], score.details["budget_exhausted"]) == (
        0.0,
        5,
        True,
    )
    assert score.details["first_failure"]["kind"] == "time_limit"


def test_building_starts_no_process_until_the_first_program() -> None:
    """The registry builds every scorer at load: the sandbox starts with the first program only."""
    scorer = CodeScorer(sandbox_factory=lambda _: pytest.fail("sandbox built too early"))
    assert scorer.score("p", "no code", IO, {}).status is Status.NO_ANSWER
    assert scorer.score("p", _fenced(STDIN_OK), "not json", {}).status is Status.ERROR


def test_missing_required_layers_stop_the_default_sandbox() -> None:
    """A required layer the sandbox cannot have makes starting the scorer's sandbox fail."""
    settings = CodeSettings.model_construct(required_layers=frozenset({"no-such-layer"}))
    with pytest.raises(SandboxUnavailable, match="no-such-layer"):
        default_sandbox(settings)


def _forging(lines: tuple[str, ...]) -> RecordingSandbox:
    """A sandbox whose every run writes the driver's mark followed by `lines`, as a forging
    program could."""

    def answer(program: Program, stdin: bytes) -> Outcome:
        mark = re.search(r"<<reward-service [0-9a-f]+>>", program.source)
        assert mark is not None
        stdout = "".join(f"\n{mark.group()}{line}\n" for line in lines).encode()
        return Outcome(Kind.OK, stdout, "", 0, 0.0)

    return RecordingSandbox(answer=answer)


@pytest.mark.parametrize(
    ("lines", "kind"),
    [
        (('["hacked", "x"]', '"done"'), "wrong_output"),
        (('["ok", ""]', "not json", '"done"'), "runtime_error"),
        (('["ok", ""]',), "runtime_error"),
    ],
)
def test_assert_reports_the_driver_never_writes_count_as_failures(
    lines: tuple[str, ...], kind: str
) -> None:
    """An unknown failure kind is `wrong_output`; reports missing a test or the end fail it."""
    sandbox = _forging(lines)
    statements = "assert triple(1) in (3,)\nassert triple(2) in (6,)"  # not liftable
    score = CodeScorer(sandbox_factory=lambda _: sandbox).score(
        "p", _fenced(CALL_OK), {"tests": statements}, {}
    )
    assert (score.reward, score.details["first_failure"]["kind"]) == (0.0, kind)


@pytest.mark.parametrize(
    "lines",
    [
        ('["ok", ""]', '["ok", ""]', '"done"'),
        ('["value", "3"]', '["value", "3"]', '"done"'),
        ('["value", "not a literal"]', '["value", "6"]', '"done"'),
    ],
    ids=["verdicts", "one-guess", "unreadable"],
)
def test_static_asserts_cannot_be_forged_by_the_program(lines: tuple[str, ...]) -> None:
    """`assert f(x) == literal` tests are judged here: forged verdicts or guesses fail."""
    sandbox = _forging(lines)
    score = CodeScorer(sandbox_factory=lambda _: sandbox).score(
        "p", _fenced(CALL_OK), {"tests": "assert triple(1) == 3\nassert triple(2) == 6"}, {}
    )
    assert score.reward == 0.0
    assert score.details["first_failure"]["kind"] == "wrong_output"


def test_static_assert_values_are_compared_in_the_worker() -> None:
    """The driver's literal reports pass exactly when they equal the test's literal."""
    sandbox = _forging(('["value", "3"]', '["value", "6"]', '"done"'))
    score = CodeScorer(sandbox_factory=lambda _: sandbox).score(
        "p", _fenced(CALL_OK), {"tests": "assert triple(1) == 3\nassert 6 == triple(2)"}, {}
    )
    assert (score.reward, score.details["passed"]) == (1.0, 2)


ALWAYS_EQUAL = """\
class _Anything:
    def __eq__(self, other):
        return True
def triple(x):
    return _Anything()"""
FRAME_FORGER = """\
import os, sys
_frame = sys._getframe(1)
_report = _frame.f_globals.get("_report")
if _report:
    _report(["ok", ""])
    _report(["ok", ""])
    _report("done")
    os._exit(0)
def triple(x):
    return 0"""


@pytest.mark.parametrize("source", [ALWAYS_EQUAL, FRAME_FORGER], ids=["always-equal", "frame"])
def test_programs_that_forge_assert_verdicts_earn_nothing(scorer: CodeScorer, source: str) -> None:
    """An object equal to everything, or reports written through the driver's own function: 0.0."""
    score = scorer.score("p", _fenced(source), {"tests": ASSERTS}, {})
    assert score.reward == 0.0


def test_humaneval_check_of_plain_asserts_is_unfolded_and_static(scorer: CodeScorer) -> None:
    """A `check(candidate)` of `==` asserts grades per assert, each value compared here."""
    test = "def check(candidate):\n    assert candidate(1) == 3\n    assert candidate(2) == 6\n"
    label = {"test": test, "entry_point": "triple"}
    good = scorer.score("p", _fenced(CALL_OK), label, {})
    forged = scorer.score("p", _fenced(ALWAYS_EQUAL), label, {})
    assert (good.reward, good.details["total"]) == (1.0, 2)
    assert forged.reward == 0.0


def test_static_values_keep_python_equality(scorer: CodeScorer) -> None:
    """Tuples are no lists, sets and dicts with int keys compare as Python compares them."""
    tests = "assert pair(1) == (1, 1)\nassert keys(2) == {2: {2}}\nassert half(3) == 1.5"
    source = "def pair(x):\n    return (x, x)\ndef keys(x):\n    return {x: {x}}\n"
    source += "def half(x):\n    return x / 2"
    listy = source.replace("return (x, x)", "return [x, x]")
    assert scorer.score("p", _fenced(source), {"tests": tests}, {}).reward == 1.0
    assert scorer.score("p", _fenced(listy), {"tests": tests}, {}).reward == 0.0


READ_CHECK = """\
def f(x):
    check = globals().get("check")
    if check is None:
        return None
    constants = list(check.__code__.co_consts)
    return constants[constants.index(x) + 1]"""
OPERAND_LEAK = """\
class _Leak(float):
    def __sub__(self, other):
        return 0.0
def f(x):
    return _Leak(0)"""
CALLER_CONSTANTS = """\
import sys
def f(x):
    caller = sys._getframe(1).f_code
    numbers = [c for c in caller.co_consts if type(c) is int and c != x]
    return numbers[0] if numbers else -1"""
HUMANEVAL_TEST = (
    "def check(candidate):\n    assert candidate(2) == 4\n    assert candidate(3) == 9\n"
)
TOLERANCE_TEST = "def check(candidate):\n    assert abs(candidate(2) - 4) < 1e-6\n"


@pytest.mark.parametrize(
    ("source", "label"),
    [
        (READ_CHECK, {"test": HUMANEVAL_TEST, "entry_point": "f"}),
        (OPERAND_LEAK, {"test": TOLERANCE_TEST, "entry_point": "f"}),
        (CALLER_CONSTANTS, {"tests": ["assert abs(f(2) - 4) < 1e-9", "assert f(3) - 9 == 0"]}),
        (CALLER_CONSTANTS, {"tests": ["assert f(2) == 4"]}),
    ],
    ids=["humaneval-check-in-globals", "operand-of-the-expected-side", "caller-frame", "static"],
)
def test_no_expected_value_is_within_the_solutions_reach(
    scorer: CodeScorer, source: str, label: dict[str, object]
) -> None:
    """A solution that reads the expected values from `check`, its caller's frame or an
    operand handed to its result finds none: the tests never share its process."""
    score = scorer.score("p", _fenced(source), label, {})
    assert score.reward == 0.0, score.details
    assert score.details["asserts"] in ("static", "replayed")


def test_a_replayed_suite_grades_the_honest_solution(scorer: CodeScorer) -> None:
    """Asserts of any shape over the solution's values pass for a right solution, per test."""
    tests = [
        "assert abs(f(2) - 4) < 1e-9",
        "assert f(3) != 0",
        "assert sorted([f(1), f(2)]) == [1, 4]",
        "for i in range(3):\n    assert f(i) == i * i",
    ]
    good = scorer.score("p", _fenced("def f(x):\n    return x * x"), {"tests": tests}, {})
    wrong = scorer.score(
        "p",
        _fenced("def f(x):\n    return x * x if x != 1 else 0"),
        {"tests": tests},
        {"partial": 1},
    )
    assert (good.reward, good.details["asserts"], good.details["total"]) == (1.0, "replayed", 4)
    assert (wrong.reward, wrong.details["passed"]) == (0.5, 2)


def test_a_test_whose_calls_depend_on_results_falls_back_to_statements(scorer: CodeScorer) -> None:
    """A call taking another call's result cannot be planned: the suite runs as statements
    and says so."""
    label = {"tests": ["assert f(f(2)) == 16"]}
    score = scorer.score("p", _fenced("def f(x):\n    return x * x"), label, {})
    assert (score.reward, score.details["asserts"]) == (1.0, "statements")


def test_a_tolerance_applies_to_replayed_equality(scorer: CodeScorer) -> None:
    """`float_tolerance` loosens `==` between floats in a replayed test, never between ints."""
    tests = ["assert [f(1)] == [0.3]", "assert len([f(1)]) == 1"]
    close = scorer.score("p", _fenced("def f(x):\n    return 0.1 + 0.2"), {"tests": tests}, {})
    loose = {"float_tolerance": 1e-9}
    assert close.reward == 0.0
    assert (
        scorer.score(
            "p", _fenced("def f(x):\n    return 0.1 + 0.2"), {"tests": tests}, loose
        ).reward
        == 1.0
    )
    ints = {"tests": ["assert [f(1)] == [1000000]", "assert len([f(1)]) == 1"]}
    assert (
        scorer.score(
            "p", _fenced("def f(x):\n    return 1000001"), ints, {"float_tolerance": 1e-6}
        ).reward
        == 0.0
    )


def test_big_integers_are_values_like_any_other(scorer: CodeScorer) -> None:
    """A function returning `factorial(2000)` (5,736 digits, past Python's default 4,300) or
    an assert over it is graded, not refused."""
    big = 1
    for i in range(2, 2001):
        big *= i
    source = "import math\ndef f(n):\n    return math.factorial(n)"
    call = {"fn_name": "f", "inputs": [[2000]], "outputs": [big]}
    with big_ints():
        digits = str(big)
    asserts = {"tests": [f"assert f(2000) == {digits}", f"assert f(2000) - {digits} == 0"]}
    assert scorer.score("p", _fenced(source), call, {}).reward == 1.0
    static, replayed = (
        scorer.score("p", _fenced(source), {"tests": [test]}, {}) for test in asserts["tests"]
    )
    assert (static.reward, static.details["asserts"]) == (1.0, "static")
    assert (replayed.reward, replayed.details["asserts"]) == (1.0, "replayed")


def test_a_label_may_raise_the_output_cap_within_the_services(scorer: CodeScorer) -> None:
    """`output_bytes` lets a label keep more stdout than the default, never past the cap."""
    source = "print('x' * (1536 * 1024))"
    expected = "x" * (1536 * 1024)
    label = {"inputs": [""], "outputs": [expected]}
    default = scorer.score("p", _fenced(source), label, {})
    raised = scorer.score("p", _fenced(source), {**label, "output_bytes": 2 * 1024 * 1024}, {})
    capped = scorer.score("p", _fenced(source), {**label, "output_bytes": 1 << 40}, {})
    assert default.details["first_failure"]["kind"] == "output_limit"
    assert raised.reward == 1.0 and capped.reward == 1.0
