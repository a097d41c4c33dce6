"""`POST /run_code` through a live server, as SandboxFusion's clients call it.

Three clients: SandboxFusion's own package (`sandbox-fusion` from PyPI, its
models parsing our answers), a client shaped exactly as verl's SandboxFusion
reward calls it (`verl/utils/reward_score/sandbox_fusion/utils.py`: the same
payload, headers, timeout and verdict rules), and ROLL's request body. The
expected answers are SandboxFusion's on the same programs, by its rules
(`sandbox/server/sandbox_api.py`, `sandbox/runners/base.py`): `Success` when the
program exits 0, else `Failed`; a run past `run_timeout` is `TimeLimitExceeded`
with no return code; a program a signal ends returns minus its number; Python
out of its `memory_limit_MB` (RLIMIT_AS) dies of `MemoryError`, code 1.
"""

from __future__ import annotations

import asyncio
import base64
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
import sandbox_fusion as sf

from reward_service.sandbox.toolchains import Found, discover
from reward_service.scorers.code.settings import CodeSettings
from reward_service.testing import LiveServer, live_server
from tests.integrations.verl_client import verl_call, verl_outcome

TOKEN = "run-code-test-token"
BUILD_TIME_S = 60
SUMMARY = sf.SummaryMapping(
    RunFailed="RunFailed", RunTimeout="RunTimeout", CompileFailed="CompileFailed"
)
FOUND = discover(CodeSettings().toolchain_path)
CPP = pytest.mark.needs_tool("" if isinstance(FOUND["cpp"], Found) else f"cpp: {FOUND['cpp']}")


@pytest.fixture(scope="module")
def server() -> Iterator[LiveServer]:
    """One single-worker server with an API token, which clients give in the path. Builds
    may take a minute: a Go build compiles the standard library into its own cache (5-10 s
    alone, past the default 10 s on a loaded machine), and these tests are not of speed."""
    env = {"REWARD_API_TOKEN": TOKEN, "REWARD_CODE__BUILD_TIME_S": str(BUILD_TIME_S)}
    with live_server(workers=1, env=env) as running:
        yield running


@pytest.fixture(scope="module")
def endpoint(server: LiveServer) -> str:
    """The base SandboxFusion's client appends `/run_code` to: the token in the path."""
    return f"{server.url}/t/{TOKEN}"


PROGRAMS = [
    # (id, code, stdin, run_timeout, status, run status, stdout, return code)
    ("echo", "print(input()[::-1])", "abc\n", 10, "Success", "Finished", "cba\n", 0),
    ("raises", "raise ValueError('boom')", None, 10, "Failed", "Finished", "", 1),
    (
        "exits-3",
        "print('partial')\nraise SystemExit(3)",
        None,
        10,
        "Failed",
        "Finished",
        "partial\n",
        3,
    ),
    ("syntax-error", "print(1 +)", None, 10, "Failed", "Finished", "", 1),
    (
        "killed",
        "import os, signal\nos.kill(os.getpid(), signal.SIGKILL)",
        None,
        10,
        "Failed",
        "Finished",
        "",
        -9,
    ),
    (
        "sleeps",
        "import time\nprint('start', flush=True)\ntime.sleep(30)",
        None,
        1,
        "Failed",
        "TimeLimitExceeded",
        "start\n",
        None,
    ),
]


