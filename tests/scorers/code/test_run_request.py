"""Reading a `run_code` label: limits capped, files decoded under caps, paths kept inside."""

from __future__ import annotations

import base64
from typing import Any

import pytest

from reward_service.scorers.code.run_request import (
    FileCaps,
    RequestError,
    read_request,
    relative_path,
)
from reward_service.scorers.code.settings import CodeSettings

SETTINGS = CodeSettings(max_memory_mb=1000)
CAPS = FileCaps(count=2, bytes=16)


def _read(**label: Any) -> Any:
    return read_request({"language": "python", **label}, SETTINGS, CAPS)


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def test_defaults_are_sandbox_fusions() -> None:
    """A bare request runs 10 s (SandboxFusion's default), the memory cap, no stdin, no files."""
    request = _read()
    assert (request.language, request.stdin, request.files, request.fetch) == (
        "python",
        b"",
        (),
        (),
    )
    assert (request.limits.time_s, request.compile_time_s) == (10.0, 10.0)
    assert request.limits.memory_mb == 1000


@pytest.mark.parametrize(
    ("label", "time_s", "memory_mb"),
    [
        ({"run_timeout": 3, "memory_limit_MB": 512}, 3.0, 512),
        ({"run_timeout": 0.25, "memory_limit_MB": 100.5}, 0.25, 101),
        ({"run_timeout": 3600, "memory_limit_MB": 1 << 20}, 10.0, 1000),
        ({"run_timeout": 10**400, "memory_limit_MB": 10**400}, 10.0, 1000),
        ({"memory_limit_MB": -1}, 10.0, 1000),
        ({"memory_limit_MB": 0, "run_timeout": None}, 10.0, 1000),
    ],
)
def test_limits_are_capped_by_the_services(
    label: dict[str, Any], time_s: float, memory_mb: int
) -> None:
    """Asked limits hold up to the code scorer's caps; memory -1 or 0 (no limit) is the cap."""
    limits = _read(**label).limits
    assert (limits.time_s, limits.memory_mb) == (time_s, memory_mb)


@pytest.mark.parametrize(
    ("label", "reason"),
    [
        (
            {"language": "lean"},
            "language 'lean' is not run here; languages: python, python3, cpp, java, go, nodejs, "
            "javascript, rust, c, ruby, php, perl, lua",
        ),
        ({"language": ["python"]}, "language of type list is not run here"),
        ({"run_timeout": 0}, "run_timeout must be above 0 s"),
        ({"compile_timeout": "10"}, "compile_timeout must be a number, not '10'"),
        ({"memory_limit_MB": True}, "memory_limit_MB must be a number"),
        ({"stdin": 5}, "stdin must be a string or null"),
        ({"files": ["a"]}, "files must be an object"),
        ({"files": {"a": 5}}, "file 'a': content must be a base64 string"),
        ({"files": {"a": "not base64!"}}, "file 'a': content is not base64"),
        ({"files": {"a": _b64(b"x" * 17)}}, "files are over the cap of 16 bytes"),
        ({"files": {"a": _b64(b"x" * 9), "b": _b64(b"x" * 8)}}, "over the cap of 16 bytes"),
        ({"files": {"a": "", "b": "", "c": ""}}, "3 files is over the cap of 2"),
        ({"fetch_files": "out.txt"}, "fetch_files must be a list"),
        ({"fetch_files": ["a", "b", "c"]}, "3 fetch_files is over the cap of 2"),
    ],
)
def test_what_cannot_be_run_is_refused_with_the_reason(label: dict[str, Any], reason: str) -> None:
    """Each request the sandbox cannot run raises `RequestError` saying why."""
    with pytest.raises(RequestError) as raised:
        _read(**label)
    assert reason in str(raised.value)


