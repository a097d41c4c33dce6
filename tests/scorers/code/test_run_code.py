"""The `run_code` scorer over the service's own sandbox: how each run ended, files in and out."""

from __future__ import annotations

import base64
import glob
import os
from collections.abc import Iterator
from typing import Any

import pytest

from reward_service.errors import SandboxUnavailable
from reward_service.sandbox.toolchains import JAVA_LIBRARIES, Found, discover
from reward_service.scorers.base import GradingLimits, Score, Status
from reward_service.scorers.code.run_code import RunCodeScorer
from reward_service.scorers.code.run_request import FileCaps
from reward_service.scorers.code.settings import CodeSettings

SETTINGS = CodeSettings(output_bytes=4096, build_time_s=30)
"""A build's cap 30 s: `compile_timeout` is held to it, and Scala's and Kotlin's compilers
(2.5 s of CPU each) passed 10 s of wall time on a loaded machine."""
CAPS = FileCaps(bytes=1024)
LANGUAGES = ["cpp", "javascript", "java", "ruby", "php", "perl", "lua", "typescript", "R", "racket"]
FOUND = discover(SETTINGS.toolchain_path, [*LANGUAGES, "scala", "kotlin_script", "csharp", "D_ut"])
CPP = pytest.mark.needs_tool("" if isinstance(FOUND["cpp"], Found) else f"cpp: {FOUND['cpp']}")
SUM = "#include <iostream>\nint main() { long a, b; std::cin >> a >> b; std::cout << a + b; }\n"


@pytest.fixture(scope="module")
def scorer() -> Iterator[RunCodeScorer]:
    """One scorer for the module, its sandbox closed at the end."""
    built = RunCodeScorer(GradingLimits(), SETTINGS, caps=CAPS)
    yield built
    built.close()


def _score(scorer: RunCodeScorer, code: str, **label: Any) -> Score:
    return scorer.score(None, code, {"language": "python", **label}, {})


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


@pytest.mark.parametrize(
    ("code", "label", "kind", "exit_code", "stdout"),
    [
        ("print(input() * 2)", {"stdin": "ab\n"}, "ok", 0, "abab\n"),
        ("print('x', end='')\nraise ValueError('no')", {}, "runtime_error", 1, "x"),
        ("import sys\nsys.exit(3)", {}, "runtime_error", 3, ""),
        ("print(1 +)", {}, "runtime_error", 1, ""),
        ("import os, signal\nos.kill(os.getpid(), signal.SIGKILL)", {}, "runtime_error", None, ""),
        ("import time\ntime.sleep(5)", {"run_timeout": 0.5}, "time_limit", None, ""),
        ("x = bytearray(1 << 30)", {"memory_limit_MB": 128}, "memory_limit", 1, ""),
    ],
)
def test_each_run_reports_how_it_ended(
    scorer: RunCodeScorer,
    code: str,
    label: dict[str, Any],
    kind: str,
    exit_code: int | None,
    stdout: str,
) -> None:
    """A clean exit is `ok` (1.0); any other end is `wrong` (0.0) with its kind and exit code."""
    score = _score(scorer, code, **label)
    run = score.details["run"]
    assert (run["kind"], run["exit_code"], run["stdout"]) == (kind, exit_code, stdout)
    assert (score.reward, score.status) == (
        (1.0, Status.OK) if kind == "ok" else (0.0, Status.WRONG)
    )
    assert score.details["compile"] is None
    assert "process" in score.details["sandbox"]


def test_output_past_the_cap_is_an_output_limit(scorer: RunCodeScorer) -> None:
    """Stdout past `output_bytes` ends the run `output_limit`, the output kept up to the cap."""
    run = _score(scorer, "print('y' * 5000)").details["run"]
    assert (run["kind"], run["stdout"]) == ("output_limit", "y" * 4096)


def test_a_traceback_is_in_stderr(scorer: RunCodeScorer) -> None:
    """A raising program's stderr ends with its exception, as `python` prints it."""
    stderr = _score(scorer, "raise ValueError('no')").details["run"]["stderr"]
    assert stderr.startswith("Traceback") and stderr.endswith("ValueError: no\n")


