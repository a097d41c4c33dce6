"""The run launcher (`run_launcher.c`): a run it starts is confined exactly as a forked run.

Both ways run the same C probe, which reports what it finds of its own
confinement; the reports must agree, and hold what every run must hold.
The launcher's own failures are named, and a launcher that fails its
check leaves runs forked.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from reward_service.sandbox import Kind, Limits, Program, run_launcher
from reward_service.sandbox.toolchains import Found, discover
from reward_service.sandbox.zygote_client import ZygoteSandbox
from reward_service.scorers.code.settings import DEFAULT_TOOLCHAIN_PATH

C = discover(DEFAULT_TOOLCHAIN_PATH, ["c"])["c"]
pytestmark = pytest.mark.needs_tool("" if isinstance(C, Found) else f"c: {C}")
LIMITS = Limits(time_s=2.0, memory_mb=128, output_bytes=1 << 16)

PROBE = r"""
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

static void credentials(void) {
    struct { unsigned version; int pid; } header = {0x20080522, 0};  /* v3 */
    struct { unsigned effective, permitted, inheritable; } data[2];
    memset(data, 0xff, sizeof data);
    long got = syscall(SYS_capget, &header, data);
    printf("capget %ld effective %x %x permitted %x %x inheritable %x %x\n", got,
           data[0].effective, data[1].effective, data[0].permitted, data[1].permitted,
           data[0].inheritable, data[1].inheritable);
    printf("uid %d %d gid %d %d groups %d\n", getuid(), geteuid(), getgid(), getegid(),
           getgroups(0, NULL));
    printf("no_new_privs %d seccomp %d\n", prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0),
           prctl(PR_GET_SECCOMP, 0, 0, 0, 0));
}

int main(void) {
    credentials();
    printf("own session %d, own group %d\n", getsid(0) == getpid(), getpgrp() == getpid());
    printf("dumpable %d\n", prctl(PR_GET_DUMPABLE));
    int death = -1;
    prctl(PR_GET_PDEATHSIG, &death);
    printf("death signal %d\n", death);
    int resources[] = {RLIMIT_CORE, RLIMIT_CPU, RLIMIT_AS, RLIMIT_FSIZE, RLIMIT_NOFILE,
                       RLIMIT_NPROC};
    for (size_t i = 0; i < sizeof resources / sizeof *resources; i++) {
        struct rlimit r;
        getrlimit(resources[i], &r);
        printf("rlimit %d %llu %llu\n", resources[i], (unsigned long long)r.rlim_cur,
               (unsigned long long)r.rlim_max);
    }
    printf("open fds:");
    for (int fd = 0; fd < 1024; fd++)
        if (fcntl(fd, F_GETFD) != -1) printf(" %d", fd);
    printf("\n");
    char cwd[4096];
    printf("cwd is home %d\n", getcwd(cwd, sizeof cwd) && !strcmp(cwd, getenv("HOME")));
    sigset_t mask;
    sigprocmask(SIG_BLOCK, NULL, &mask);
    printf("signals blocked %d\n", !sigisemptyset(&mask));
    for (int sig = 1; sig < 32; sig++) {
        struct sigaction action;
        sigaction(sig, NULL, &action);
        if (action.sa_handler != SIG_DFL) printf("signal %d not default\n", sig);
    }
    fflush(stdout);
    pid_t child = fork();
    if (child == 0) _exit(0);
    printf("fork %d errno %d\n", child > 0, child < 0 ? errno : 0);
    char *argv[] = {"sh", "-c", "true", NULL};
    execv("/bin/sh", argv);
    printf("exec errno %d\n", errno);
    return 0;
}
"""


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A launcher built for these tests, in a directory of their own."""
    directory = str(tmp_path_factory.mktemp("launcher"))
    run_launcher.build_launcher(directory, DEFAULT_TOOLCHAIN_PATH)
    return directory


@pytest.fixture(scope="module")
def launched(built: str) -> Iterator[ZygoteSandbox]:
    with ZygoteSandbox(
        toolchain_path=DEFAULT_TOOLCHAIN_PATH, languages=["c"], launcher_dir=built
    ) as sandbox:
        yield sandbox


@pytest.fixture(scope="module")
def forked() -> Iterator[ZygoteSandbox]:
    with ZygoteSandbox(toolchain_path=DEFAULT_TOOLCHAIN_PATH, languages=["c"]) as sandbox:
        yield sandbox


def _report(sandbox: ZygoteSandbox) -> list[str]:
    execution = sandbox.execute(Program("c", PROBE), [b""], LIMITS, 60)
    assert execution.build is not None and execution.build.kind is Kind.OK, execution.build
    run = execution.runs[0]
    assert run.kind is Kind.OK, (run.kind, run.stderr)
    return run.stdout.decode().splitlines()


