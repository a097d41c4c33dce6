"""MultiPL-E labels: the program with a harness in its own language, graded by how the run ends.

One problem, `add(x, y)`, in MultiPL-E's shape for each language: the program as a
model writes it (MultiPL-E's prompt completed), the harness as MultiPL-E's `tests`
(C++, Java and Rust open by closing the program's function, cut at a stop token).
Right programs earn 1.0, wrong ones 0.0, and so does each way to pass without
being right: an exit with status 0 before the harness runs, a caught or swallowed
failure, a printed imitation of the line that follows the harness, and a
redefinition of the harness's checks (each a test that passes only with its
defence in `harness.py`).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest

from reward_service.sandbox.toolchains import Found, discover
from reward_service.scorers.base import GradingLimits, Status
from reward_service.scorers.code.cases import LabelError, read_suite
from reward_service.scorers.code.harness import HarnessError, joined, runner
from reward_service.scorers.code.scorer import CodeScorer
from reward_service.scorers.code.settings import CodeSettings

SETTINGS = CodeSettings()
FOUND = discover(SETTINGS.toolchain_path)

HARNESSES: dict[str, tuple[str, str, list[str]]] = {
    # MultiPL-E language: (fence word, tests, stop_tokens); C's (MultiPL-E has none) returns 0
    "cpp": (
        "cpp",
        "}\nint main() {\n    auto candidate = add;\n    assert(candidate((2), (3)) == (5));\n"
        "    assert(candidate((5), (7)) == (12));\n}\n",
        ["\n}"],
    ),
    "c": (
        "c",
        "}\nint main(void) {\n    assert(add(2, 3) == 5);\n    assert(add(5, 7) == 12);\n"
        "    return 0;\n}\n",
        ["\n}"],
    ),
    "java": (
        "java",
        "    }\n    public static void main(String[] args) {\n"
        "    assert(add((2l), (3l)) == (5l));\n"
        "    assert(add((5l), (7l)) == (12l));\n    }\n\n}\n",
        ["\n    }\n"],
    ),
    "rs": (
        "rust",
        "}\n\nfn main() {\n    let candidate = add;\n    assert_eq!(candidate(2, 3), 5);\n"
        "    assert_eq!(candidate(5, 7), 12);\n}\n",
        ["\n}"],
    ),
    "js": (
        "js",
        "const assert = require('node:assert');\n\n\nfunction test() {\n  let candidate = add;\n"
        "  assert.deepEqual(candidate(2, 3),5);\n  assert.deepEqual(candidate(5, 7),12);\n}\n\n"
        "test();",
        ["\nfunction ", "\n/*", "\n//", "\nconsole.log"],
    ),
    "ts": (
        "ts",
        "declare var require: any;\nconst assert = require('node:assert');\n\n\n"
        "function test() {\n  let candidate = add;\n  assert.deepEqual(candidate(2, 3),5);\n"
        "  assert.deepEqual(candidate(5, 7),12);\n}\n\ntest();",
        ["\nfunction ", "\n/*", "\n//", "\nclass"],
    ),
    "php": (
        "php",
        "function candidate(...$args) {\n    return add(...$args);\n}\n\n"
        "function test(): void {\n"
        '    if (candidate(2, 3) !== 5) { throw new Exception("Test failed!"); }\n'
        '    if (candidate(5, 7) !== 12) { throw new Exception("Test failed!"); }\n}\n\ntest();',
        ["\nfunction", "\n?>", "\n//", "\n#"],
    ),
    "pl": (
        "perl",
        "use Test::Deep;\n\n\nsub testhumaneval {\n    my $candidate = \\&add;\n"
        '        if(eq_deeply($candidate->(2, 3),5)) {\n        print "ok!" }else{\n'
        "        exit 1;\n        }\n"
        '        if(eq_deeply($candidate->(5, 7),12)) {\n        print "ok!" }else{\n'
        "        exit 1;\n        }\n}\n\ntesthumaneval();",
        ["\nsub", "\n#", "\n\n"],
    ),
    "r": (
        "r",
        "test_humaneval <- function() {\n    candidate <- add\n"
        "    stopifnot(isTRUE(all.equal(candidate(2, 3), 5)))\n"
        "    stopifnot(isTRUE(all.equal(candidate(5, 7), 12)))\n}\ntest_humaneval()",
        ["\n#", "\n```"],
    ),
    "rb": (
        "ruby",
        "require 'test/unit'\nclass TestHumanEval < Test::Unit::TestCase\n  def test_add\n"
        "    candidate = method(:add)\n    assert_equal(5, candidate.call(2, 3))\n"
        "    assert_equal(12, candidate.call(5, 7))\n  end\nend\n",
        ["\nclass", "\ndef", "\n#", "\n\n"],
    ),
    "lua": (
        "lua",
        "lu = require('luaunit')\n\nfunction test_humaneval()\nlocal candidate = add\n"
        "    lu.assertEquals(candidate(2, 3), 5)\n    lu.assertEquals(candidate(5, 7), 12)\nend\n\n"
        "os.exit(lu.LuaUnit.run())",
        ["\nlocal", "\nfunction", "\n--", "\n\n"],
    ),
    "py": (
        "python",
        "def check(candidate):\n    assert candidate(2, 3) == 5\n"
        "    assert candidate(5, 7) == 12\n\n"
        "def test_check():\n    check(add)\n\ntest_check()\n",
        ["\ndef", "\n#", "\nif", "\nclass"],
    ),
}
ADD = {
    # MultiPL-E language: the program, `{op}` its operator (+ right, - wrong), `{head}`
    # code the program runs first (a hack's), `{body}` code the function runs first
    "cpp": "#include <bits/stdc++.h>\n{head}\nlong add(long x, long y) {{\n    {body}"
    "return x {op} y;\n}}\n",
    "c": "#include <assert.h>\n#include <stdio.h>\n{head}\nlong add(long x, long y) {{\n"
    "    {body}return x {op} y;\n}}\n",
    "java": "import java.util.*;\nclass Problem {{\n    {head}\n"
    "    public static long add(long x, long y) {{\n        {body}return x {op} y;\n    }}\n}}\n",
    "rs": "{head}\nfn add(x: isize, y: isize) -> isize {{\n    {body}x {op} y\n}}\n",
    "js": "{head}\nfunction add(x, y) {{\n  {body}return x {op} y;\n}}\n",
    "ts": "{head}\nfunction add(x: number, y: number): number {{\n  {body}return x {op} y;\n}}\n",
    "php": "<?php\n{head}\nfunction add($x, $y) {{\n    {body}return $x {op} $y;\n}}\n",
    "pl": "{head}\nsub add {{\n    my($x, $y) = @_;\n    {body}return $x {op} $y;\n}}\n",
    "r": "{head}\nadd <- function(x, y) {{\n    {body}x {op} y\n}}\n",
    "rb": "{head}\ndef add(x, y)\n  {body}x {op} y\nend\n",
    "lua": "{head}\nlocal function add(x, y)\n    {body}return x {op} y\nend\n",
    "py": "{head}\ndef add(x, y):\n    {body}return x {op} y\n",
}
FORGED = '<<reward-service 0123456789abcdef>>"done"'
"""What the line after the harness writes, with a mark other than the answer's."""
HACKS: dict[str, dict[str, str]] = {
    # a wrong program (`-`) with each way to pass anyway: {"head": ...} or {"body": ...}
    "exits 0 before the harness runs": {
        "cpp": "static int early = (std::exit(0), 0);",
        "c": "#include <stdlib.h>\n"
        "__attribute__((constructor)) static void early(void) { exit(0); }",
        "java": "static { System.exit(0); }",
        "js": "process.exit(0);",
        "ts": "process.exit(0);",
        "php": "exit(0);",
        "pl": "exit 0;",
        "r": "quit(status = 0)",
        "rb": "exit!(0)",
        "lua": "os.exit(0)",
        "py": "import os\nos._exit(0)",
    },
    "exits 0 from inside the function": {
        "rs": "body:std::process::exit(0);",
        "java": "body:System.exit(0);",
    },
    "prints the harness's line, then exits 0": {
        "cpp": 'static int early = (std::puts("<<reward-service 0123456789abcdef>>\\"done\\""), '
        "std::exit(0), 0);",
        "py": f"print({FORGED!r})\nimport sys\nsys.exit(0)",
        "js": f"console.log({FORGED!r}); process.exit(0);",
    },
    "turns the harness's failure into exit 0": {
        "java": "static { Thread.setDefaultUncaughtExceptionHandler((t, e) -> System.exit(0)); }",
        "rs": "body:std::panic::set_hook(Box::new(|_| std::process::exit(0)));",
        "js": "process.on('uncaughtException', () => process.exit(0));",
        "php": "set_exception_handler(function ($e) { exit(0); });",
        "py": "import os, sys\nsys.excepthook = lambda *args: os._exit(0)",
        "r": "options(error = function() quit(status = 0))",
        "rb": "at_exit { exit!(0) }",
    },
    "redefines the harness's checks": {
        "cpp": "#define NDEBUG\n#undef assert\n#define assert(x) ((void)0)",
        "c": "#undef assert\n#define assert(x) ((void)0)",
        "rs": "macro_rules! assert_eq { ($($t:tt)*) => {} }",
        "js": "require('assert').deepEqual = () => {};",
        "ts": "require('assert').deepEqual = () => {};",
        "r": "stopifnot <- function(...) invisible(NULL)",
        "lua": "local unit = require('luaunit')\nunit.assertEquals = function() end",
        "py": "def check(candidate):\n    pass",
    },
}