def test_files_are_written_before_and_fetched_after(scorer: RunCodeScorer) -> None:
    """`files` are in place at the start; `fetch_files` come back, missing ones left out."""
    code = (
        "from __future__ import annotations\n"
        "print(open('data/in.txt').read().upper(), end='')\n"
        "open('out.txt', 'w').write('done')\n"
    )
    score = _score(
        scorer, code, files={"data/in.txt": _b64(b"hello")}, fetch_files=["out.txt", "gone.txt"]
    )
    assert score.details["run"]["stdout"] == "HELLO"
    assert score.details["files"] == {"out.txt": _b64(b"done")}
    assert score.status is Status.OK


def test_files_keep_the_programs_exit_and_namespace(scorer: RunCodeScorer) -> None:
    """With files, the program still runs as `__main__`, sees no driver names, keeps its status."""
    code = (
        "print(__name__, sorted(k for k in globals() if k.startswith('_run')))\nraise SystemExit(4)"
    )
    score = _score(scorer, code, fetch_files=["x"])
    assert score.details["run"]["stdout"] == "__main__ []\n"
    assert score.details["run"]["exit_code"] == 4


def test_files_are_fetched_from_the_run_directory_wherever_the_program_went(
    scorer: RunCodeScorer,
) -> None:
    """A program that changes directory still has its files fetched from where it started."""
    code = "import os\nopen('out.txt', 'w').write('x')\nos.mkdir('sub')\nos.chdir('sub')"
    assert _score(scorer, code, fetch_files=["out.txt"]).details["files"] == {"out.txt": "eA=="}


def test_fetched_files_share_the_files_cap(scorer: RunCodeScorer) -> None:
    """Files fetched past the cap on their bytes in all are left out, the first that fit kept."""
    code = "open('a', 'wb').write(b'a' * 1000)\nopen('b', 'wb').write(b'b' * 1000)"
    assert list(_score(scorer, code, fetch_files=["a", "b"]).details["files"]) == ["a"]


@pytest.mark.parametrize(
    "ending",
    ["import os\nos._exit(3)", "import os\nos.kill(os.getpid(), 9)", "while True: pass"],
    ids=["os._exit", "killed", "time_limit"],
)
def test_files_are_fetched_however_the_run_ended(scorer: RunCodeScorer, ending: str) -> None:
    """Files are read from the run's directory after it ended, as SandboxFusion reads them:
    a program that exits without cleaning up, is killed or runs out of time still has them."""
    code = f"open('out.txt', 'w').write('partial')\n{ending}\n"
    score = _score(scorer, code, fetch_files=["out.txt"], run_timeout=0.5)
    assert score.status is Status.WRONG
    assert score.details["files"] == {"out.txt": _b64(b"partial")}


HOSTILE_FILES = """\
import os
open('secret.txt', 'w').write('mine')
os.symlink('/etc/passwd', 'passwd')
os.symlink('/etc', 'etc')
os.mkfifo('fifo')
os.mkdir('dir')
os.link('secret.txt', 'hard')
"""


@pytest.mark.parametrize("path", ["passwd", "etc/passwd", "fifo", "dir", "hard", "secret.txt"])
def test_only_regular_files_of_the_run_are_fetched(scorer: RunCodeScorer, path: str) -> None:
    """A link the program left (to a file, to a directory on the way), a FIFO, a directory
    and a file with another name linked to it come back as nothing: nothing outside the run
    is read for it and nothing blocks."""
    score = _score(scorer, HOSTILE_FILES, fetch_files=[path])
    assert score.status is Status.OK, score.details
    assert score.details["files"] == {}


def test_own_stdout_is_held_to_its_cap_when_files_are_fetched(scorer: RunCodeScorer) -> None:
    """The room made for fetched files does not lift the cap on the program's own output."""
    score = _score(scorer, "print('z' * 5000)", fetch_files=["x"])
    assert score.details["run"]["kind"] == "output_limit"
    assert score.details["run"]["stdout"] == "z" * 4096


def test_a_request_that_cannot_run_is_an_error(scorer: RunCodeScorer) -> None:
    """An unsupported language or a path out of the directory is `error` with the reason."""
    assert "not run here" in _score(scorer, "1", language="cobol").details["reason"]
    escaped = _score(scorer, "1", files={"../x": "eA=="})
    assert (escaped.status, escaped.details["reason"]) == (
        Status.ERROR,
        "file path '../x' leaves the run's directory",
    )


