"""verl's SandboxFusion client, as its code reward calls `/run_code` and reads the answers.

Written after `verl/utils/reward_score/sandbox_fusion/utils.py`: `call_sandbox_api`'s
request (payload, headers, a timeout of compile + run + 10 s, a 504 retried, any
other error given up) and `_process_single_case`'s reading of one answer (its result
and status). Shared by the tests that call the service as verl does.
"""

from __future__ import annotations

import json
from typing import Any

import requests

API_TIMEOUT_S = 10
"""verl's `API_TIMEOUT`: added to the compile and run timeouts to make the request's."""

Answer = dict[str, Any]


def verl_call(
    url: str, code: str, stdin: str | None, timeout: int, memory_limit_mb: int, language: str
) -> tuple[Answer | None, str | None]:
    """verl's `call_sandbox_api`: its payload, headers and timeout; 504 retried; (json, error)."""
    payload = json.dumps(
        {
            "compile_timeout": timeout,
            "run_timeout": timeout,
            "code": code,
            "stdin": stdin,
            "memory_limit_MB": memory_limit_mb,
            "language": language,
            "files": {},
            "fetch_files": [],
        }
    )
    headers = {"Content-Type": "application/json", "Accept": "application/json"}
    error = None
    for _ in range(3):
        try:
            response = requests.post(
                url, headers=headers, data=payload, timeout=timeout * 2 + API_TIMEOUT_S
            )
            if response.status_code == 504:
                continue
            response.raise_for_status()
            return response.json(), None
        except requests.exceptions.RequestException as exc:
            error = str(exc)
            break
    return None, error or "504"


def verl_outcome(
    answer: Answer | None, error: str | None, expected: str | None
) -> tuple[bool | int, str]:
    """verl's result and status of one test case: True/`success` or False/`wrong_answer` on
    a run's stdout (any stdout passes when nothing is expected), -1 on an API or sandbox
    error, -2 `runtime_error`, -3 `timeout`, -4 `compile_error` or `compile_timeout`."""
    if error is not None or not answer:
        return -1, "api_error"
    compiled, run = answer.get("compile_result"), answer.get("run_result")
    status = answer.get("status")
    if status == "Success":
        if not run or run.get("status") != "Finished":
            return -1, "unexpected_success_state"
        stdout = run.get("stdout") or ""
        if expected is None or str(stdout).rstrip("\n") == str(expected).rstrip("\n"):
            return True, "success"
        return False, "wrong_answer"
    if status != "Failed":
        return -1, "sandbox_error" if status == "SandboxError" else f"unknown_api_status_{status}"
    if compiled and (
        compiled.get("status") in ("Error", "TimeLimitExceeded")
        or (compiled.get("status") == "Finished" and compiled.get("return_code") != 0)
    ):
        timed_out = compiled.get("status") == "TimeLimitExceeded"
        return -4, "compile_timeout" if timed_out else "compile_error"
    if not run:
        return -1, "unknown_failure_state"
    if run.get("status") == "TimeLimitExceeded":
        return -3, "timeout"
    if run.get("status") == "Error" or run.get("return_code") != 0:
        return -2, "runtime_error"
    return -1, "unknown_failure"