@pytest.mark.parametrize(
    ("code", "stdin", "run_timeout", "status", "run_status", "stdout", "return_code"),
    [pytest.param(*case[1:], id=case[0]) for case in PROGRAMS],
)
def test_sandbox_fusion_client_gets_sandbox_fusions_answers(
    endpoint: str,
    code: str,
    stdin: str | None,
    run_timeout: float,
    status: str,
    run_status: str,
    stdout: str,
    return_code: int | None,
) -> None:
    """SandboxFusion's client parses each answer (status, stdout, return code) and sums it up."""
    request = sf.RunCodeRequest(code=code, stdin=stdin, language="python", run_timeout=run_timeout)
    answer = sf.run_code(request, endpoint=endpoint, max_attempts=1, client_timeout=30)
    assert (answer.status.value, answer.compile_result) == (status, None)
    run = answer.run_result
    assert run is not None
    assert (run.status.value, run.stdout, run.return_code) == (run_status, stdout, return_code)
    assert run.execution_time is not None and run.execution_time >= 0
    summary = sf.summary_run_code_result(answer, SUMMARY)
    assert summary == {"Success": "Success", "TimeLimitExceeded": "RunTimeout"}.get(
        status if status == "Success" else run_status, "RunFailed"
    )


@CPP
def test_cpp_is_compiled_then_run(endpoint: str) -> None:
    """C++ answers with the build's result (Finished, 0) and the run's, as SandboxFusion's."""
    code = "#include <iostream>\nint main() { int a, b; std::cin >> a >> b; std::cout << a * b; }"
    request = sf.RunCodeRequest(code=code, stdin="6 7", language="cpp")
    answer = sf.run_code(request, endpoint=endpoint, max_attempts=1, client_timeout=60)
    assert answer.compile_result is not None and answer.run_result is not None
    assert (answer.status.value, answer.compile_result.return_code) == ("Success", 0)
    assert (answer.run_result.stdout, answer.run_result.return_code) == ("42", 0)


@CPP
def test_cpp_compile_error_is_failed_without_a_run(endpoint: str) -> None:
    """A compile error is Failed with the compiler's code and messages and no run: CompileFailed."""
    request = sf.RunCodeRequest(code="a=b", language="cpp")
    answer = sf.run_code(request, endpoint=endpoint, max_attempts=1, client_timeout=60)
    assert (answer.status.value, answer.run_result) == ("Failed", None)
    assert answer.compile_result is not None
    assert (answer.compile_result.status.value, answer.compile_result.return_code) == (
        "Finished",
        1,
    )
    assert "error" in (answer.compile_result.stderr or "")
    assert sf.summary_run_code_result(answer, SUMMARY) == "CompileFailed"


def test_files_go_in_and_come_back(endpoint: str) -> None:
    """`files` are in the program's directory; `fetch_files` come back base64."""
    code = (
        "data = open('data/in.txt').read()\nopen('out.txt', 'w').write(data.upper())\nprint(data)"
    )
    request = sf.RunCodeRequest(
        code=code,
        language="python",
        files={"data/in.txt": base64.b64encode(b"hello").decode()},
        fetch_files=["out.txt"],
    )
    answer = sf.run_code(request, endpoint=endpoint, max_attempts=1, client_timeout=30)
    assert answer.status.value == "Success"
    assert answer.run_result is not None and answer.run_result.stdout == "hello\n"
    assert {name: base64.b64decode(data) for name, data in answer.files.items()} == {
        "out.txt": b"HELLO"
    }


