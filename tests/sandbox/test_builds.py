"""Builds of compiled programs in the zygote sandbox (C++): once per program, confined, bounded.

The compiler is attack surface too: what it may read, how long it may take,
how much it may write. And the built program execs only itself.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from reward_service.errors import SandboxUnavailable
from reward_service.sandbox import Kind, Limits, Program
from reward_service.sandbox.confine import EXEC_FD
from reward_service.sandbox.toolchains import Found, discover
from reward_service.sandbox.zygote_client import ZygoteSandbox, exec_gap, write_gap
from reward_service.scorers.code.settings import DEFAULT_TOOLCHAIN_PATH

CPP = discover(DEFAULT_TOOLCHAIN_PATH, ["cpp"])["cpp"]
FOUND_R = discover(DEFAULT_TOOLCHAIN_PATH, ["R"])["R"]
pytestmark = pytest.mark.needs_tool("" if isinstance(CPP, Found) else f"cpp: {CPP}")
LIMITS = Limits(time_s=2.0, memory_mb=256, output_bytes=1 << 20)
ECHO = (
    "#include <iostream>\nint main() { long long a; std::cin >> a; std::cout << 2 * a << '\\n'; }\n"
)


@pytest.fixture(scope="module")
def sandbox() -> Iterator[ZygoteSandbox]:
    with ZygoteSandbox(toolchain_path=DEFAULT_TOOLCHAIN_PATH, languages=["cpp"]) as running:
        yield running


def test_a_header_among_the_files_is_built_with_and_tells_builds_apart(
    sandbox: ZygoteSandbox,
) -> None:
    """`Program.files` are beside the source when it compiles (`#include "k.h"`), and a build
    is kept for its source and files together: another header builds again."""
    source = '#include "k.h"\n#include <iostream>\nint main() { std::cout << K; }\n'
    outputs = [
        sandbox.execute(Program("cpp", source, files=(("k.h", k),)), [b""], LIMITS, 30).runs
        for k in (b"int K = 7;", b"int K = 8;")
    ]
    assert [runs[0].stdout for runs in outputs] == [b"7", b"8"]


def test_a_program_builds_once_for_all_its_requests(sandbox: ZygoteSandbox) -> None:
    """The tests of one program sent in several requests share one build; another source
    gets its own."""
    first = sandbox.execute(Program("cpp", ECHO), [b"1\n", b"2\n"], LIMITS, 30)
    again = sandbox.execute(Program("cpp", ECHO), [b"3\n"], LIMITS, 30)
    assert [r.stdout for r in first.runs + again.runs] == [b"2\n", b"4\n", b"6\n"]
    assert first.build is not None and again.build is not None
    assert again.build == first.build  # kept: the same build, not a second one
    other = sandbox.execute(Program("cpp", ECHO + "// another\n"), [b"4\n"], LIMITS, 30)
    assert other.build is not None and other.build.elapsed_s != first.build.elapsed_s
    assert [r.stdout for r in other.runs] == [b"8\n"]


@pytest.mark.parametrize("path", ["/proc/self/environ", "/etc/shadow", "/proc/1/cmdline"])
def test_the_compiler_reads_no_more_than_a_run(sandbox: ZygoteSandbox, path: str) -> None:
    """`#include` of a secret is a failed build, its contents nowhere in the messages."""
    source = f'#include "{path}"\nint main() {{}}\n'
    done = sandbox.execute(Program("cpp", source), [b""], LIMITS, 30)
    assert done.build is not None and done.build.kind is Kind.RUNTIME_ERROR, done.build
    assert path in done.build.stderr and not done.runs
    assert (
        sandbox.execute(Program("cpp", source), [b""], LIMITS, 30).outcomes()[0].kind
        is Kind.COMPILE_ERROR
    )


def test_a_compiler_that_runs_long_meets_the_build_time_limit(sandbox: ZygoteSandbox) -> None:
    """A compile-time loop ends at the build's own time limit, not the answer's budget."""
    # Many evaluations, each ending at or near g++'s constexpr operation limit (one loop of
    # 2^40 met that limit in ~1.1 s, a race with the 1 s build limit): minutes in all.
    source = "constexpr long long f(long long k) { long long s = 0; "
    source += "for (long long i = 0; i < (1LL << 22); ++i) s += i ^ k; return s; }\n"
    source += "".join(f"static_assert(f({k}) != 1);\n" for k in range(200)) + "int main() {}\n"
    done = sandbox.execute(Program("cpp", source), [b""], LIMITS, 30, build_time_s=1.0)
    assert done.build is not None and done.build.kind is Kind.TIME_LIMIT, done.build
    assert done.build.elapsed_s < 3.0 and not done.runs
    assert done.build.stderr.startswith("sandbox: the build ran past its 1 s"), done.build


def test_a_gigabyte_binary_meets_the_file_limit(sandbox: ZygoteSandbox) -> None:
    """A program whose binary would hold a gigabyte of data does not build (RLIMIT_FSIZE)."""
    source = "char big[1 << 30] = {1};\nint main() { return big[7]; }\n"
    done = sandbox.execute(Program("cpp", source), [b""], LIMITS, 30)
    assert done.build is not None and done.build.kind is not Kind.OK, done.build
    assert not done.runs


EXECS = r"""
#define EXEC_FD @EXEC_FD@
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>
int main() {
    char sh[] = "/bin/sh", arg[] = "-c", say[] = "echo EXECUTED";
    char *argv[] = {sh, arg, say, nullptr}, *envp[] = {nullptr};
    execve(sh, argv, envp);
    std::printf("execve %s\n", std::strerror(errno));
    syscall(SYS_execveat, EXEC_FD, sh, argv, envp, AT_EMPTY_PATH);
    std::printf("execveat %s\n", std::strerror(errno));
    int fd = open(sh, O_PATH);
    syscall(SYS_execveat, fd, "", argv, envp, AT_EMPTY_PATH);
    std::printf("execveat-fd %s\n", std::strerror(errno));
    std::printf("fork %d\n", (int)fork());
}
"""


def test_a_built_program_execs_nothing_but_itself(sandbox: ZygoteSandbox) -> None:
    """The run's one exec was its own: a shell by path, by the exec descriptor's number with
    an absolute path, or by a descriptor of its own, is refused; so is fork."""
    source = EXECS.replace("@EXEC_FD@", str(EXEC_FD))
    (run,) = sandbox.execute(Program("cpp", source), [b""], LIMITS, 30).outcomes()
    lines = run.stdout.decode().splitlines()
    assert run.kind is Kind.OK and "EXECUTED" not in run.stdout.decode(), run
    refused = {"Operation not permitted", "Permission denied", "Function not implemented"}
    assert [line.split(" ", 1)[0] for line in lines] == [
        "execve",
        "execveat",
        "execveat-fd",
        "fork",
    ]
    assert all(line.split(" ", 1)[1] in refused for line in lines[:3]), lines
    assert lines[3] == "fork -1", lines


EXEC_AGAIN = r"""
#define EXEC_FD @EXEC_FD@
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <string>
#include <sys/syscall.h>
#include <unistd.h>
int main(int argc, char **args) {
    if (argc > 1) { std::printf("EXECUTED again\n"); return 0; }
    char again[] = "again", sh[] = "/bin/sh", arg[] = "-c", say[] = "echo EXECUTED";
    char *self_argv[] = {args[0], again, nullptr}, *envp[] = {nullptr};
    char *sh_argv[] = {sh, arg, say, nullptr};
    // its own binary (LD_ORIGIN_PATH is its directory), by the call its one exec made
    std::string self = std::string(std::getenv("LD_ORIGIN_PATH")) + "/main";
    syscall(SYS_execveat, EXEC_FD, self.c_str(), self_argv, envp, AT_EMPTY_PATH);
    std::printf("self %s\n", std::strerror(errno));
    syscall(SYS_execveat, EXEC_FD, sh, sh_argv, envp, AT_EMPTY_PATH);
    std::printf("shell %s\n", std::strerror(errno));
}
"""


def test_after_its_one_exec_a_program_cannot_exec_even_itself(sandbox: ZygoteSandbox) -> None:
    """Under `exec_once` the run's exec was its last: the same call on its own binary (which
    landlock lets it execute) answers ENOSYS, and so does the shell by the exec descriptor
    and a path."""
    if "exec_once" not in sandbox.layers:
        pytest.skip(f"exec_once is off here (layers: {', '.join(sandbox.layers)})")
    source = EXEC_AGAIN.replace("@EXEC_FD@", str(EXEC_FD))
    (run,) = sandbox.execute(Program("cpp", source), [b""], LIMITS, 30).outcomes()
    assert run.kind is Kind.OK, run
    assert run.stdout.decode().splitlines() == [
        "self Function not implemented",
        "shell Function not implemented",
    ]


@pytest.mark.parametrize("memory_mb", [16, 32])
def test_a_program_runs_under_an_address_space_below_the_zygotes(
    sandbox: ZygoteSandbox, memory_mb: int
) -> None:
    """A run's limits come before its exec, so `memory_mb` below the zygote's own size (~27 MB)
    binds the run's process while it is still the zygote's copy: what `exec_once`'s thread
    needs is allocated before them, and every run starts."""
    source = '#include <cstdio>\nint main() { std::puts("ok"); }\n'
    limits = Limits(time_s=2.0, memory_mb=memory_mb, output_bytes=1 << 16)
    done = sandbox.execute(
        Program("cpp", source), [b""] * 5, limits, 30, stop_at_first_failure=False
    )
    assert [(run.kind, run.stdout) for run in done.runs] == [(Kind.OK, b"ok\n")] * 5, done.runs


@pytest.mark.parametrize(
    ("layers", "closed"),
    [
        ({"seccomp", "landlock"}, False),
        ({"seccomp", "exec_once"}, False),
        ({"seccomp", "uid"}, True),
        ({"process", "rlimits"}, True),
    ],
)
def test_exec_gap_names_the_platforms_a_compiled_program_could_exec_a_shell_on(
    layers: set[str], closed: bool
) -> None:
    """Only landlock's execute right or exec_once hold a program to its one exec."""
    assert (exec_gap(layers) is not None) is closed


