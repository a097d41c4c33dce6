"""What one `run_code` request asks: its language, input, limits and files, read and capped.

The label of a `run_code` answer is SandboxFusion's request without its `code`
(`{"language", "stdin", "run_timeout", "compile_timeout", "memory_limit_MB",
"files", "fetch_files"}`); every field but `language` may be left out. Limits
are capped by the `code` scorer's (`REWARD_CODE__MAX_*`: one sandbox, one set of
settings), never refused for being large; files are base64 under size caps, at
paths inside the run's directory. Pure: `RequestError` says what cannot be run.
"""

from __future__ import annotations

import base64
import binascii
import math
import posixpath
from collections.abc import Mapping
from dataclasses import dataclass

from reward_service.sandbox import LANGUAGES, Limits
from reward_service.sandbox.toolchains import TOOLCHAINS
from reward_service.scorers.base import JSON, echo
from reward_service.scorers.code.settings import CodeSettings, MiB

RUNNERS = {
    "python": "python",
    "python3": "python",
    "cpp": "cpp",
    "java": "java",
    "go": "go",
    "nodejs": "javascript",
    "javascript": "javascript",
    "rust": "rust",
    "c": "c",
    "ruby": "ruby",
    "php": "php",
    "perl": "perl",
    "lua": "lua",
    "typescript": "typescript",
    "ts": "typescript",
    "R": "R",
    "r": "R",
    "verilog": "verilog",
    "scala": "scala",
    "kotlin_script": "kotlin_script",
    "kotlin": "kotlin",
    "csharp": "csharp",
    "D_ut": "D_ut",
    "d": "d",
    "racket": "racket",
}
"""SandboxFusion's language names (and ROLL's fence tags) -> the sandbox's runner names; `c`
`kotlin` (a program with its `main`, beside SandboxFusion's `kotlin_script`) and `d` (D
built without `-unittest`, beside `D_ut`) are the service's own."""
DEFAULT_TIMEOUT_S = 10.0
"""SandboxFusion's `run_timeout` and `compile_timeout` when a request names none."""
MAX_PATH_CHARS = 255


@dataclass(frozen=True)
class FileCaps:
    """What a request's files may hold."""

    count: int = 64
    """Entries of `files`, and of `fetch_files`."""
    bytes: int = 4 * MiB
    """Decoded bytes of the files written, in all, and of those fetched."""


FILE_CAPS = FileCaps()


class RequestError(ValueError):
    """A request the sandbox cannot run; the message says why."""


@dataclass(frozen=True)
class RunRequest:
    """One run, as the sandbox will make it."""

    language: str
    """The sandbox's runner name."""
    stdin: bytes
    limits: Limits
    compile_time_s: float
    """The build's: `compile_timeout`; for a build SandboxFusion's runner has not (a Kotlin
    script's, `Toolchain.reports_build`), the larger of it and `run_timeout`, which there
    holds the compile; capped by `build_time_s`."""
    files: tuple[tuple[str, bytes], ...]
    """Written in the run's directory before the program starts, and in its build's before
    it is compiled: (relative path, content)."""
    fetch: tuple[str, ...]
    """Paths read back when the program ends, as the request names them (its answer's keys)."""


def read_request(label: JSON, settings: CodeSettings, caps: FileCaps = FILE_CAPS) -> RunRequest:
    """The run `label` asks for, within the code scorer's caps and `caps`; raises `RequestError`.

    A time not asked is SandboxFusion's 10 s, memory not asked (or SandboxFusion's -1,
    no limit) the cap: within `settings`' maximums (`max_time_limit_s` for the run,
    `build_time_s` for the compiler, `max_memory_mb`).
    """
    if not isinstance(label, Mapping):
        raise RequestError("the label must be an object: SandboxFusion's request without `code`")
    language = label.get("language")
    runner = RUNNERS.get(language) if isinstance(language, str) else None
    if runner is None or runner not in LANGUAGES:
        offered = ", ".join(name for name, target in RUNNERS.items() if target in LANGUAGES)
        raise RequestError(f"language {_kind(language)} is not run here; languages: {offered}")
    stdin = label.get("stdin")
    if stdin is not None and not isinstance(stdin, str):
        raise RequestError("stdin must be a string or null")
    run_s = _seconds(label, "run_timeout", settings.max_time_limit_s)
    compile_s = _seconds(label, "compile_timeout", settings.build_time_s)
    toolchain = TOOLCHAINS.get(runner)
    if toolchain is not None and not toolchain.reports_build:
        # SandboxFusion's runner builds it as it runs (`kotlin main.kts`), within run_timeout
        compile_s = max(compile_s, _seconds(label, "run_timeout", settings.build_time_s))
    files, fetch = _files(label.get("files"), caps), _fetch(label.get("fetch_files"), caps)
    return RunRequest(
        language=runner,
        stdin=(stdin or "").encode("utf-8", "replace"),
        limits=Limits(run_s, _memory_mb(label, settings), settings.output_bytes),
        compile_time_s=compile_s,
        files=files,
        fetch=fetch,
    )


