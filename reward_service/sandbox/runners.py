"""Languages: how a confined run process becomes the program.

Stdlib only (the zygote imports it). A runner's `run` is called in the run
process after every layer is in place and never returns. Python runs in
the forked interpreter itself (no exec: the filter denies it). A compiled
language (`toolchains`) runs as two `ExecRunner`s: its build, once per
program in a confined run of its own, and its launch, in every run: each
execs the file the zygote opened for it at `confine.EXEC_FD`, the launch
under a filter that allows exactly that exec (and, under `exec_once`, once),
through `linux.execveat`, which releases the interpreter's lock for the
thread that answers for it.
"""

from __future__ import annotations

import atexit
import io
import os
import sys
import traceback
import types
from dataclasses import dataclass
from typing import NoReturn, Protocol

from reward_service.sandbox import linux, run_files
from reward_service.sandbox.confine import EXEC_FD
from reward_service.sandbox.supervise import Sink
from reward_service.sandbox.toolchains import BUILD_HOME, Command

SCRIPT = "solution.py"
ONE_THREAD = {
    name: "1"
    for name in (
        "OMP_NUM_THREADS",
        "OPENBLAS_NUM_THREADS",
        "GOTO_NUM_THREADS",
        "MKL_NUM_THREADS",
        "BLIS_NUM_THREADS",
        "NUMEXPR_NUM_THREADS",
        "NUMEXPR_MAX_THREADS",
        "VECLIB_MAXIMUM_THREADS",
        "NUMBA_NUM_THREADS",
        "RAYON_NUM_THREADS",
        "POLARS_MAX_THREADS",
        "TF_NUM_INTRAOP_THREADS",
        "TF_NUM_INTEROP_THREADS",
    )
}
"""The environment numerical libraries read their thread pools' size from: one thread,
as a run has one core's time and address space for one (a pool per core would meet
RLIMIT_AS or the CPU limit, a wrong answer for a correct program)."""


def share_environment() -> None:
    """In the zygote, once: the environment every Python run starts from, `ONE_THREAD`
    alone (a run adds its HOME and TMPDIR), and its standard streams (`_STREAMS`). Set per
    run, the same 15 `putenv` calls copied some 90 of the zygote's pages per run (malloc's
    heap), a twentieth of its cost; the streams, built per run, cost a seventh."""
    os.environ.clear()
    os.environ.update(ONE_THREAD)
    _STREAMS.update(_standard_streams())


_STREAMS: dict[str, io.TextIOWrapper] = {}
"""sys.stdin, stdout and stderr of every Python run, over fds 0-2, built once in the zygote
and never used there: each run is forked with them as new."""


def _standard_streams() -> dict[str, io.TextIOWrapper]:
    """The three streams as python builds them over pipes (what a run's fds 0-2 are: the
    objects keep what they learn of their fd at construction, that it cannot seek),
    built over a pipe put at fds 0-2 for the moment."""
    saved = [os.dup(fd) for fd in (0, 1, 2)]
    read_end, write_end = os.pipe()
    try:
        for fd, end in ((0, read_end), (1, write_end), (2, write_end)):
            os.dup2(end, fd, inheritable=False)
        return {
            "stdin": _text_stream(0, "r", "surrogateescape"),
            "stdout": _text_stream(1, "w", "surrogateescape"),
            "stderr": _text_stream(2, "w", "backslashreplace", interactive=True),
        }
    finally:
        for fd, old in zip((0, 1, 2), saved, strict=True):
            os.dup2(old, fd, inheritable=False)
            os.close(old)
        os.close(read_end)
        os.close(write_end)


