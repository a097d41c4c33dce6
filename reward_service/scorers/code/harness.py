"""MultiPL-E's labels: the program, then a test harness in its own language, run as one file.

A MultiPL-E row carries `language`, `tests` (the harness: code that calls the
program's function and fails, by an uncaught assertion or a non-zero exit,
when a test does) and `stop_tokens`. SandboxFusion grades it as MultiPL-E
does: the completion (cut at its first stop token where the harness opens by
closing the program's function: C++, Java, Rust) with the tests appended, one
run, `Success` when it exits 0.

Exit 0 alone would pay a program that exits 0 before the harness runs
(`exit(0)` in a C++ global's constructor, `System.exit(0)` in a static
initialiser, `os._exit(0)` at load). So the source is joined with a line
after the harness that writes a mark fresh for each answer (`drivers.new_mark`)
and `done`: the answer passes only when the run exits 0 *and* that line ran,
which no early exit, caught failure or printed imitation reaches. The joining
also puts the harness's own checks out of the program's reach where a language
lets a program redefine them: C and C++ get `assert.h` again (a program's
`#define assert(x)` or `NDEBUG` undone), Rust's macros are called by their
`::std::` paths, R's helpers by `base::`, JavaScript's `assert` module is
frozen before the program loads and luaunit loaded afresh after it. Ruby's
test/unit and Lua's luaunit end the program themselves (at exit, by
`os.exit`): the line is written where their run reports success. What stays
in the program's reach is listed in docs/code.md.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from reward_service.scorers.code.drivers import DONE

LANGUAGES = {
    "py": "python",
    "python": "python",
    "cpp": "cpp",
    "c": "c",
    "java": "java",
    "js": "javascript",
    "javascript": "javascript",
    "ts": "typescript",
    "typescript": "typescript",
    "rs": "rust",
    "rust": "rust",
    "php": "php",
    "pl": "perl",
    "perl": "perl",
    "r": "R",
    "R": "R",
    "rb": "ruby",
    "ruby": "ruby",
    "lua": "lua",
}
"""MultiPL-E's language names (and the runners' own) -> the runner a harness runs on."""
NOT_YET = {"go_test.go": "Go's harness is a `go test` file, which this service does not run"}
"""MultiPL-E languages the service runs but whose harness it cannot follow by a line."""
_CUT = frozenset({"cpp", "c", "java", "rust"})
"""Languages whose harness opens by closing the program's function: the program is cut at
its first stop token, as MultiPL-E and SandboxFusion cut a completion."""
_FENCED_OUT = "\n\n"
"""A stop token SandboxFusion leaves out for a fenced program (it holds blank lines)."""
_RUST_MACROS = re.compile(r"(?<![\w:])(assert|assert_eq|assert_ne|debug_assert\w*)!")
_R_HELPERS = re.compile(r"(?<![\w.:])(stopifnot|isTRUE|all\.equal|identical)\(")
_JAVA_CLASS = re.compile(r"\bclass\s+Problem\b")
_RETURN = re.compile(r"\breturn\b[^;{}]*;\s*$")
"""A `return` statement last before a closing brace."""


class HarnessError(ValueError):
    """A harness label this service cannot run; the message says why."""


def runner(language: str) -> str:
    """The runner of a MultiPL-E `language`; `HarnessError` for one it cannot follow."""
    if language in NOT_YET:
        raise HarnessError(f"a {language} harness is not run here: {NOT_YET[language]}")
    found = LANGUAGES.get(language)
    if found is None:
        raise HarnessError(f"harness language {language!r} is none of {', '.join(LANGUAGES)}")
    return found


def joined(runner: str, program: str, tests: str, stop_tokens: Sequence[str], mark: str) -> str:
    """The one file to run: the program, the harness, and the line that says it ended."""
    if runner in _CUT:
        program = _cut(program, stop_tokens)
    done = _DONE[runner].replace("@", f'\\n{mark}\\"{DONE}\\"\\n')
    if runner == "php":
        program = program.rstrip().removesuffix("?>")
    if runner in ("javascript", "typescript"):
        program = _JS_FREEZE + program
    if runner == "R":
        tests = _R_HELPERS.sub(r"base::\1(", tests)
    if runner == "rust":
        tests = _RUST_MACROS.sub(r"::std::\1!", tests)
    if runner == "lua":
        return _lua(program, tests, done)
    if runner in ("cpp", "c", "rust", "java"):
        return _in_main(runner, program, tests, done)
    return f"{program}\n{tests}\n{done}\n"


def _lua(program: str, tests: str, done: str) -> str:
    """Lua's harness ends the program itself (`os.exit(lu.LuaUnit.run())`): its last
    `os.exit` writes the line first when the status is 0. luaunit is loaded afresh for the
    harness, so a copy the program required and changed is not the one it calls."""
    exits = tests.rfind("os.exit(")
    if exits == -1:
        return f"{program}\n{_LUA_AGAIN}{tests}\n{done}\n"
    tests = f"{tests[:exits]}_harness_exit({tests[exits + len('os.exit(') :]}"
    ending = "local function _harness_exit(status)\n"
    ending += f"  if status == 0 or status == true then {done} end\n  os.exit(status)\nend\n"
    return f"{program}\n{_LUA_AGAIN}{ending}{tests}\n"


def _cut(program: str, stop_tokens: Sequence[str]) -> str:
    """The program up to its first stop token (SandboxFusion's `stop_token_trim`)."""
    ends = [program.find(token) for token in stop_tokens if token and token != _FENCED_OUT]
    ends = [end for end in ends if end != -1]
    return program[: min(ends)] if ends else program


def _in_main(runner: str, program: str, tests: str, done: str) -> str:
    """The harness's `main` with the ending line as its last statement: before its last
    closing brace (Java's `main` is the last but one: its class closes after)."""
    if runner == "java":
        program = _JAVA_CLASS.sub("class Main", program)
        tests = _JAVA_CLASS.sub("class Main", tests)
    braces = [i for i, char in enumerate(tests) if char == "}"]
    last = 2 if runner == "java" else 1
    if len(braces) < last:
        raise HarnessError("the harness has no closing brace of its main to end before")
    end = braces[-last]
    returns = _RETURN.search(tests, 0, end)  # `return 0;` ends a C main: the line goes first
    end = returns.start() if returns else end
    tests = f"{tests[:end]}{done}\n{tests[end:]}"
    if runner in ("cpp", "c"):
        # after the braces the harness opens with (closing the program's function): at file
        # scope, where the program's own #define assert or NDEBUG is undone
        head = re.match(r"(\s*}\s*\n)*", tests)
        split = head.end() if head else 0
        tests = f"{tests[:split]}{_C_AGAIN}{tests[split:]}"
    return f"{program}\n{tests}\n"


_LUA_AGAIN = 'package.loaded["luaunit"] = nil\n'
_C_AGAIN = "\n#undef NDEBUG\n#undef assert\n#include <assert.h>\n#include <stdio.h>\n"
_JS_FREEZE = 'Object.freeze(require("assert")); Object.freeze(require("assert").strict);\n'
_DONE = {
    "python": '__import__("sys").stdout.flush(); __import__("os").write(1, b"@")',
    "cpp": 'fflush(stdout); fputs("@", stdout); fflush(stdout);',
    "c": 'fflush(stdout); fputs("@", stdout); fflush(stdout);',
    "java": 'java.lang.System.out.print("@"); java.lang.System.out.flush();',
    "rust": (
        "{ use ::std::io::Write as _; let mut out = ::std::io::stdout(); "
        'let _ = out.write_all(b"@"); let _ = out.flush(); }'
    ),
    "javascript": 'process.stdout.write("@");',
    "typescript": 'process.stdout.write("@");',
    "php": 'echo "@";',
    "perl": '$| = 1; print "@";',
    "R": 'cat("@")',
    "lua": 'io.write("@"); io.flush()',
    # test/unit runs its tests as the program exits, after this: it runs them here instead,
    # and exit! leaves out the exit handlers (a program's own among them)
    "ruby": (
        "if defined?(Test::Unit::AutoRunner)\n"
        "  exit!(1) unless Test::Unit::AutoRunner.run == true\n"
        'end\n$stdout.write("@")\n$stdout.flush\nexit!(0)'
    ),
}
"""Per runner, the statement that writes `@` (the mark and `done`) to stdout."""