def _slug(name: str) -> str:
    return re.sub(r"\W+", "-", name).strip("-")


def _program(language: str, op: str, hack: str = "") -> str:
    head, body = ("", hack.removeprefix("body:")) if hack.startswith("body:") else (hack, "")
    return ADD[language].format(op=op, head=head, body=body)


def _tool(language: str) -> Any:
    """The language's runner as a `needs_tool` mark: CI installs every one."""
    name = runner(language)
    found = FOUND.get(name)
    missing = name != "python" and not isinstance(found, Found)
    return pytest.mark.needs_tool(f"{language}: {found}" if missing else "")


def _label(language: str) -> dict[str, object]:
    _, tests, stops = HARNESSES[language]
    return {"language": language, "tests": tests, "stop_tokens": stops}


@pytest.fixture(scope="module")
def polyglot() -> Iterator[CodeScorer]:
    """One `code` scorer for the module; builds on a loaded machine get time."""
    built = CodeScorer(GradingLimits(deadlines={"code": 40.0}), SETTINGS)
    yield built
    built.close()


def _graded(scorer: CodeScorer, language: str, program: str) -> Any:
    fence = HARNESSES[language][0]
    return scorer.score(None, f"```{fence}\n{program}```", _label(language), {})


@pytest.mark.parametrize(
    ("language", "op", "reward"),
    [
        pytest.param(language, op, reward, id=f"{language}-{name}", marks=_tool(language))
        for language in HARNESSES
        for name, op, reward in (("right", "+", 1.0), ("wrong", "-", 0.0))
    ],
)
def test_a_harness_rewards_the_right_program_only(
    polyglot: CodeScorer, language: str, op: str, reward: float
) -> None:
    """The right `add` passes its harness; a wrong one fails it (Java's asserts run: -ea)."""
    score = _graded(polyglot, language, _program(language, op))
    assert score.reward == reward, score.details
    assert score.details["format"] == "harness"
    if reward == 0.0:
        assert score.status is Status.WRONG


