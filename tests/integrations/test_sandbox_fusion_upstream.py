"""SandboxFusion's own `/run_code` tests and verl's `sandbox_fusion` tests, against a live server.

Their cases are data (`data/sandbox_fusion_cases.json`: each upstream test's
requests and what it asserts of each answer, with the upstream path and commit);
this shim is the project's own. SandboxFusion's cases go through its PyPI client
(`sandbox-fusion`: its request model fills the defaults, as the upstream tests'
`RunCodeRequest(...).model_dump()` does, and its response model parses the
answer), so the client agrees on every case it is asked; verl's through a client
shaped as verl's (`verl_client.py`), each test's cases as verl's
`check_correctness` sends them. Every request runs once, all side by side against
one server, in the module's first test; the others check answers.

A case is skipped only for a difference docs/run_code.md lists ("What differs from
SandboxFusion"): a language not served, or the `differs` the data names.
"""

from __future__ import annotations

import base64
import functools
import json
import re
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
import sandbox_fusion as sf

from reward_service.sandbox import LANGUAGES
from reward_service.sandbox.toolchains import discover
from reward_service.scorers.code.run_request import RUNNERS
from reward_service.scorers.code.settings import CodeSettings
from reward_service.testing import LiveServer, live_server
from tests.integrations.verl_client import verl_call, verl_outcome

ROOT = Path(__file__).resolve().parents[2]
DATA = json.loads((Path(__file__).parent / "data" / "sandbox_fusion_cases.json").read_text())
SANDBOX_FUSION: list[dict[str, Any]] = DATA["sandbox_fusion"]["cases"]
VERL: list[dict[str, Any]] = DATA["verl"]["tests"]
CASES = {case["id"]: case for case in SANDBOX_FUSION}
VERL_TESTS = {test["id"]: test for test in VERL}
FOUND = discover(CodeSettings().toolchain_path)
DOC = "docs/run_code.md"
WORKERS = 8
"""Workers of the one server: the cases' sleepers (up to 10 s each) overlap this many at a
time, and the builds share the machine's CPUs meanwhile."""
CLIENTS = 8
"""Requests of languages not built in flight at once: a queue of one or two per worker,
within every client's timeout (verl's is its compile + run + 10 s)."""
BUILDERS = 2
"""Requests of built languages in flight at once: one per CPU of a CI machine."""
BUILT = frozenset(
    {"cpp", "c", "java", "go", "rust", "verilog", "scala", "kotlin_script", "csharp", "D_ut"}
)
SUMMARY = sf.SummaryMapping(
    Success="Success",
    Failed="Failed",
    CompileFailed="CompileFailed",
    CompileTimeout="CompileTimeout",
    RunFailed="RunFailed",
    RunTimeout="RunTimeout",
)


def _skip(difference: str, why: str) -> pytest.MarkDecorator:
    return pytest.mark.skip(reason=f"{why} ({DOC}, what differs: {difference})")


def _marks(language: str, differs: dict[str, str] | None) -> list[pytest.MarkDecorator]:
    """Skipped for a documented difference; a served language this machine lacks needs its
    tool (CI installs it); else no mark: the case must pass."""
    if differs is not None:
        return [_skip(differs["difference"], differs["why"])]
    runner = RUNNERS.get(language)
    if runner is None or runner not in LANGUAGES:
        return [_skip("Languages", f"{language} is not served here")]
    found = FOUND.get(runner)
    return [pytest.mark.needs_tool(f"{language}: {found}" if isinstance(found, str) else "")]


def _runs(marks: list[pytest.MarkDecorator]) -> bool:
    return not any(mark.name == "skip" for mark in marks)


SF_PARAMS = [
    pytest.param(
        case,
        id=case["id"].replace("::", "."),
        marks=_marks(case["request"]["language"], case.get("differs")),
    )
    for case in SANDBOX_FUSION
]
VERL_PARAMS = [
    pytest.param(
        test, id=test["id"].replace("::", "."), marks=_marks(test["language"], test.get("differs"))
    )
    for test in VERL
]


@pytest.fixture(scope="module")
def server() -> Iterator[LiveServer]:
    """One server for every case. Builds get a minute where a case leaves `compile_timeout`
    at its default: a cold Go or Java build on a loaded 2-core machine can pass 10 s."""
    with live_server(workers=WORKERS, env={"REWARD_CODE__BUILD_TIME_S": "60"}) as running:
        yield running


def _sandbox_fusion(url: str, request: dict[str, Any]) -> dict[str, Any]:
    """The answer as SandboxFusion's client parses it, and the client's summary of it."""
    answer = sf.run_code(sf.RunCodeRequest(**request), endpoint=url, max_attempts=1)
    summary = sf.summary_run_code_result(answer, SUMMARY)
    return {**json.loads(answer.json()), "summary": summary}


def _verl(url: str, test: dict[str, Any], case: dict[str, Any]) -> tuple[bool | int, str, Any]:
    """verl's result, status and stdout of one case of `check_correctness`."""
    code = case.get("code", test.get("code"))
    answer, error = verl_call(
        f"{url}/run_code",
        code,
        case["stdin"],
        test["timeout"],
        test["memory_limit_mb"],
        test["language"],
    )
    result, status = verl_outcome(answer, error, case["expected_output"])
    run = (answer or {}).get("run_result") or {}
    return result, status, run.get("stdout")