def test_sandbox_that_cannot_start_is_an_error() -> None:
    """Without a sandbox, every request is `error`, the reason said."""

    def unavailable(settings: CodeSettings) -> Any:
        raise SandboxUnavailable("no seccomp here")

    score = RunCodeScorer(GradingLimits(), SETTINGS, unavailable).score(
        None, "print(1)", {"language": "python"}, {}
    )
    assert (score.status, score.details["reason"]) == (
        Status.ERROR,
        "sandbox unavailable: no seccomp here",
    )


@CPP
def test_cpp_builds_then_runs(scorer: RunCodeScorer) -> None:
    """A C++ program is compiled (its report `ok`, exit 0), then run on the stdin."""
    score = _score(scorer, SUM, language="cpp", stdin="40 2")
    compiled, run = score.details["compile"], score.details["run"]
    assert (compiled["kind"], compiled["exit_code"]) == ("ok", 0)
    assert (run["kind"], run["stdout"], score.status) == ("ok", "42", Status.OK)


@CPP
def test_cpp_may_define_a_libc_function_of_its_own(scorer: RunCodeScorer) -> None:
    """A program that defines `exit` (SandboxFusion's anti-cheat wrapper does) links, as
    SandboxFusion links C++ (dynamically), and its `exit` is the one called."""
    source = "#include <cstdio>\n#include <cstdlib>\n"
    source += 'extern "C" void exit(int code) noexcept {\n'
    source += '    std::printf("wrapped %d\\n", code);\n    std::fflush(stdout);\n'
    source += "    std::_Exit(code);\n}\nint main() { exit(3); }\n"
    score = _score(scorer, source, language="cpp")
    assert score.details["compile"]["kind"] == "ok", score.details["compile"]
    assert (score.details["run"]["stdout"], score.details["run"]["exit_code"]) == ("wrapped 3\n", 3)


@CPP
@pytest.mark.parametrize(("statement", "signal"), [("assert(1 == 2);", 6), ("raise(SIGSEGV);", 11)])
def test_a_run_a_signal_ended_reports_that_signal(
    scorer: RunCodeScorer, statement: str, signal: int
) -> None:
    """A failed C++ `assert` dies of SIGABRT, and the report says 6, not the sandbox's 9."""
    source = f"#include <cassert>\n#include <csignal>\nint main() {{ {statement} }}\n"
    run = _score(scorer, source, language="cpp").details["run"]
    assert (run["kind"], run["exit_code"], run["signal"]) == ("runtime_error", None, signal)


@CPP
def test_cpp_that_does_not_compile_is_compile_error(scorer: RunCodeScorer) -> None:
    """A program the compiler refuses is `compile_error`, its messages in the build's stderr."""
    score = _score(scorer, "int main() { return undeclared; }\n", language="cpp")
    compiled = score.details["compile"]
    assert (score.status, score.reward, score.details["run"]) == (Status.COMPILE_ERROR, 0.0, None)
    assert (compiled["kind"], compiled["exit_code"]) == ("compile_error", 1)
    assert "undeclared" in compiled["stderr"]


@CPP
def test_cpp_build_past_compile_timeout_is_a_build_time_limit(scorer: RunCodeScorer) -> None:
    """A build past `compile_timeout` keeps its kind, `time_limit`, and nothing runs."""
    score = _score(scorer, SUM.replace("a + b", "b + a"), language="cpp", compile_timeout=0.01)
    assert score.status is Status.COMPILE_ERROR
    assert (score.details["compile"]["kind"], score.details["run"]) == ("time_limit", None)


@pytest.mark.needs_tool(
    "" if isinstance(FOUND["javascript"], Found) else f"javascript: {FOUND['javascript']}"
)
def test_nodejs_runs_as_javascript(scorer: RunCodeScorer) -> None:
    """SandboxFusion's `nodejs` runs on the JavaScript runner."""
    score = _score(scorer, "process.exitCode = 2; console.log('js')", language="nodejs")
    assert (score.details["run"]["stdout"], score.details["run"]["exit_code"]) == ("js\n", 2)


