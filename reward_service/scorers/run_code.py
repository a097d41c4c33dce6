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
import json
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, ClassVar

from reward_service.errors import SandboxUnavailable
from reward_service.sandbox import Kind, Outcome, Program
from reward_service.scorers.base import JSON, GradingLimits, Score, Scorer, ScorerSettings, Status
from reward_service.scorers.code.code_settings import CodeSettings, sandbox_for
from reward_service.scorers.code.drivers import new_mark
from reward_service.scorers.run_request import (
    FILE_CAPS,
    MAX_PATH_CHARS,
    FileCaps,
    RequestError,
    RunRequest,
    read_request,
)

if TYPE_CHECKING:
    from reward_service.sandbox.zygote_client import ZygoteSandbox

_FILES = """\
def _run_code(_files, _fetch, _mark, _cap, _source):
    import atexit, base64, json, os, sys
    _root = os.getcwd()
    for _path, _data in _files:
        if os.path.dirname(_path):
            os.makedirs(os.path.dirname(_path), exist_ok=True)
        with open(_path, "wb") as _f:
            _f.write(base64.b64decode(_data))
    def _fetched():
        _found, _left = {{}}, _cap
        for _name in _fetch:
            _path = os.path.join(_root, _name)
            try:
                if os.path.isfile(_path) and os.path.getsize(_path) <= _left:
                    with open(_path, "rb") as _f:
                        _data = _f.read(_left + 1)
                    if len(_data) <= _left:
                        _found[_name] = base64.b64encode(_data).decode()
                        _left -= len(_data)
            except OSError:
                pass
        sys.stdout.flush()
        _out = (_mark + json.dumps(_found)).encode()
        while _out:
            _out = _out[os.write(1, _out):]
    atexit.register(_fetched)
    _main = sys.modules["__main__"].__dict__
    del _main["_run_code"]
    exec(compile(_source, "solution.py", "exec"), _main)
_run_code({files!r}, {fetch!r}, {mark!r}, {cap!r}, {source!r})
"""
"""A Python program that writes the request's files, runs the program in its own `__main__`
and, as the last thing before exit, writes the files to fetch after `mark` on stdout."""


def files_driver(source: str, request: RunRequest, mark: str, cap: int) -> str:
    """`source` wrapped to start with `request.files` and end with `request.fetch` after `mark`."""
    files = [(path, _b64(data)) for path, data in request.files]
    return _FILES.format(files=files, fetch=list(request.fetch), mark=mark, cap=cap, source=source)


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _fetch_room(caps: FileCaps, mark: str) -> int:
    """Stdout bytes the fetched files may take beyond the program's own: base64, JSON, paths."""
    per_file = 6 * MAX_PATH_CHARS + 8  # a path, each character a JSON \\u escape, punctuation
    return len(mark) + 4 * (caps.bytes + 2) // 3 + caps.count * per_file + 2


def split_fetched(
    stdout: bytes, mark: str, fetch: tuple[str, ...]
) -> tuple[bytes, dict[str, str]] | None:
    """The program's own stdout and the files fetched, or None when no report ends it.

    The program can write the mark itself: what follows the last one is read as
    data, only the paths asked for kept, each a base64 string.
    """
    head, found, tail = stdout.rpartition(mark.encode())
    if not found:
        return None
    try:
        report = json.loads(tail)
    except ValueError:
        return None
    if not isinstance(report, dict):
        return None
    files = {path: report[path] for path in fetch if isinstance(report.get(path), str)}
    return head, files