def test_a_launched_run_is_confined_exactly_as_a_forked_one(
    launched: ZygoteSandbox, forked: ZygoteSandbox
) -> None:
    """Every fact the probe finds of its confinement is the same both ways, and the facts
    every run must have hold: no capabilities, no_new_privs, a filter, not dumpable, a
    session of its own, only its three streams open, its limits, no fork, no exec."""
    assert (launched.launcher, forked.launcher) == ("on", "none built")
    report, forked_report = _report(launched), _report(forked)
    ids = {name: _ids(r) for name, r in (("launched", report), ("forked", forked_report))}
    assert [line for line in report if not line.startswith("uid ")] == [
        line for line in forked_report if not line.startswith("uid ")
    ]
    assert "capget 0 effective 0 0 permitted 0 0 inheritable 0 0" in report, report
    assert "no_new_privs 1 seccomp 2" in report, report
    for line in (
        "own session 1, own group 1",
        "dumpable 0",
        "open fds: 0 1 2",
        "cwd is home 1",
        "signals blocked 0",
        f"fork 0 errno {1}",  # EPERM
        f"rlimit {4} 0 0",  # RLIMIT_CORE
        f"rlimit {7} 256 256",  # RLIMIT_NOFILE
        f"rlimit {9} {128 << 20} {128 << 20}",  # RLIMIT_AS
    ):
        assert line in report, (line, report)
    assert "exec errno 0" not in report and "fork 1 errno 0" not in report, report
    for name, (uids, groups) in ids.items():  # each zygote's runs have a uid of their own
        assert len(set(uids)) == 1 and groups == 0, (name, uids)
        assert uids[0] != 0 or "uid" not in launched.layers, (name, uids)


def _ids(report: list[str]) -> tuple[list[int], int]:
    """The uid line's uid, euid, gid, egid, and the number of supplementary groups."""
    words = next(line for line in report if line.startswith("uid ")).split()
    return [int(words[i]) for i in (1, 2, 4, 5)], int(words[7])


def _launch_alone(launcher: str, program: str, options: list[str]) -> tuple[int, bytes, bytes]:
    """The launcher started from this process on fresh pipes, to exec the file `program`
    (argv `["it"]`) with `options`: its exit status, stderr and report."""
    ends = [os.pipe() for _ in range(4)]
    theirs = (ends[0][0], ends[1][1], ends[2][1], ends[3][1])
    ours = (ends[0][1], ends[1][0], ends[2][0], ends[3][0])
    executable = os.open(program, os.O_PATH | os.O_CLOEXEC)
    try:
        pid = run_launcher.spawn(launcher, theirs, executable, None, options, ["it"], {})
    finally:
        for fd in (executable, *theirs):
            os.close(fd)
    _, status = os.waitpid(pid, 0)
    stderr, report = os.read(ours[2], 4096), os.read(ours[3], 4096)
    for fd in ours:
        os.close(fd)
    return os.waitstatus_to_exitcode(status), stderr, report


def test_the_launcher_names_the_step_that_failed(built: str) -> None:
    """A step that fails ends the launcher before the program, its name and errno on the
    report pipe (read back as a forked run writes it), status 125; so does a call the
    zygote got wrong."""
    path = run_launcher.launcher_of(built)
    assert path is not None
    cases = {
        "process: No such process": ["zygote=1", "dir=/"],  # not our parent
        "launcher: Invalid argument": ["zygote=1", "dir=/", "nonsense"],
    }
    for expected, options in cases.items():
        status, _, report = _launch_alone(path, "/bin/true", options)
        assert status == 125, report
        assert run_launcher.readable_report(report.decode()) == expected


def test_an_exec_that_fails_after_confinement_is_told_on_stderr(built: str) -> None:
    """Every step done, an exec the kernel refuses (here: a directory) is the program's
    failure, as a forked run's: a line on stderr, status 127, nothing on the report pipe."""
    path = run_launcher.launcher_of(built)
    assert path is not None
    status, stderr, report = _launch_alone(path, "/", [f"zygote={os.getpid()}", "dir=/"])
    assert status == 127
    assert stderr == b"sandbox: exec of it failed: errno 13\n" and report == b""


def test_a_launcher_that_fails_its_check_leaves_runs_forked(tmp_path: Path) -> None:
    """A launcher whose probe does not answer as it should is not used: the zygote says
    why, and runs are forked and pass."""
    directory = tmp_path / "broken"
    run_launcher.build_launcher(str(directory), DEFAULT_TOOLCHAIN_PATH)
    shutil.copy("/bin/false", directory / run_launcher.NAME)
    with ZygoteSandbox(
        toolchain_path=DEFAULT_TOOLCHAIN_PATH, languages=["c"], launcher_dir=str(directory)
    ) as sandbox:
        assert sandbox.launcher.startswith("its check failed"), sandbox.launcher
        source = '#include <stdio.h>\nint main(void) { puts("forked"); return 0; }\n'
        run = sandbox.execute(Program("c", source), [b""], LIMITS, 60).runs[0]
        assert (run.kind, run.stdout) == (Kind.OK, b"forked\n")


def test_a_build_is_kept_while_its_source_is_the_same(tmp_path: Path) -> None:
    """`build_launcher` builds once, keeps a build of this source, and builds again over a
    stale one (another source's stamp)."""
    directory = str(tmp_path)
    assert run_launcher.build_launcher(directory, DEFAULT_TOOLCHAIN_PATH).endswith(
        "built in " + directory
    )
    assert run_launcher.build_launcher(directory, DEFAULT_TOOLCHAIN_PATH).endswith(
        "kept in " + directory
    )
    (tmp_path / "stamp").write_text("another source")
    assert run_launcher.launcher_of(directory) is None
    assert "built" in run_launcher.build_launcher(directory, DEFAULT_TOOLCHAIN_PATH)
    assert run_launcher.launcher_of(directory) == os.path.join(directory, run_launcher.NAME)
    with pytest.raises(OSError, match="no C compiler"):
        run_launcher.build_launcher(str(tmp_path / "other"), str(tmp_path))
