"""The run launcher (`run_launcher.c`): where it is built, and how the zygote starts a run by it.

Stdlib only (the zygote imports it). A run that execs its program (a
compiled program, its build, a script's runtime) is started by
`os.posix_spawn` of the launcher, which puts on every layer a forked run
puts on itself (`confine.Confinement._apply`, in its order) and execs the
program. The spawn shares the zygote's memory until it execs the launcher:
it copies none of the zygote's page tables and none of its heap, and runs
no interpreter, where a fork did all three (4.5 ms of CPU a C++ test run,
against about 1.6 ms for a bare `subprocess.run` of the same binary).

The launcher is built once per machine, beside the precompiled headers, by
the service's own C compiler (`build_launcher`, at start-up and in the
image); where there is none, or where the zygote's check of it fails
(`Zygote.self_test`), runs are forked as before.
"""

from __future__ import annotations

import fcntl
import os
import re
from collections.abc import Mapping, Sequence

NAME = "run-launcher"
SOURCE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "run_launcher.c")
FLAGS = (
    *("-O2", "-static", "-nostdlib", "-ffreestanding", "-fno-builtin", "-fno-stack-protector"),
    *("-fno-pie", "-no-pie", "-fno-asynchronous-unwind-tables", "-Wall", "-Wextra", "-Werror"),
)
"""Freestanding and static: the launcher starts without a loader or a C library."""
COMPILERS = ("cc", "gcc")
PROBE_OUTPUT = b"launcher ok\n"
"""What `run-launcher probe` writes: the zygote's check runs the launcher as the program."""
_STAMP = "stamp"
_REPORT = re.compile(r"^(\w+): errno (\d+)$")


def launcher_of(directory: str) -> str | None:
    """The launcher in `directory` if `build_launcher` built it from this source, else None."""
    if not directory:
        return None
    path = os.path.join(directory, NAME)
    try:
        with open(os.path.join(directory, _STAMP)) as f:
            stamp = f.read()
    except OSError:
        return None
    return path if stamp == _stamp() and os.access(path, os.X_OK) else None


def build_launcher(directory: str, path: str) -> str:
    """Build the launcher into `directory` with the first C compiler found in `path`, unless
    there already; what it did. OSError when it could not (no compiler, or it failed)."""
    if launcher_of(directory) is not None:
        return f"{NAME} kept in {directory}"
    import shutil
    import subprocess
    import tempfile

    compiler = next((c for c in map(lambda n: shutil.which(n, path=path), COMPILERS) if c), None)
    if compiler is None:
        raise OSError(f"no C compiler ({', '.join(COMPILERS)}) in {path}")
    os.makedirs(directory, exist_ok=True)
    # a name of its own: builds in other PID namespaces may share our pid
    handle, partial = tempfile.mkstemp(prefix=f"{NAME}.", dir=directory)
    os.close(handle)
    try:
        subprocess.run(
            [compiler, *FLAGS, SOURCE, "-o", partial],
            capture_output=True,
            timeout=60,
            check=True,
            env={"PATH": path},
        )
    except subprocess.CalledProcessError as e:
        os.unlink(partial)
        raise OSError(f"{compiler} failed: {e.stderr.decode(errors='replace')[:500]}") from e
    except subprocess.SubprocessError as e:
        os.unlink(partial)
        raise OSError(str(e)) from e
    os.chmod(partial, 0o755)
    os.replace(partial, os.path.join(directory, NAME))
    handle, stamp = tempfile.mkstemp(prefix=f"{_STAMP}.", dir=directory)
    with os.fdopen(handle, "w") as f:
        f.write(_stamp())
    os.chmod(stamp, 0o644)
    os.replace(stamp, os.path.join(directory, _STAMP))
    return f"{NAME} built in {directory}"


def _stamp() -> str:
    import hashlib  # not in the zygote, which imports this module: it maps libcrypto

    with open(SOURCE, "rb") as f:
        source = f.read()
    return f"{hashlib.sha256(source).hexdigest()} {' '.join(FLAGS)} {os.uname().machine}"


def spawn(
    launcher: str,
    fds: tuple[int, int, int, int],
    exec_fd: int,
    ruleset_fd: int | None,
    options: Sequence[str],
    argv: Sequence[str],
    env: Mapping[str, str],
) -> int:
    """Start the launcher on the run's pipes (`fds`: stdin's read end, stdout's, stderr's,
    the report's write ends), the program's file `exec_fd` and the landlock ruleset, with
    `options` (`Confinement.launch_options`), to become `argv` in `env`: the run's pid.
    OSError when the launcher could not be started."""
    sources = [*fds, exec_fd, *([ruleset_fd] if ruleset_fd is not None else [])]
    # copies above every target (fds 0-5), so that no dup2 overwrites a source still to come
    high = [fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 6) for fd in sources]
    try:
        actions = [(os.POSIX_SPAWN_DUP2, fd, target) for target, fd in enumerate(high)]
        where = ["exec=4", *(["ruleset=5"] if ruleset_fd is not None else [])]
        command = [NAME, *options, *where, "--", *argv]
        return os.posix_spawn(launcher, command, env, file_actions=actions, setsigmask=())
    finally:
        for fd in high:
            os.close(fd)


def readable_report(report: str) -> str:
    """A launcher's report (`<step>: errno <n>`) as a forked run writes its own
    (`<step>: <strerror>`); any other text as it is."""
    match = _REPORT.match(report)
    if match is None:
        return report
    return f"{match.group(1)}: {os.strerror(int(match.group(2)))}"