SHOUTS = {
    # language: (program, the module it builds or runs with, as SandboxFusion's `files` give it)
    "python": (
        "from shout import shout\n"
        "line = open('data/in.txt').read().strip()\n"
        "open('data/out.txt', 'w').write(shout(line))\n"
        "print(line)\n",
        ("shout.py", "def shout(s):\n    return s.upper()\n"),
    ),
    "cpp": (
        '#include <fstream>\n#include <iostream>\n#include <string>\n#include "shout.h"\n'
        'int main() { std::ifstream in("data/in.txt"); std::string line; std::getline(in, line);\n'
        '  std::ofstream("data/out.txt") << shout(line); std::cout << line << "\\n"; }\n',
        (
            "shout.h",
            "#include <cctype>\n#include <string>\n"
            "std::string shout(std::string s) {\n"
            "  for (auto& c : s) c = std::toupper(c);\n  return s;\n}\n",
        ),
    ),
    "java": (
        "import java.nio.file.*;\npublic class Main { public static void main(String[] a)\n"
        '  throws Exception { String line = Files.readString(Path.of("data/in.txt")).strip();\n'
        '  Files.writeString(Path.of("data/out.txt"), Shout.shout(line));\n'
        "  System.out.println(line); } }\n",
        (
            "Shout.java",
            "public class Shout { static String shout(String s) { return s.toUpperCase(); } }\n",
        ),
    ),
    "go": (
        'package main\n\nimport (\n\t"fmt"\n\t"os"\n\t"strings"\n)\n\nfunc main() {\n'
        '\tdata, _ := os.ReadFile("data/in.txt")\n\tline := strings.TrimSpace(string(data))\n'
        '\tos.WriteFile("data/out.txt", []byte(strings.ToUpper(line)), 0o644)\n'
        "\tfmt.Println(line)\n}\n",
        ("notes.txt", "go builds the one file it is given, here as under SandboxFusion\n"),
    ),
    "nodejs": (
        'const fs = require("fs");\nconst { shout } = require("./shout.js");\n'
        'const line = fs.readFileSync("data/in.txt", "utf8").trim();\n'
        'fs.writeFileSync("data/out.txt", shout(line));\nconsole.log(line);\n',
        ("shout.js", "exports.shout = (s) => s.toUpperCase();\n"),
    ),
    "rust": (
        "mod shout;\nfn main() {\n"
        '    let line = std::fs::read_to_string("data/in.txt").unwrap().trim().to_string();\n'
        '    std::fs::write("data/out.txt", shout::shout(&line)).unwrap();\n'
        '    println!("{}", line);\n}\n',
        ("shout.rs", "pub fn shout(s: &str) -> String { s.to_uppercase() }\n"),
    ),
}
"""Each reads a file of `files`, writes one for `fetch_files` in the same directory, using a
file of `files` as a module where SandboxFusion compiles or runs it beside the program (a
C++ header, a Rust module, a Java class, a Node module, a Python module)."""


def _language(language: str) -> Any:
    found = FOUND.get({"nodejs": "javascript"}.get(language, language))
    reason = f"{language}: {found}" if isinstance(found, str) else ""
    return pytest.param(language, marks=pytest.mark.needs_tool(reason))


@pytest.mark.parametrize("language", [_language(name) for name in SHOUTS])
def test_files_work_in_every_language(endpoint: str, language: str) -> None:
    """A program in each language reads a file of `files`, builds or runs with a module among
    them, and writes a file that `fetch_files` brings back: SandboxFusion's answer (Success,
    the compiler's code 0, the run's stdout and code 0, the file base64)."""
    code, (module, text) = SHOUTS[language]
    request = sf.RunCodeRequest(
        code=code,
        language=language,
        files={
            "data/in.txt": base64.b64encode(b"hello\n").decode(),
            module: base64.b64encode(text.encode()).decode(),
        },
        fetch_files=["data/out.txt", "missing.txt"],
        compile_timeout=BUILD_TIME_S,
    )
    answer = sf.run_code(request, endpoint=endpoint, max_attempts=1, client_timeout=60)
    assert answer.status.value == "Success", answer
    compiled = answer.compile_result
    if language in ("python", "nodejs"):  # run, not built: as SandboxFusion runs them
        assert compiled is None
    else:
        assert compiled is not None and (compiled.status.value, compiled.return_code) == (
            "Finished",
            0,
        )
    run = answer.run_result
    assert run is not None
    assert (run.status.value, run.stdout, run.return_code) == ("Finished", "hello\n", 0)
    assert answer.files == {"data/out.txt": base64.b64encode(b"HELLO").decode()}


def test_ping_answers_as_sandbox_fusion_does(endpoint: str) -> None:
    """`GET /v1/ping` is SandboxFusion's liveness check: 200 and the JSON string "pong",
    under the token's path too."""
    response = httpx.get(f"{endpoint}/v1/ping")
    assert (response.status_code, response.json()) == (200, "pong")