class Runner(Protocol):
    @property
    def name(self) -> str:
        """The language (`Program.language`), or a build's `<language>-build`."""

    def write_files(self, source: memoryview, workdir: str) -> None:
        """In the zygote, before the fork: the files the run starts with (it may write none).

        `source` is the program's UTF-8 text, in a buffer runs do not inherit."""

    def run(self, workdir: str) -> NoReturn:
        """Become the program: stdin/stdout/stderr are fds 0-2 (no other is open but
        `EXEC_FD` for an exec), cwd is `workdir`."""

    def out_of_memory(self, exit_code: int, stderr: Sink) -> bool:
        """Whether a run that ended so died of running out of memory."""


@dataclass(frozen=True)
class Prepared:
    """A process ready to run the Python program in its directory (`PythonRunner.prepare`)."""

    script: str
    main: types.ModuleType
    """`__main__`, fresh: the namespace the program runs in."""


class PythonRunner:
    """Behaves like `python solution.py`: `__main__`, exit statuses, tracebacks, flushing."""

    name = "python"

    def write_files(self, source: memoryview, workdir: str) -> None:
        run_files.write_file(os.path.join(workdir, SCRIPT), source)

    def run(self, workdir: str) -> NoReturn:
        self.start(self.prepare(workdir))

    def prepare(self, workdir: str) -> Prepared:
        """What every run of a program in `workdir` starts from, made once in the process
        that runs it or forks its runs (`template`): the environment, `sys.argv`,
        `sys.path`, the standard streams and a fresh `__main__` (a run writes to every
        page it touches first, a copy-on-write fault each: what its template does for it
        costs a run nothing). Nothing of the program: each run reads and compiles its
        source, under its whole seccomp filter, so that no part of the interpreter meets
        it less confined and a template holds nothing of any answer."""
        script = os.path.join(workdir, SCRIPT)
        os.environ["HOME"] = os.environ["TMPDIR"] = workdir  # beside `share_environment`'s
        # No 4,300-digit limit on int <-> str (CPython's default since 3.11, and the zygote's):
        # `print(factorial(5000))` is a correct answer to a problem whose outputs were made
        # without it, as judges and older Pythons make them.
        sys.set_int_max_str_digits(0)
        sys.argv = [SCRIPT]
        sys.path[:] = [workdir, *sys.path]
        for name, stream in _STREAMS.items():
            setattr(sys, name, stream)
            setattr(sys, f"__{name}__", stream)
        main = types.ModuleType("__main__")
        main.__file__ = script
        sys.modules["__main__"] = main
        return Prepared(script, main)

    def start(self, prepared: Prepared) -> NoReturn:
        """Become the program in the prepared directory."""
        try:
            fd = os.open(prepared.script, os.O_RDONLY | os.O_CLOEXEC)  # no stream to build
            try:
                source = os.read(fd, os.fstat(fd).st_size)
            finally:
                os.close(fd)
        except OSError as e:  # as `python` says it
            os.write(2, f"python: can't open file {prepared.script!r}: {e}\n".encode())
            os._exit(2)
        os._exit(_finish(_execute(source, prepared.main)))

    def out_of_memory(self, exit_code: int, stderr: Sink) -> bool:
        """Status 1 and a last stderr line starting `MemoryError`, as `python` ends so."""
        return exit_code == 1 and stderr.last_line_starts(b"MemoryError")


EXEC_FAILED = 127


