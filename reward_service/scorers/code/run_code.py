"""`run_code`: run one program once in the sandbox and report the run (SandboxFusion's `/run_code`).

The response is the program, verbatim (no fence is looked for); the label says
how to run it (`run_request.py`). The reward is 1.0 when the program ran and
exited 0, else 0.0 (status `wrong`); a request that cannot be run is `error`.
The details hold the run: how it ended (`kind`, the sandbox's), its exit code,
seconds, stdout, the tail of stderr, and the files fetched; SandboxFusion's
answer is made from them (`contracts/sandbox_fusion.py`). docs/run_code.md.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping
from typing import ClassVar

from reward_service.errors import SandboxUnavailable
from reward_service.sandbox import Kind, Outcome, Program, Sandbox
from reward_service.sandbox.toolchains import TOOLCHAINS
from reward_service.scorers.base import JSON, GradingLimits, Score, ScorerSettings, Status
from reward_service.scorers.code.run_request import (
    FILE_CAPS,
    FileCaps,
    RequestError,
    RunRequest,
    read_request,
)
from reward_service.scorers.code.sandboxed import SandboxedScorer, SandboxFactory


class RunCodeScorer(SandboxedScorer):
    """1.0 when the program ran and exited 0, else 0.0; the run in the details.

    It runs in the `code` scorer's sandbox, as that is configured: its settings
    are the code scorer's (`REWARD_CODE__*`: caps, scratch, required layers,
    toolchains) and so is its start-up check. Its zygote starts at a worker's
    first request, not with the worker: a deployment that never serves
    `/run_code` keeps one zygote per worker, the code scorer's.
    """

    name = "run_code"
    deadline_s: ClassVar[float | None] = 30.0
    settings_name = "code"

    def __init__(
        self,
        limits: GradingLimits | None = None,
        settings: ScorerSettings | None = None,
        sandbox_factory: SandboxFactory | None = None,
        *,
        caps: FileCaps = FILE_CAPS,
    ) -> None:
        super().__init__(limits, settings, sandbox_factory)
        self.caps = caps

    def score(self, prompt: JSON, response: str, label: JSON, options: Mapping[str, JSON]) -> Score:
        try:
            request = read_request(label, self.code, self.caps)
        except RequestError as exc:
            return Score.error(str(exc))
        try:
            sandbox = self.sandbox
        except (SandboxUnavailable, OSError) as exc:
            return Score.error(f"sandbox unavailable: {exc}")
        try:
            return self._graded(sandbox, response, request)
        except SandboxUnavailable as exc:  # the language's toolchain is not here
            return Score.error(str(exc))

    def _graded(self, sandbox: Sandbox, source: str, request: RunRequest) -> Score:
        """Build (a compiled language) and run once: `compile_error`, `ok` or `wrong`."""
        program = Program(request.language, source, files=request.files)
        toolchain = TOOLCHAINS.get(request.language)
        hidden = toolchain is not None and not toolchain.reports_build
        execution = sandbox.execute(
            program,
            [request.stdin],
            request.limits,
            self.budget_s,
            build_time_s=request.compile_time_s,
            fetch=request.fetch,
            fetch_bytes=self.caps.bytes,
        )
        build = execution.build
        built = build is None or build.kind is Kind.OK
        runs = execution.runs
        if hidden and build is not None:
            # SandboxFusion's runner has no build step (TypeScript's `tsx`, `kotlin main.kts`):
            # a build that failed is the run that failed there (its messages, its time limit)
            runs = runs if built else [build]
            build, built = None, True
        if built and not runs:
            return Score.error(f"the run does not fit in the answer's {self.budget_s} s budget")
        run: Outcome | None = runs[0] if runs else None
        files = {} if run is None else {path: _b64(data) for path, data in run.files.items()}
        details: dict[str, JSON] = {
            "language": request.language,
            "compile": None if build is None else run_report(build, build=True),
            "run": None if run is None else run_report(run),
            "files": files,
            "sandbox": list(sandbox.layers),
        }
        if not built:
            return Score(0.0, Status.COMPILE_ERROR, details)
        ok = run is not None and run.kind is Kind.OK
        return Score(1.0 if ok else 0.0, Status.OK if ok else Status.WRONG, details)


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def run_report(outcome: Outcome, *, build: bool = False) -> dict[str, JSON]:
    """One step as the details hold it: JSON, stdout decoded with replacement. A build the
    compiler failed is `compile_error`; one past a limit keeps that limit's kind."""
    kind = outcome.kind
    if build and kind is Kind.RUNTIME_ERROR:
        kind = Kind.COMPILE_ERROR
    return {
        "kind": kind.value,
        "exit_code": outcome.exit_code,
        "signal": outcome.signal,
        "elapsed_s": round(outcome.elapsed_s, 6),
        "stdout": outcome.stdout.decode("utf-8", "replace"),
        "stderr": outcome.stderr,
    }