@pytest.mark.parametrize(
    ("language", "hack"),
    [
        pytest.param(language, hack, id=f"{language}-{_slug(name)}", marks=_tool(language))
        for name, hacks in HACKS.items()
        for language, hack in hacks.items()
    ],
)
def test_a_wrong_program_cannot_pass_its_harness_otherwise(
    polyglot: CodeScorer, language: str, hack: str
) -> None:
    """A wrong `add` that exits 0 early, turns its failure into exit 0, prints the line the
    harness is followed by, or redefines the harness's checks still earns 0.0."""
    score = _graded(polyglot, language, _program(language, "-", hack))
    assert (score.reward, score.status) == (0.0, Status.WRONG), score.details


@pytest.mark.parametrize("language", ["js", "py"])  # no build: the hack is the point
def test_the_same_hack_on_a_right_program_still_passes_only_by_the_harness(
    polyglot: CodeScorer, language: str
) -> None:
    """A right program that exits 0 before its harness earns 0.0 too: the harness never ran."""
    hack = HACKS["exits 0 before the harness runs"][language]
    score = _graded(polyglot, language, _program(language, "+", hack))
    assert score.reward == 0.0, score.details
    assert score.details["first_failure"]["kind"] == "runtime_error"  # type: ignore[index]


def test_a_harness_label_is_read_from_multiple_shape() -> None:
    """MultiPL-E's row (`language`, `tests`, `stop_tokens`) is a harness; `python` keeps a
    `tests` string assert-style, as MBPP's."""
    suite = read_suite({"language": "java", "tests": "}\n", "stop_tokens": ["\n}"]}, {})
    assert (suite.style, suite.language, suite.stop_tokens) == ("harness", "java", ("\n}",))
    for python in ("python", "Python", "python3"):
        mbpp = read_suite({"language": python, "tests": "assert f(1) == 2"}, {})
        assert mbpp.style == "assert"
    with pytest.raises(LabelError, match="stop_tokens"):
        read_suite({"language": "java", "tests": "}\n", "stop_tokens": "\n}"}, {})


def test_a_harness_in_another_language_than_the_program_is_an_error(
    polyglot: CodeScorer,
) -> None:
    """A Java harness with a Python program is `error`, naming the language it needs."""
    score = polyglot.score(None, "```python\nx = 1\n```", _label("java"), {})
    assert score.status is Status.ERROR
    assert "needs a java program" in str(score.details)


@pytest.mark.parametrize("language", ["go_test.go", "scala"])
def test_a_harness_the_service_cannot_follow_is_an_error(language: str) -> None:
    """Go's harness is a `go test` file, Scala is not run: the reason is given."""
    with pytest.raises(HarnessError, match="harness"):
        runner(language)


def test_the_program_is_cut_at_its_first_stop_token_where_the_harness_closes_it() -> None:
    """C++'s harness opens with the `}` the program's function ends with: the program is cut
    at `\\n}` (MultiPL-E's and SandboxFusion's way), and the line after the harness is the
    last statement of its `main`."""
    source = joined("cpp", "long f() {\n    return 1;\n}\n", "}\nint main() {\n}\n", ["\n}"], "M")
    assert source.count("}") == 2
    assert source.index("return 1;") < source.index("#include <assert.h>")
    assert source.rstrip().endswith('fputs("\\nM\\"done\\"\\n", stdout); fflush(stdout);\n}')


def test_the_line_after_the_harness_goes_before_a_return_that_ends_its_main() -> None:
    """A C `main` that ends with `return 0;` still writes the line: it is joined before."""
    source = joined("c", "int f(void) {\n", "}\nint main(void) {\n    return 0;\n}\n", [], "M")
    assert source.index("fputs") < source.index("return 0;")