@pytest.mark.needs_tool(
    "" if isinstance(FOUND["javascript"], Found) else f"javascript: {FOUND['javascript']}"
)
def test_a_javascript_syntax_error_is_a_failed_run(scorer: RunCodeScorer) -> None:
    """Node is run, not built (as SandboxFusion runs it): no compile step, and a syntax
    error is a run that exits 1 with node's message."""
    score = _score(scorer, "console.log('js');\nconst x = ;\n", language="nodejs")
    run = score.details["run"]
    assert (score.status, score.details["compile"]) == (Status.WRONG, None)
    assert (run["kind"], run["exit_code"], run["stdout"]) == ("runtime_error", 1, "")


SCRIPTS = {
    "ruby": (
        "require_relative 'helper'\nputs helper(gets.to_i)\nexit 3\n",
        {"helper.rb": "def helper(n)\n  n * 2\nend\n"},
        "def broken(\n",
    ),
    "php": (
        '<?php require "helper.php"; echo helper((int) fgets(STDIN)), "\\n"; exit(3);',
        {"helper.php": "<?php function helper($n) { return $n * 2; }"},
        "<?php $x = ;",
    ),
    "perl": (
        'use lib "."; use Helper; print Helper::twice(scalar <STDIN>), "\\n"; exit 3;',
        {"Helper.pm": "package Helper; sub twice { $_[0] * 2 } 1;"},
        "my $x = ;",
    ),
    "lua": (
        'local helper = require("helper")\nprint(helper.twice(io.read("n")))\nos.exit(3)\n',
        {"helper.lua": "return { twice = function(n) return n * 2 end }\n"},
        "local x = ",
    ),
    "typescript": (
        'import { twice } from "./helper";\n'
        'console.log(twice(Number(require("fs").readFileSync(0, "utf8"))));\n'
        "process.exitCode = 3;\n",
        {"helper.ts": "export function twice(n: number): number { return n * 2; }\n"},
        "const x: number = ;",
    ),
    "R": (
        'source("helper.R")\ncat(twice(scan(file("stdin"), quiet = TRUE)), "\\n", sep = "")\n'
        "quit(status = 3)\n",
        {"helper.R": "twice <- function(n) n * 2\n"},
        "x <- ",
    ),
    "racket": (
        '#lang racket\n(require "helper.rkt")\n(displayln (twice (string->number (read-line))))\n'
        "(exit 3)\n",
        {"helper.rkt": "#lang racket\n(provide twice)\n(define (twice n) (* n 2))\n"},
        "#lang racket\n(define x\n",
    ),
}
"""Per language run as a script: a program using a module of its own among `files` (it prints
twice its input and exits 3), and one with a syntax error."""


def _script(name: str) -> Any:
    found = FOUND[name]
    return pytest.param(
        name, marks=pytest.mark.needs_tool("" if isinstance(found, Found) else f"{name}: {found}")
    )


@pytest.mark.parametrize("language", [_script(name) for name in SCRIPTS])
def test_an_interpreted_language_runs_its_file_beside_its_modules(
    scorer: RunCodeScorer, language: str
) -> None:
    """Ruby, PHP, Perl, Lua, TypeScript, R and Racket run as SandboxFusion runs them: no
    compile step (TypeScript's transpile is not one: `tsx` has none), the program's modules
    (`files`) found beside it, its exit status reported."""
    source, modules, _ = SCRIPTS[language]
    files = {path: _b64(text.encode()) for path, text in modules.items()}
    score = _score(scorer, source, language=language, stdin="21\n", files=files)
    run = score.details["run"]
    assert (score.status, score.details["compile"]) == (Status.WRONG, None), score.details
    assert (run["stdout"], run["exit_code"]) == ("42\n", 3), run


@pytest.mark.parametrize("language", [_script("typescript")])
def test_an_interpreted_syntax_error_is_a_failed_run(scorer: RunCodeScorer, language: str) -> None:
    """A TypeScript syntax error is the run's failure, tsc's message in stderr, as in
    SandboxFusion: no `compile_result`, though the sandbox transpiled it in a build (the
    runtimes without one answer none, as Node's test above shows, and each one's syntax
    error fails its first run in `test_languages`)."""
    score = _score(scorer, SCRIPTS[language][2], language=language)
    run = score.details["run"]
    assert (score.status, score.details["compile"]) == (Status.WRONG, None), score.details
    assert run["kind"] == "runtime_error" and run["exit_code"] and run["stderr"], run


