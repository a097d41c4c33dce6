"""SandboxFusion's `POST /run_code` (verl's and ROLL's code rewards), as pure translation.

The request is `{"code", "language", "stdin", "compile_timeout", "run_timeout",
"memory_limit_MB", "files", "fetch_files"}`; keys SandboxFusion's model does not
have are ignored, as it ignores them (ROLL sends `expected_stdout`). It becomes
one sample of the `run_code` scorer: the code its response, the other fields
its label, which the scorer reads and caps. The answer is SandboxFusion's
`{"status", "message", "compile_result", "run_result", "executor_pod_name",
"files"}`, each result `{"status", "execution_time", "return_code", "stdout",
"stderr"}`, made from the scorer's details by SandboxFusion's rules: `Success`
when every step exited 0, `Failed` when one timed out or exited non-zero,
`SandboxError` when nothing could run (the message says why); a program that
did not compile has a `compile_result` and no `run_result`. docs/run_code.md.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from reward_service.errors import BadRequest
from reward_service.grading.sample import Sample
from reward_service.scorers.base import JSON, Score, Status

SCORER = "run_code"
"""The scorer that runs a `/run_code` request."""
FIELDS = (
    "language",
    "stdin",
    "compile_timeout",
    "run_timeout",
    "memory_limit_MB",
    "files",
    "fetch_files",
)
"""The request's fields beside `code`: the scorer's label."""
KILLED = -9
"""`return_code` of a run that failed without an exit status or a signal known (SIGKILL's):
a run a signal ended reports minus its number, as SandboxFusion does (`signal` in the
step's report: the program's own, or SIGKILL where the sandbox ended it)."""
_STEPS = (("compile", "compile_result"), ("run", "run_result"))
_RAN = (Status.OK, Status.WRONG, Status.COMPILE_ERROR)
"""The scorer's statuses for a request that ran (a build that failed counts)."""


def read_run_code(body: Mapping[str, Any]) -> Sample:
    """The `run_code` sample of a request; `BadRequest` without a string `code` and `language`
    (SandboxFusion's 422)."""
    for key in ("code", "language"):
        if not isinstance(body.get(key), str):
            raise BadRequest(f"{key!r} must be a string")
    label = {key: body[key] for key in FIELDS if key in body}
    return Sample(response=body["code"], label=label, scorer=SCORER)


def run_code_answer(score: Score) -> dict[str, JSON]:
    """SandboxFusion's answer to the request `score` graded."""
    if score.status not in _RAN:
        reason = score.details.get("reason", score.status.value)
        return _answer("SandboxError", str(reason), {}, {})
    results = {key: _result(score.details.get(step)) for step, key in _STEPS}
    ended = [
        f"{step}: {report['kind']}"
        for step, _ in _STEPS
        if isinstance(report := score.details.get(step), dict) and report.get("kind") != "ok"
    ]
    status = "Success" if score.status is Status.OK else "Failed"
    files = score.details.get("files")
    return _answer(status, "; ".join(ended), results, files if isinstance(files, dict) else {})


def _answer(
    status: str, message: str, results: Mapping[str, JSON], files: Mapping[str, JSON]
) -> dict[str, JSON]:
    return {
        "status": status,
        "message": message,
        "compile_result": results.get("compile_result"),
        "run_result": results.get("run_result"),
        "executor_pod_name": None,
        "files": dict(files),
    }


def _result(report: JSON) -> dict[str, JSON] | None:
    """SandboxFusion's `CommandRunResult` of one step's report (None: the step did not run).

    A step past its time is `TimeLimitExceeded` without a return code; every
    other end is `Finished` with one, non-zero unless the step succeeded (a run
    over its memory exits as the program does, 1 for Python's `MemoryError`).
    """
    if not isinstance(report, dict):
        return None
    kind, code, signal = report.get("kind"), report.get("exit_code"), report.get("signal")
    if kind == "time_limit":
        status, code = "TimeLimitExceeded", None
    else:
        status = "Finished"
        if kind != "ok" and not code:
            code = -signal if isinstance(signal, int) and signal > 0 else KILLED
    return {
        "status": status,
        "execution_time": report.get("elapsed_s"),
        "return_code": code,
        "stdout": report.get("stdout"),
        "stderr": report.get("stderr"),
    }