def test_compiled_languages_are_closed_where_no_layer_holds_their_exec(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """With neither landlock nor exec_once (an old kernel), a C++ answer is refused with the
    reason instead of run with the exec gap; Python, which never execs, still runs."""
    started = ZygoteSandbox._start

    def weaker(self: ZygoteSandbox) -> tuple[str, ...]:
        return tuple(layer for layer in started(self) if layer not in ("landlock", "exec_once"))

    monkeypatch.setattr(ZygoteSandbox, "_start", weaker)
    with ZygoteSandbox(toolchain_path=DEFAULT_TOOLCHAIN_PATH, languages=["cpp"]) as weak:
        assert "landlock or exec_once" in str(weak.toolchains["cpp"])
        with pytest.raises(SandboxUnavailable, match="exec_once"):
            weak.execute(Program("cpp", ECHO), [b"21\n"], LIMITS, 30)
        [run] = weak.execute(
            Program("python", "print(2 * int(input()))"), [b"21\n"], LIMITS, 30
        ).outcomes()
        assert run.stdout == b"42\n"


@pytest.mark.parametrize(
    ("layers", "closed"),
    [
        ({"seccomp", "landlock"}, False),
        ({"seccomp", "exec_once", "uid"}, True),
        ({"process", "rlimits"}, False),
    ],
)
def test_write_gap_names_the_platforms_where_a_run_may_write_no_file(
    layers: set[str], closed: bool
) -> None:
    """A runtime that writes at start (R's session directory) cannot start where seccomp
    refuses every write because landlock is off; without a filter, writes work."""
    assert (write_gap(layers) is not None) is closed


@pytest.mark.needs_tool("" if isinstance(FOUND_R, Found) else f"R: {FOUND_R}")
def test_r_is_closed_where_runs_may_write_no_file(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without landlock an R answer is refused with the reason: R could not make its
    session directory, and the answer would be graded wrong for the platform's sake."""
    started = ZygoteSandbox._start

    def weaker(self: ZygoteSandbox) -> tuple[str, ...]:
        return tuple(layer for layer in started(self) if layer != "landlock")

    monkeypatch.setattr(ZygoteSandbox, "_start", weaker)
    with ZygoteSandbox(toolchain_path=DEFAULT_TOOLCHAIN_PATH, languages=["R"]) as weak:
        assert "may write no file" in str(weak.toolchains["R"])
        refused = pytest.raises(SandboxUnavailable, match="may write no file")
        with refused:
            weak.execute(Program("R", "cat(1)"), [b""], LIMITS, 30)