BUNDLED = {
    "lua": ("lu = require('luaunit')\nlu.assertEquals(1, 2)\n", "stderr", "LuaUnit test FAILURE"),
    "perl": (
        "use Test::Deep;\nuse Data::Compare;\nprint Compare(1, 2) ? 'same' : 'differ';\n"
        "exit(eq_deeply(0, 1) ? 0 : 1);\n",
        "stdout",
        "differ",
    ),
    "ruby": (
        "require 'test/unit'\nclass TestSandbox < Test::Unit::TestCase\n"
        "  def test_sandbox\n    assert_equal(1, 0)\n  end\nend\n",
        "stdout",
        "Failure",
    ),
    "javascript": (
        'const _ = require("lodash");\nconsole.log(_.isEqual([1], [1]));\nprocess.exit(1);\n',
        "stdout",
        "true",
    ),
    "typescript": (
        'import _ from "lodash";\nimport assert from "assert";\nassert(_.isEqual(1, 2));\n',
        "stderr",
        "AssertionError",
    ),
}
"""Per language, a failing program that needs a library SandboxFusion's runtime bundles
(MultiPL-E's Lua tests use luaunit, its Perl Test::Deep, its Ruby test/unit; lodash for
Node), and the words of its output that only the library's own code prints."""


LIBRARY_FILES = {
    "lua": "/usr/share/lua/*/luaunit.lua",
    "perl": "/usr/share/perl5/Test/Deep.pm",
    "javascript": "/usr/share/nodejs/lodash/package.json",
    "typescript": "/usr/share/nodejs/lodash/package.json",
}
"""Where Debian's packages of those libraries put them (`.ci/run` installs them)."""


def _bundled(name: str) -> Any:
    pattern = LIBRARY_FILES.get(name)
    missing = f"{name}: {pattern} not installed" if pattern and not glob.glob(pattern) else ""
    return pytest.param(name, marks=[*_script(name).marks, pytest.mark.needs_tool(missing)])


@pytest.mark.parametrize("language", [_bundled(name) for name in BUNDLED])
def test_the_libraries_sandbox_fusion_bundles_are_there(
    scorer: RunCodeScorer, language: str
) -> None:
    """Each library loads in the run and speaks: the program fails as its test says (a
    missing library would fail it too, so the library's own words are looked for)."""
    source, stream, words = BUNDLED[language]
    run = _score(scorer, source, language=language).details["run"]
    assert run["kind"] == "runtime_error" and words in run[stream], run


JAVA = pytest.mark.needs_tool("" if isinstance(FOUND["java"], Found) else f"java: {FOUND['java']}")


@JAVA
def test_java_runs_with_assertions_on(scorer: RunCodeScorer) -> None:
    """A failed `assert` ends a Java run (`-ea`, as SandboxFusion runs Java): MultiPL-E's
    Java tests are asserts, and a wrong program must not pass them."""
    source = "public class Main {\n    public static void main(String[] args) {\n"
    source += "        assert 1 == 2;\n    }\n}\n"
    score = _score(scorer, source, language="java")
    assert (score.status, score.details["run"]["exit_code"]) == (Status.WRONG, 1)
    assert "AssertionError" in score.details["run"]["stderr"]


@JAVA
@pytest.mark.needs_tool(
    "" if os.path.isfile(JAVA_LIBRARIES[0]) else "javatuples: install libjavatuples-java"
)
def test_java_has_javatuples_as_sandbox_fusion_does(scorer: RunCodeScorer) -> None:
    """`org.javatuples`, which MultiPL-E's Java imports in every program, builds and runs."""
    source = "import org.javatuples.*;\npublic class Main {\n"
    source += "    public static void main(String[] args) {\n"
    source += '        System.out.println(Pair.with(1, "a").getValue1());\n    }\n}\n'
    score = _score(scorer, source, language="java")
    assert (score.status, score.details["run"]["stdout"]) == (Status.OK, "a\n"), score.details


def test_missing_toolchain_is_an_error_naming_it() -> None:
    """A language whose toolchain is not found is `error`, the reason said."""
    lonely = RunCodeScorer(GradingLimits(), CodeSettings(toolchain_path="/nonexistent"))
    try:
        score = _score(lonely, SUM, language="cpp")
    finally:
        lonely.close()
    assert score.status is Status.ERROR
    assert score.details["reason"].startswith("cpp: ")