@dataclass(frozen=True)
class ExecRunner:
    """Becomes `command` by exec of the file at `EXEC_FD`: a build (`build`: its stderr
    joined to stdout, a home of its own) or a program's run; either starts with the
    source as `source_name` when it has one (a build's input, a script its runtime reads)."""

    name: str
    command: Command
    source_name: str | None = None
    memory_errors: tuple[bytes, ...] = ()
    build: bool = False

    def write_files(self, source: memoryview, workdir: str) -> None:
        if self.source_name is not None:
            prefix = self.command.source_prefix.encode()
            run_files.write_file(os.path.join(workdir, self.source_name), source, prefix=prefix)
        for directory in self.command.directories:
            os.mkdir(os.path.join(workdir, directory), 0o755)
        for name, target in self.command.links.items():
            os.symlink(target, os.path.join(workdir, name))
        for name, text in self.command.files.items():
            run_files.write_file(os.path.join(workdir, name), memoryview(text.encode()))

    def run(self, workdir: str) -> NoReturn:
        env = self.environment(workdir)
        if self.build:
            os.dup2(1, 2)  # a build's messages, in the order the compiler wrote them
        for fd in (0, 1, 2):  # the run's pipes are close-on-exec (`confine._own_fds`)
            os.set_inheritable(fd, True)
        try:
            linux.execveat(EXEC_FD, self.command.argv, env)
        except OSError as e:
            os.write(2, f"sandbox: exec of {self.command.argv[0]} failed: {e}\n".encode())
        os._exit(EXEC_FAILED)

    def environment(self, workdir: str) -> dict[str, str]:
        """The program's environment in `workdir` (the launcher's runs get the same)."""
        # a build's home is a directory of its own, empty (`toolchains.BUILD_HOME`); a
        # program's is its working directory
        home = os.path.join(workdir, BUILD_HOME) if self.build else workdir
        env = {"HOME": home, "TMPDIR": home, **ONE_THREAD}
        if self.build:
            env |= {f"XDG_{kind}_HOME": home for kind in ("CONFIG", "CACHE", "DATA", "STATE")}
        # $ORIGIN in a runtime's library path (the JDK's, rustc's) is found through
        # /proc/self/exe, which a mount namespace in a user namespace has not: say it here
        env["LD_ORIGIN_PATH"] = os.path.dirname(self.command.executable)
        env.update(
            (k, v.replace("{workdir}", workdir).replace("{home}", home))
            for k, v in self.command.env.items()
        )
        return env

    def out_of_memory(self, exit_code: int, stderr: Sink) -> bool:
        return exit_code != 0 and any(stderr.contains(text) for text in self.memory_errors)


def _text_stream(fd: int, mode: str, errors: str, interactive: bool = False) -> io.TextIOWrapper:
    """A standard stream over `fd` as python builds it (stderr: line-buffered, written through)."""
    raw = io.FileIO(fd, mode, closefd=False)
    buffered = io.BufferedReader(raw) if mode == "r" else io.BufferedWriter(raw)
    return io.TextIOWrapper(
        buffered,
        encoding="utf-8",
        errors=errors,
        line_buffering=interactive,
        write_through=interactive,
    )


def _execute(source: bytes, main: types.ModuleType) -> int:
    """The program's exit status as `python` would compute it."""
    try:
        # dont_inherit: not this module's `from __future__ import annotations` (a program
        # compiled here took it, and its annotations went unevaluated, unlike `python`'s)
        exec(compile(source, SCRIPT, "exec", dont_inherit=True), main.__dict__)
    except SystemExit as e:
        return _exit_status(e)
    except BaseException as e:  # the program's own failure, reported as python would
        _print_exception(e)
        return 1
    return 0


def _exit_status(e: SystemExit) -> int:
    if e.code is None:
        return 0
    if isinstance(e.code, int):
        return e.code & 0xFF
    print(e.code, file=sys.stderr)
    return 1


def _print_exception(e: BaseException) -> None:
    """The traceback without this module's frame, as `python` prints it."""
    tb = e.__traceback__.tb_next if e.__traceback__ is not None else None
    try:
        traceback.print_exception(type(e), e, tb, file=sys.stderr)
    except BaseException:  # out of memory while printing: the status still says it
        os.write(2, f"{type(e).__name__}\n".encode())


def _finish(status: int) -> int:
    """Interpreter shutdown's visible part: threads joined, atexit run, streams flushed."""
    threading = sys.modules.get("threading")
    try:
        if threading is not None:
            threading._shutdown()
        atexit._run_exitfuncs()
    except BaseException as e:
        _print_exception(e)
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except BaseException:
            return 120
    return status


RUNNERS: dict[str, Runner] = {runner.name: runner for runner in (PythonRunner(),)}
"""Runner name (`Program.language`) -> runner."""
