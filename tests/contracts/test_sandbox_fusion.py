"""SandboxFusion's `/run_code` read into a `run_code` sample, and its answer made from the run."""

from __future__ import annotations

from typing import Any

import pytest

from reward_service.contracts.sandbox_fusion import KILLED, read_run_code, run_code_answer
from reward_service.errors import BadRequest
from reward_service.scorers.base import Score, Status


def _run(kind: str, exit_code: int | None, stdout: str = "", stderr: str = "") -> dict[str, Any]:
    return {
        "kind": kind,
        "exit_code": exit_code,
        "elapsed_s": 0.5,
        "stdout": stdout,
        "stderr": stderr,
    }


def _score(status: Status, run: dict[str, Any] | None, **details: Any) -> Score:
    return Score(
        1.0 if status is Status.OK else 0.0, status, {"run": run, "compile": None, **details}
    )


def test_request_becomes_a_run_code_sample_and_unknown_keys_are_ignored() -> None:
    """The code is the response, SandboxFusion's other fields the label; ROLL's extra keys drop."""
    body = {
        "code": "print(1)",
        "language": "python",
        "stdin": "",
        "run_timeout": 30,
        "compile_timeout": 30,
        "expected_stdout": "1",
    }
    sample = read_run_code(body)
    assert (sample.response, sample.scorer) == ("print(1)", "run_code")
    assert sample.label == {
        "language": "python",
        "stdin": "",
        "run_timeout": 30,
        "compile_timeout": 30,
    }


@pytest.mark.parametrize(
    "body", [{}, {"code": "print(1)"}, {"language": "python"}, {"code": 1, "language": "python"}]
)
def test_request_without_string_code_and_language_is_a_bad_request(body: dict[str, Any]) -> None:
    """Where SandboxFusion's model answers 422, the contract raises `BadRequest` (400)."""
    with pytest.raises(BadRequest):
        read_run_code(body)


@pytest.mark.parametrize(
    ("run", "status", "run_status", "return_code"),
    [
        (_run("ok", 0, "hi\n"), "Success", "Finished", 0),
        (_run("runtime_error", 1), "Failed", "Finished", 1),
        (_run("runtime_error", None), "Failed", "Finished", KILLED),
        (_run("time_limit", None), "Failed", "TimeLimitExceeded", None),
        (_run("memory_limit", 1), "Failed", "Finished", 1),
        (_run("output_limit", None), "Failed", "Finished", KILLED),
        (_run("output_limit", 0), "Failed", "Finished", KILLED),
        ({**_run("runtime_error", None), "signal": 6}, "Failed", "Finished", -6),
        ({**_run("output_limit", None), "signal": 9}, "Failed", "Finished", -9),
    ],
)
def test_runs_map_to_sandbox_fusions_statuses(
    run: dict[str, Any], status: str, run_status: str, return_code: int | None
) -> None:
    """Success only for a clean exit; a limit is Failed with a non-zero code or a time-out."""
    score = _score(Status.OK if run["kind"] == "ok" else Status.WRONG, run, files={})
    answer = run_code_answer(score)
    assert (answer["status"], answer["compile_result"]) == (status, None)
    result = answer["run_result"]
    assert (result["status"], result["return_code"]) == (run_status, return_code)
    assert (result["stdout"], result["execution_time"]) == (run["stdout"], 0.5)


def test_message_names_a_step_that_did_not_end_well() -> None:
    """Success has an empty message; Failed names the step and how it ended."""
    ok = run_code_answer(_score(Status.OK, _run("ok", 0)))
    failed = run_code_answer(_score(Status.WRONG, _run("memory_limit", 1)))
    assert (ok["message"], failed["message"]) == ("", "run: memory_limit")


@pytest.mark.parametrize(
    ("build", "status", "return_code"),
    [
        (_run("compile_error", 1), "Finished", 1),
        (_run("time_limit", None), "TimeLimitExceeded", None),
    ],
)
def test_a_failed_build_has_a_compile_result_and_no_run(
    build: dict[str, Any], status: str, return_code: int | None
) -> None:
    """`compile_error` is Failed with the build's result (its code, or its time-out), no run."""
    score = Score(0.0, Status.COMPILE_ERROR, {"compile": build, "run": None, "files": {}})
    answer = run_code_answer(score)
    assert (answer["status"], answer["run_result"]) == ("Failed", None)
    assert (answer["compile_result"]["status"], answer["compile_result"]["return_code"]) == (
        status,
        return_code,
    )
    assert answer["message"] == f"compile: {build['kind']}"


def test_a_build_and_a_run_both_answered() -> None:
    """A compiled program that ran has both results, the build's `Finished` with code 0."""
    score = _score(Status.OK, _run("ok", 0, "hi\n"), compile=_run("ok", 0))
    answer = run_code_answer(score)
    assert (answer["status"], answer["compile_result"]["return_code"]) == ("Success", 0)
    assert answer["run_result"]["stdout"] == "hi\n"


def test_fetched_files_are_answered() -> None:
    """The files the scorer fetched are the answer's `files`."""
    score = _score(Status.OK, _run("ok", 0), files={"out.txt": "eW8="})
    assert run_code_answer(score)["files"] == {"out.txt": "eW8="}


@pytest.mark.parametrize(
    "score",
    [
        Score.error("language 'php' is not run here"),
        Score(0.0, Status.TIMEOUT, {"reason": "deadline 30 s"}),
        Score.no_answer("response longer than 2000000 chars"),
    ],
)
def test_what_did_not_run_is_a_sandbox_error_with_the_reason(score: Score) -> None:
    """Error, deadline and no-answer outcomes answer SandboxError, the reason the message."""
    answer = run_code_answer(score)
    assert answer == {
        "status": "SandboxError",
        "message": score.details["reason"],
        "compile_result": None,
        "run_result": None,
        "executor_pod_name": None,
        "files": {},
    }