ASSERTING = {
    "scala": (
        "object HelloWorld extends App {\n  println(scala.io.StdIn.readLine())\n"
        "  assert((1l) == (0l))\n}\n",
        "java.lang.AssertionError: assertion failed",
        1,
        True,
    ),
    "kotlin_script": (
        'println(readLine())\nfun main() {\n    throw Exception("test case did not pass")\n}\n'
        "main()\n",
        "java.lang.Exception: test case did not pass",
        1,
        False,
    ),
    "csharp": (
        "using System.Diagnostics;\npublic class Program {\n"
        "    public static void Main(string[] args) {\n"
        "        Console.WriteLine(Console.ReadLine());\n"
        '        Debug.Assert(1 == 2, "Assertion failed");\n    }\n}\n',
        "Process terminated. Assertion failed.",
        134,
        False,
    ),
    "D_ut": (
        "import std.stdio;\nunittest {\n    write(readln());\n    assert(0 == 1);\n}\n"
        'void main() { writeln("main runs only without unittests"); }\n',
        "1/1 modules FAILED unittests",
        1,
        True,
    ),
}
"""Per language the JVM or Mono runs: a program as SandboxFusion's tests write them (an
`object` that `extends App`, a script that calls its own `main`, a `Debug.Assert`, a D
`unittest` block, built `-unittest` as SandboxFusion's `D_ut` builds it) that
echoes its stdin and then fails its test, what its stderr then says, its exit status (a
failed `Debug.Assert` ends a .NET program by SIGABRT, 134), and whether SandboxFusion
answers a `compile_result` for it (`kotlin main.kts` and `dotnet run` have no step of
their own). The C# program names `Console` without `using System;`: .NET's implicit
usings, which SandboxFusion's `dotnet new console` project has."""


def _managed(name: str) -> Any:
    """A language the JVM or Mono runs: the JVM's are `slow` (2-3 s of CPU a build)."""
    slow = [pytest.mark.slow] if name in ("scala", "kotlin_script") else []
    return pytest.param(name, marks=[*_script(name).marks, *slow])


@pytest.mark.parametrize("language", [_managed(name) for name in ASSERTING])
def test_a_managed_language_runs_its_program_and_fails_its_test(
    scorer: RunCodeScorer, language: str
) -> None:
    """Scala and a Kotlin script build and run on the JVM, C# on Mono, D natively (stdin
    read, stdout kept); a failed test fails the run, its exception in stderr."""
    source, words, exit_code, compiled = ASSERTING[language]
    score = _score(scorer, source, language=language, stdin="echo\n", compile_timeout=30)
    run = score.details["run"]
    assert score.status is Status.WRONG, score.details
    assert (run["kind"], run["exit_code"]) == ("runtime_error", exit_code), run
    assert run["stdout"].startswith("echo\n"), run
    assert words in run["stderr"], run
    assert (score.details["compile"] is not None) is compiled, score.details


BROKEN = {
    "csharp": ("public class P {\n    static void Main() {\n        int x = ;\n    }\n}\n", "(3,"),
    "kotlin_script": ('println("x")\nval x: Int = \n', "main.kts:2:"),
}
"""Per language whose build SandboxFusion's runner does not report: a program that does not
compile, and how the compiler's message names its line (the program's own numbering)."""


@pytest.mark.parametrize("language", [_managed(name) for name in BROKEN])
def test_a_build_sandbox_fusion_runs_as_the_run_fails_the_run(
    scorer: RunCodeScorer, language: str
) -> None:
    """C# (`dotnet run`) and a Kotlin script (`kotlin main.kts`) compile as they run in
    SandboxFusion: a compile error is the run's failure, the compiler's message in its
    stderr, with no `compile_result`."""
    source, line = BROKEN[language]
    score = _score(scorer, source, language=language, compile_timeout=30)
    run = score.details["run"]
    assert (score.status, score.details["compile"]) == (Status.WRONG, None), score.details
    assert (run["kind"], run["stdout"]) == ("runtime_error", ""), run
    assert run["exit_code"] and line in run["stderr"], run