def _kind(value: JSON) -> str:
    """`value` for a message: a string quoted and cut, anything else by its type."""
    return echo(value) if isinstance(value, str) else f"of type {type(value).__name__}"


def _number(label: Mapping[str, JSON], name: str) -> float | None:
    """The number `label` gives `name`, if any; an integer past a float's range is infinite."""
    value = label.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or value != value:
        raise RequestError(f"{name} must be a number, not {_kind(value)}")
    try:
        return float(value)
    except OverflowError:
        return math.inf if value > 0 else -math.inf


def _seconds(label: Mapping[str, JSON], name: str, cap: float) -> float:
    asked = _number(label, name)
    if asked is None:
        return min(DEFAULT_TIMEOUT_S, cap)
    if asked <= 0:
        raise RequestError(f"{name} must be above 0 s")
    return min(asked, cap)


def _memory_mb(label: Mapping[str, JSON], settings: CodeSettings) -> int:
    asked = _number(label, "memory_limit_MB")
    if asked is None or asked <= 0:  # SandboxFusion's -1: no limit of the request's own
        return settings.max_memory_mb
    return math.ceil(min(asked, settings.max_memory_mb))


def relative_path(path: JSON) -> str:
    """`path` normalised, when it names a file inside the run's directory; else `RequestError`."""
    if not isinstance(path, str) or not path or len(path) > MAX_PATH_CHARS or "\0" in path:
        raise RequestError(f"file path {_kind(path)} is not a name of 1-255 characters")
    if not _encodes(path):
        raise RequestError(f"file path {_kind(path)} is not a file name (a lone surrogate)")
    normal = posixpath.normpath(path)
    if path.startswith("/") or normal == "." or normal.split("/")[0] == "..":
        raise RequestError(f"file path {echo(path)} leaves the run's directory")
    return normal


def _encodes(path: str) -> bool:
    try:
        path.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        return False
    return True


def _files(value: JSON, caps: FileCaps) -> tuple[tuple[str, bytes], ...]:
    """The files to write, decoded; a null content is skipped, as SandboxFusion skips it."""
    if value is None:
        return ()
    if not isinstance(value, Mapping):
        raise RequestError("files must be an object of path -> base64 content")
    if len(value) > caps.count:
        raise RequestError(f"{len(value)} files is over the cap of {caps.count}")
    files: dict[str, bytes] = {}
    size = 0
    for path, content in value.items():
        if content is None:
            continue
        if not isinstance(content, str):
            raise RequestError(f"file {echo(path)}: content must be a base64 string")
        if len(content) > (caps.bytes - size) * 4 // 3 + 4:
            raise RequestError(f"files are over the cap of {caps.bytes} bytes")
        try:
            data = base64.b64decode(content, validate=True)
        except binascii.Error:
            raise RequestError(f"file {echo(path)}: content is not base64") from None
        size += len(data)
        if size > caps.bytes:
            raise RequestError(f"files are over the cap of {caps.bytes} bytes")
        files[relative_path(path)] = data
    return tuple(files.items())


def _fetch(value: JSON, caps: FileCaps) -> tuple[str, ...]:
    if value is None:
        return ()
    if not isinstance(value, list):
        raise RequestError("fetch_files must be a list of paths")
    if len(value) > caps.count:
        raise RequestError(f"{len(value)} fetch_files is over the cap of {caps.count}")
    for path in value:
        relative_path(path)
    return tuple(dict.fromkeys(value))