@pytest.fixture(scope="module")
def answers(server: LiveServer) -> dict[str, Any]:
    """Every case that runs: id -> its answer, or the client's error. Those that wait out their
    time limit go first, so that they overlap instead of trailing the batch; those that build
    go BUILDERS at a time beside the rest, so that the builds, whose `compile_timeout` counts
    their wall time, are not starved of the CPUs by the batch (SandboxFusion ran its tests
    one by one)."""
    calls: list[tuple[float, bool, str, Callable[[], Any]]] = []
    for param in SF_PARAMS:
        if _runs(list(param.marks)):
            case = param.values[0]
            request = case["request"]
            waits = any(check.get("value") == "TimeLimitExceeded" for check in case["expect"])
            call = functools.partial(_sandbox_fusion, server.url, request)
            builds = request["language"] in BUILT
            calls.append((request.get("run_timeout", 10) if waits else 0, builds, case["id"], call))
    for param in VERL_PARAMS:
        if _runs(list(param.marks)):
            test = param.values[0]
            for i, case in enumerate(test["cases"]):
                call = functools.partial(_verl, server.url, test, case)
                waits = test["timeout"] if case["result"] == -3 else 0
                calls.append((waits, test["language"] in BUILT, f"{test['id']}[{i}]", call))
    calls.sort(key=lambda call: -call[0])
    with ThreadPoolExecutor(BUILDERS) as builds, ThreadPoolExecutor(CLIENTS) as rest:
        futures = {key: (builds if built else rest).submit(call) for _, built, key, call in calls}
    answers = {key: _settled(future.result) for key, future in futures.items()}
    for _, _, key, call in calls:  # starved by the batch: asked again alone, once
        if _timed_out(answers[key]) and not _expects_timeout(key):
            answers[key] = _settled(call)
    return answers


def _timed_out(answer: Any) -> bool:
    """A run or build that met its wall-clock limit: on a loaded 2-core machine a batch of
    builds beside it can starve a run of its `run_timeout` (Racket's start alone is 0.5 s of
    CPU), where SandboxFusion's tests ran one at a time."""
    if isinstance(answer, tuple):  # verl's (result, status, stdout)
        return answer[0] in (-3, -4) and answer[1] in ("timeout", "compile_timeout")
    if isinstance(answer, dict):
        results = (answer.get("run_result") or {}, answer.get("compile_result") or {})
        return any(result.get("status") == "TimeLimitExceeded" for result in results)
    return False


def _expects_timeout(key: str) -> bool:
    if key in CASES:
        return any(check.get("value") == "TimeLimitExceeded" for check in CASES[key]["expect"])
    test_id, i = key[:-1].rsplit("[", 1)
    return bool(VERL_TESTS[test_id]["cases"][int(i)]["result"] in (-3, -4))


def _settled(call: Callable[[], Any]) -> Any:
    """The call's answer (a future's `result`), or the error its client raised."""
    try:
        return call()
    except Exception as exc:  # a client that raised: the test names it
        return exc


def _value(answer: dict[str, Any], path: list[str]) -> Any:
    for key in path:
        if not isinstance(answer, dict):
            return None
        answer = answer.get(key)
    return answer


def _holds(answer: dict[str, Any], check: dict[str, Any]) -> bool:
    """One upstream assert (data's `expect`) on an answer."""
    values = [_value(answer, path) for path in check["paths"]]
    op, want = check["op"], check.get("value")
    if op == "is_null":
        return values[0] is None
    if op in ("equals", "not_equals"):
        return (values[0] == want) == (op == "equals")
    if None in values:
        return False
    if op == "stripped_equals":
        return bool(values[0].strip() == want)
    if op == "contains":
        return want in "".join(values)
    if op == "base64_equals":
        return base64.b64decode(values[0]).decode() == want
    raise ValueError(f"unknown check {op!r}")


def test_every_case_runs_in_one_batch(answers: dict[str, Any]) -> None:
    """The cases that run are all answered (first, so that the batch's time is this test's)."""
    assert answers


@pytest.mark.parametrize("case", SF_PARAMS)
def test_sandbox_fusion_case(answers: dict[str, Any], case: dict[str, Any]) -> None:
    """SandboxFusion's test asserts of the answer what it asserts of its own, parsed and
    summed up by its client."""
    answer = answers[case["id"]]
    if isinstance(answer, Exception):
        pytest.fail(f"SandboxFusion's client raised: {answer!r}")
    failed = [check for check in case["expect"] if not _holds(answer, check)]
    assert not failed, {"failed": failed, "answer": answer}
    assert (answer["summary"] == "Success") == (answer["status"] == "Success"), answer


@pytest.mark.parametrize("test", VERL_PARAMS)
def test_verl_case(answers: dict[str, Any], test: dict[str, Any]) -> None:
    """verl's test gets the results it asserts (and each status and stdout it asserts)."""
    for i, case in enumerate(test["cases"]):
        got = answers[f"{test['id']}[{i}]"]
        if isinstance(got, Exception):
            pytest.fail(f"case {i}: verl's client raised: {got!r}")
        result, status, stdout = got
        assert result == case["result"] and type(result) is type(case["result"]), (i, got)
        assert status == case.get("status", status), (i, got)
        assert stdout == case.get("stdout", stdout), (i, got)


def test_every_skip_names_a_documented_difference() -> None:
    """Each skip's difference is a bullet of docs/run_code.md's "What differs" list."""
    text = (ROOT / DOC).read_text()
    differs = text.split("## What differs from SandboxFusion", 1)[1].split("\n## ", 1)[0]
    listed = set(re.findall(r"^- \*\*(\w+)\*\*", differs, re.MULTILINE))
    named = {"Languages"} | {
        item["differs"]["difference"] for item in [*SANDBOX_FUSION, *VERL] if "differs" in item
    }
    assert named <= listed, named - listed
