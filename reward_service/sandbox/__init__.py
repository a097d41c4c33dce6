"""Running model-written programs: hostile by assumption, confined in layers.

The port the scorers that run programs use (`Sandbox`: `layers`, `execute`,
`close`), and the data it speaks; the sandbox's processes live behind it.
A program never runs inside a grading worker or the server and shares no
pipe, pickle stream or shared memory with them: its output comes back as
bytes and is parsed as data.

`zygote_client.ZygoteSandbox` is the implementation a worker holds. The
zygote process it starts imports only the stdlib and these modules:
`zygote` (fork, supervise, answer), `template` (a Python answer's runs forked
by one confined process), `confine` (what a run does to itself),
`runners` (how a run becomes the program), `toolchains` (compiled
languages: build once per program, then exec), `seccomp`, `exec_once`, `landlock`,
`namespaces`, `linux` (ctypes calls) and `protocol` (length-prefixed JSON,
spoken by both sides). docs/sandbox.md describes the layers.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

from reward_service.sandbox.toolchains import TOOLCHAINS

LANGUAGES = ("python", *TOOLCHAINS)
"""The runners a `Program.language` may name: python, and the languages of
`toolchains.TOOLCHAINS` (cpp, java, go, javascript, rust, c, ruby, php, perl, lua,
typescript, R, verilog, csharp, kotlin, kotlin_script, scala, d, D_ut, racket)."""

LAYERS = (
    "process",
    "rlimits",
    "uid",
    "seccomp",
    "exec_once",
    "landlock",
    "userns",
    "netns",
    "mountns",
    "pidns",
    "namespaces",
)
"""Every layer name `Sandbox.layers` may report (docs/sandbox.md says what each holds);
`namespaces` stands for netns, mountns and pidns together."""


class Kind(str, enum.Enum):
    """How one run of a program ended."""

    OK = "ok"
    """Exited with status 0 within every limit (its output may still be wrong)."""
    RUNTIME_ERROR = "runtime_error"
    """Exited non-zero, raised, was killed by a signal."""
    TIME_LIMIT = "time_limit"
    """Ran past its wall or CPU time."""
    MEMORY_LIMIT = "memory_limit"
    """Ran out of its address space."""
    OUTPUT_LIMIT = "output_limit"
    """Wrote more than its output cap."""
    COMPILE_ERROR = "compile_error"
    """Did not build (`Execution.outcomes` answers this one outcome; `Execution.build` says
    how)."""


@dataclass(frozen=True)
class Limits:
    """What one run of a program may use."""

    time_s: float
    """Wall-clock and CPU seconds."""
    memory_mb: int
    """Address space, MiB."""
    output_bytes: int
    """Standard output kept; writing more ends the run with `output_limit`."""


@dataclass(frozen=True)
class Program:
    """A program to run: its language (a runner's name) and its source text."""

    language: str
    source: str
    dialect: str | None = None
    """The language's standard or edition where it has several (C++ `c++17`, `c++20`...;
    Rust `2021`...); None: the default (`toolchains.Toolchain.dialects`)."""
    files: tuple[tuple[str, bytes], ...] = ()
    """(relative path, content): written beside the source, in its build's directory and
    in every run's (the working directory); a path the source takes is left out."""


@dataclass(frozen=True)
class Outcome:
    """The end of one run."""

    kind: Kind
    stdout: bytes
    """What it wrote to standard output, at most `Limits.output_bytes`."""
    stderr: str
    """The tail of its standard error (about 1 kB), decoded with replacement."""
    exit_code: int | None
    """Its exit status, or None when a signal ended it."""
    elapsed_s: float
    files: dict[str, bytes] = field(default_factory=dict)
    """The files asked for (`Sandbox.execute`'s `fetch`) found in its directory when
    it ended: regular files, never through a link, within the bytes allowed."""
    signal: int | None = None
    """The signal it died of (`exit_code` is then None): the sandbox's SIGKILL for a run
    it ended (its time, its output cap), else the program's own (SIGABRT of a failed C++
    `assert`, SIGSEGV)."""


@dataclass(frozen=True)
class Execution:
    """A program's build (compiled languages) and its runs."""

    build: Outcome | None
    """How the build ended (`ok`, or why not: `runtime_error` for the compiler's own
    failure, `time_limit`, `memory_limit`, `output_limit`; `stderr` its messages' head);
    None for a language without one. A program that did not build has no runs."""
    runs: list[Outcome]

    def outcomes(self) -> list[Outcome]:
        """The runs, or one `compile_error` that carries the build's: for a caller that reads
        a program that did not build as one failed run."""
        if self.build is None or self.build.kind is Kind.OK:
            return self.runs
        build = self.build
        return [Outcome(Kind.COMPILE_ERROR, b"", build.stderr, build.exit_code, build.elapsed_s)]


class Sandbox(Protocol):
    """The one port programs run through: one program, once per standard input, each run
    confined and separate. The service's is `zygote_client.ZygoteSandbox`; tests use
    `reward_service.testing.RecordingSandbox`."""

    @property
    def layers(self) -> Sequence[str]:
        """The confinement layers active for every run, e.g. `("process", "rlimits",
        "seccomp", "landlock", "namespaces")`."""

    def execute(
        self,
        program: Program,
        stdins: Sequence[bytes],
        limits: Limits,
        budget_s: float,
        *,
        stop_at_first_failure: bool = True,
        build_time_s: float | None = None,
        build_memory_mb: int | None = None,
        fetch: Sequence[str] = (),
        fetch_bytes: int = 0,
    ) -> Execution:
        """Build `program` once (a compiled language), then run it once per item of
        `stdins`, in order, each in a fresh process: the build's outcome and the runs'.

        The build has its own limits (the sandbox's own unless `build_time_s` and
        `build_memory_mb` say), inside `budget_s` (the whole call's seconds). The runs
        stop after the first that is not `Kind.OK` when `stop_at_first_failure`, and
        before one that could overrun `budget_s`: they may be fewer than `stdins`. Each
        run's `Outcome.files` holds the files of `fetch` (relative paths) it left,
        `fetch_bytes` of them in all. Raises `SandboxUnavailable` when the language
        cannot run here (no toolchain, or its build could not run), ValueError for a
        language or dialect there is no runner for; never for anything the program does.
        """

    def close(self) -> None:
        """Stop the sandbox's processes; nothing of any run survives."""