@pytest.mark.parametrize(
    ("language", "runner"),
    [("python3", "python"), ("nodejs", "javascript"), ("javascript", "javascript"), ("cpp", "cpp")]
    + [(name, name) for name in ("c", "ruby", "php", "perl", "lua", "typescript", "R")]
    + [("ts", "typescript"), ("r", "R")]
    + [(name, name) for name in ("scala", "kotlin_script", "kotlin", "csharp", "D_ut", "d")]
    + [("racket", "racket")],
)
def test_sandbox_fusions_names_and_rolls_tags_pick_the_runner(language: str, runner: str) -> None:
    """SandboxFusion's `nodejs` and ROLL's `python3`, `javascript` tags name the runners."""
    assert _read(language=language).language == runner


def test_compile_timeout_is_capped_by_the_build_time() -> None:
    """`compile_timeout` is held to `REWARD_CODE__BUILD_TIME_S`, the run's to the run cap."""
    request = read_request(
        {"language": "cpp", "compile_timeout": 60, "run_timeout": 60},
        CodeSettings(build_time_s=20, max_time_limit_s=5),
        CAPS,
    )
    assert (request.compile_time_s, request.limits.time_s) == (20.0, 5.0)


def test_a_build_sandbox_fusion_runs_within_the_run_gets_the_run_timeout() -> None:
    """A Kotlin script's build and C#'s (SandboxFusion's `kotlin main.kts` and `dotnet run`
    compile within `run_timeout`) get the larger of the two times, held to the build cap;
    the run keeps its own cap, and a build SandboxFusion reports keeps `compile_timeout`."""
    settings = CodeSettings(build_time_s=20, max_time_limit_s=5)
    times = {}
    for language in ("kotlin_script", "csharp", "cpp"):
        label = {"language": language, "compile_timeout": 3, "run_timeout": 15}
        request = read_request(label, settings, CAPS)
        times[language] = (request.compile_time_s, request.limits.time_s)
    assert times == {"kotlin_script": (15.0, 5.0), "csharp": (15.0, 5.0), "cpp": (3.0, 5.0)}
    asked_more = {"language": "kotlin_script", "compile_timeout": 60, "run_timeout": 2}
    assert read_request(asked_more, settings, CAPS).compile_time_s == 20.0


def test_label_must_be_an_object() -> None:
    """A label that is not SandboxFusion's request is refused."""
    with pytest.raises(RequestError, match="must be an object"):
        read_request("python", SETTINGS, CAPS)


def test_files_are_decoded_and_null_contents_skipped() -> None:
    """Base64 contents are decoded at their normalised paths; a null one is not written."""
    request = _read(files={"d/./in.txt": _b64(b"hi\n"), "skipped": None}, stdin="1 2\n")
    assert request.files == (("d/in.txt", b"hi\n"),)
    assert request.stdin == b"1 2\n"


@pytest.mark.parametrize("language", ["cpp", "java", "go", "nodejs", "rust", "ruby", "lua"])
def test_files_are_read_for_every_language(language: str) -> None:
    """`files` and `fetch_files` are taken for the compiled languages as for Python."""
    request = _read(language=language, files={"in.txt": _b64(b"hi")}, fetch_files=["out.txt"])
    assert (request.files, request.fetch) == ((("in.txt", b"hi"),), ("out.txt",))


def test_fetch_files_keep_their_names_once_each() -> None:
    """Files to fetch keep the names the request gives (its answer's keys), duplicates dropped."""
    assert _read(fetch_files=["./out.txt", "./out.txt"]).fetch == ("./out.txt",)


@pytest.mark.parametrize(
    "path", ["/etc/passwd", "../x", "a/../../x", "..", ".", "", "a\0b", "x" * 256, "lone\ud800"]
)
def test_paths_outside_the_run_directory_are_refused(path: str) -> None:
    """Absolute paths, `..` out of the directory, empty, NUL, over-long names and names no
    file system holds (a lone surrogate) are refused."""
    with pytest.raises(RequestError):
        relative_path(path)
    with pytest.raises(RequestError):
        _read(fetch_files=[path])


@pytest.mark.parametrize(("path", "normal"), [("a/b", "a/b"), ("a/../b", "b"), ("./a//b", "a/b")])
def test_paths_inside_are_normalised(path: str, normal: str) -> None:
    """A path that stays inside is kept, normalised."""
    assert relative_path(path) == normal