def test_async_client_runs_code(endpoint: str) -> None:
    """The package's aiohttp client gets the same answer."""
    request = sf.RunCodeRequest(code="print(6 * 7)", language="python")
    answer = asyncio.run(sf.run_code_async(request, endpoint=endpoint, max_attempts=1))
    assert answer.run_result is not None and answer.run_result.stdout == "42\n"


def test_what_cannot_run_is_a_sandbox_error_the_client_raises_on(endpoint: str) -> None:
    """A language not run here is SandboxError, which SandboxFusion's client raises on."""
    request = sf.RunCodeRequest(code="theorem one : 1 = 1 := rfl", language="lean")
    with pytest.raises(Exception, match="language 'lean' is not run here"):
        sf.run_code(request, endpoint=endpoint, max_attempts=1, client_timeout=30)


def test_without_the_token_it_is_401(server: LiveServer) -> None:
    """`/run_code` has /score's auth: no token, no run."""
    answer = httpx.post(f"{server.url}/run_code", json={"code": "print(1)", "language": "python"})
    assert answer.status_code == 401


@pytest.mark.parametrize(
    ("language", "code", "stdin", "expected", "timeout", "verdict"),
    [
        pytest.param("python", "print(int(input()) * 2)", "21", "42\n", 10, True, id="correct"),
        pytest.param("python", "print(int(input()) + 2)", "21", "42\n", 10, False, id="wrong"),
        pytest.param("python", "import sys\nsys.exit(1)", "", "", 10, -2, id="runtime-error"),
        pytest.param("python", "while True:\n    pass", "", "", 1, -3, id="timeout"),
        pytest.param("python", "x = bytearray(1 << 31)", "", "", 10, -2, id="memory"),
        pytest.param("cpp", "a=b", "", "", 10, -4, id="compile-error", marks=CPP),
    ],
)
def test_verl_client_verdicts(
    endpoint: str,
    language: str,
    code: str,
    stdin: str,
    expected: str,
    timeout: int,
    verdict: bool | int,
) -> None:
    """verl's reward reads each answer as it reads SandboxFusion's: pass, fail, -2, -3, -4."""
    url = f"{endpoint}/run_code"
    answer, error = verl_call(url, code, stdin, timeout, memory_limit_mb=256, language=language)
    assert error is None
    assert verl_outcome(answer, error, expected)[0] == verdict


def test_verl_memory_limit_is_python_memory_error(endpoint: str) -> None:
    """Out of `memory_limit_MB`, Python dies of MemoryError with code 1, as under SandboxFusion."""
    answer, _ = verl_call(f"{endpoint}/run_code", "x = bytearray(1 << 31)", "", 10, 256, "python")
    assert answer is not None
    run = answer["run_result"]
    assert (answer["status"], run["status"], run["return_code"]) == ("Failed", "Finished", 1)
    assert run["stderr"].rstrip().endswith("MemoryError")


def test_roll_request_with_its_extra_keys_and_tag(endpoint: str) -> None:
    """ROLL's body (its `expected_stdout` key, a ```python3 fence's tag) runs as python."""
    body = {
        "compile_timeout": 30,
        "run_timeout": 30,
        "code": "print(sum(map(int, input().split())))",
        "language": "python3",
        "stdin": "1 2 3",
        "expected_stdout": "6",
    }
    answer = httpx.post(f"{endpoint}/run_code", json=body, timeout=60).json()
    assert (answer["status"], answer["run_result"]["stdout"]) == ("Success", "6\n")


def test_runs_are_counted_as_run_code_gradings(server: LiveServer) -> None:
    """The runs are in /metrics under the `run_code` scorer, as /score's gradings are."""
    metrics = httpx.get(f"{server.url}/metrics", headers={"Authorization": f"Bearer {TOKEN}"})
    assert 'scorer="run_code"' in metrics.text