class RunCodeScorer(Scorer):
    """1.0 when the program ran and exited 0, else 0.0; the run in the details.

    It runs in the `code` scorer's sandbox, as that is configured: its settings
    are the code scorer's (`REWARD_CODE__*`: caps, scratch, required layers,
    toolchains) and so is its start-up check. Its zygote starts at a worker's
    first request, not with the worker: a deployment that never serves
    `/run_code` keeps one zygote per worker, the code scorer's.
    """

    name = "run_code"
    deadline_s: ClassVar[float | None] = 30.0
    settings_model = CodeSettings
    settings_name = "code"

    def __init__(
        self,
        limits: GradingLimits | None = None,
        settings: ScorerSettings | None = None,
        sandbox_factory: Callable[[CodeSettings], ZygoteSandbox] | None = None,
        caps: FileCaps = FILE_CAPS,
    ) -> None:
        super().__init__(limits, settings)
        assert isinstance(self.settings, CodeSettings)
        self.code: CodeSettings = self.settings
        self.caps = caps
        deadline = self.limits.deadline_for(self.name, self.deadline_s or 30.0)
        self.budget_s = max(1.0, deadline - self.code.budget_margin_s)
        """Seconds the run may take, compiling included, inside the hard deadline."""
        self._factory = sandbox_factory or sandbox_for
        self._sandbox: ZygoteSandbox | None = None

    def close(self) -> None:
        """Stop the sandbox, if a request started it."""
        sandbox, self._sandbox = self._sandbox, None
        if sandbox is not None:
            sandbox.close()

    def score(self, prompt: JSON, response: str, label: JSON, options: Mapping[str, JSON]) -> Score:
        if not isinstance(response, str):
            return Score.error("response is not a string")
        try:
            request = read_request(label, self.code, self.caps)
        except RequestError as exc:
            return Score.error(str(exc))
        try:
            if self._sandbox is None:
                self._sandbox = self._factory(self.code)
        except (SandboxUnavailable, OSError) as exc:
            return Score.error(f"sandbox unavailable: {exc}")
        try:
            return self._graded(self._sandbox, response, request)
        except SandboxUnavailable as exc:  # the language's toolchain is not here
            return Score.error(str(exc))

    def _graded(self, sandbox: ZygoteSandbox, source: str, request: RunRequest) -> Score:
        """Build (a compiled language) and run once: `compile_error`, `ok` or `wrong`."""
        limits, mark = request.limits, None
        program = Program(request.language, source)
        if request.files or request.fetch:
            mark = new_mark()
            program = Program(
                request.language, files_driver(source, request, mark, self.caps.bytes)
            )
            limits = replace(
                limits, output_bytes=limits.output_bytes + _fetch_room(self.caps, mark)
            )
        execution = sandbox.execute(
            program, [request.stdin], limits, self.budget_s, build_time_s=request.compile_time_s
        )
        build = execution.build
        built = build is None or build.kind is Kind.OK
        if built and not execution.runs:
            return Score.error(f"the run does not fit in the answer's {self.budget_s} s budget")
        run: Outcome | None = None
        files: dict[str, str] = {}
        if execution.runs:
            run, files = _own_output(execution.runs[0], request, mark)
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


def _own_output(
    outcome: Outcome, request: RunRequest, mark: str | None
) -> tuple[Outcome, dict[str, str]]:
    """The run with the program's own stdout (held to the request's cap), and the files
    fetched after `mark`, if any."""
    split = None if mark is None else split_fetched(outcome.stdout, mark, request.fetch)
    if split is None:
        return outcome, {}
    stdout, files = split
    cap = request.limits.output_bytes
    if len(stdout) <= cap:
        return replace(outcome, stdout=stdout), files
    return replace(outcome, kind=Kind.OUTPUT_LIMIT, stdout=stdout[:cap]), files


def run_report(outcome: Outcome, build: bool = False) -> dict[str, JSON]:
    """One step as the details hold it: JSON, stdout decoded with replacement. A build the
    compiler failed is `compile_error`; one past a limit keeps that limit's kind."""
    kind = outcome.kind
    if build and kind is Kind.RUNTIME_ERROR:
        kind = Kind.COMPILE_ERROR
    return {
        "kind": kind.value,
        "exit_code": outcome.exit_code,
        "elapsed_s": round(outcome.elapsed_s, 6),
        "stdout": outcome.stdout.decode("utf-8", "replace"),
        "stderr": outcome.stderr,
    }
