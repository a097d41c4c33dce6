"""The zygote sandbox with benign programs: behaviour of `python solution.py`, limits, layers."""

from __future__ import annotations

import ast
import json
import math
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from reward_service.errors import SandboxUnavailable
from reward_service.sandbox import LAYERS, Kind, Limits, Outcome, Program, zygote_client
from reward_service.sandbox.runners import ONE_THREAD
from reward_service.sandbox.zygote_client import ZYGOTE, ZygoteSandbox, probe_layers

LIMITS = Limits(time_s=2.0, memory_mb=256, output_bytes=1 << 20)
SHORT = Limits(time_s=0.5, memory_mb=256, output_bytes=1 << 20)


@pytest.fixture(scope="module")
def sandbox() -> Iterator[ZygoteSandbox]:
    with ZygoteSandbox() as running:
        yield running


def run(
    sandbox: ZygoteSandbox, source: str, stdin: bytes = b"", limits: Limits = LIMITS
) -> Outcome:
    (outcome,) = sandbox.execute(Program("python", source), [stdin], limits, budget_s=30).outcomes()
    return outcome


def zygote_processes(tag: str) -> list[int]:
    """Live processes started from the zygote script whose command line holds `tag`."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes().decode(errors="replace")
            state = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if str(ZYGOTE) in cmdline and tag in cmdline and state != "Z":
            found.append(int(entry))
    return found


def test_stdin_reaches_the_program_and_its_stdout_comes_back(sandbox: ZygoteSandbox) -> None:
    """A program reads the test's stdin and its stdout is returned byte for byte."""
    outcome = run(sandbox, "print(sum(map(int, input().split())))", b"1 2 39\n")
    assert (outcome.kind, outcome.stdout, outcome.exit_code) == (Kind.OK, b"42\n", 0)


def test_binary_output_is_returned_as_bytes(sandbox: ZygoteSandbox) -> None:
    """Bytes that are not UTF-8 come back unchanged."""
    outcome = run(sandbox, "import sys; sys.stdout.buffer.write(bytes([255, 0, 10]))")
    assert outcome.stdout == b"\xff\x00\n"


def test_bytes_that_are_not_utf8_round_trip_through_text_io(sandbox: ZygoteSandbox) -> None:
    """stdin and stdout use surrogateescape, as python does under a UTF-8 or C locale."""
    assert run(sandbox, "print(input())", b"caf\xe9\xff\n").stdout == b"caf\xe9\xff\n"


def test_random_is_seeded_afresh_in_every_run(sandbox: ZygoteSandbox) -> None:
    """Two runs of the same program draw different random numbers, as two python starts do."""
    program = Program("python", "import random; print(random.getrandbits(64))")
    first, second = sandbox.execute(program, [b"", b""], LIMITS, budget_s=30).outcomes()
    assert first.stdout != second.stdout


def test_a_run_holds_only_its_standard_streams_in_a_session_of_its_own(
    sandbox: ZygoteSandbox,
) -> None:
    """No descriptor but 0-2 is open in the program, and it leads its own session and group."""
    source = (
        "import os\nopen_fds = []\nfor fd in range(3, 256):\n    try:\n        os.fstat(fd)\n"
        "    except OSError:\n        continue\n    open_fds.append(fd)\n"
        "me = os.getpid()\nprint(open_fds, os.getsid(0) == me, os.getpgrp() == me)\n"
    )
    assert run(sandbox, source).stdout == b"[] True True\n"


def test_a_megabyte_of_stdin_is_fed_while_output_is_read(sandbox: ZygoteSandbox) -> None:
    """Large stdin and stdout flow at once without a deadlock."""
    data = b"x" * (LIMITS.output_bytes - 1) + b"\n"
    outcome = run(sandbox, "import sys; sys.stdout.write(sys.stdin.read())", data)
    assert outcome.kind is Kind.OK and outcome.stdout == data


@pytest.mark.parametrize(
    ("source", "kind", "exit_code", "stderr"),
    [
        ("import sys; sys.exit(3)", Kind.RUNTIME_ERROR, 3, ""),
        ("import sys; sys.exit(0)", Kind.OK, 0, ""),
        ("exit()", Kind.OK, 0, ""),
        ("quit(4)", Kind.RUNTIME_ERROR, 4, ""),
        ("raise SystemExit", Kind.OK, 0, ""),
        ("import sys; sys.exit('bye')", Kind.RUNTIME_ERROR, 1, "bye\n"),
        ("import sys; sys.exit(256 + 7)", Kind.RUNTIME_ERROR, 7, ""),
    ],
)
def test_exit_statuses_are_those_of_python(
    sandbox: ZygoteSandbox, source: str, kind: Kind, exit_code: int, stderr: str
) -> None:
    """sys.exit, exit() and SystemExit give the status `python solution.py` would."""
    outcome = run(sandbox, source)
    assert (outcome.kind, outcome.exit_code, outcome.stderr) == (kind, exit_code, stderr)


def test_an_uncaught_exception_prints_the_traceback_and_exits_1(sandbox: ZygoteSandbox) -> None:
    """The traceback names the solution's line, not the runner's frames."""
    outcome = run(sandbox, "x = 1\n1 / 0\n")
    assert (outcome.kind, outcome.exit_code) == (Kind.RUNTIME_ERROR, 1)
    assert outcome.stderr.startswith("Traceback (most recent call last):\n")
    assert 'File "solution.py", line 2, in <module>' in outcome.stderr
    assert outcome.stderr.endswith("ZeroDivisionError: division by zero\n")
    assert "runners.py" not in outcome.stderr


def test_a_syntax_error_is_a_runtime_error_with_its_message(sandbox: ZygoteSandbox) -> None:
    """A program that does not compile fails with SyntaxError on stderr."""
    outcome = run(sandbox, "def f(:\n    pass\n")
    assert (outcome.kind, outcome.exit_code) == (Kind.RUNTIME_ERROR, 1)
    assert "SyntaxError" in outcome.stderr and 'File "solution.py", line 1' in outcome.stderr


def test_a_source_with_a_lone_surrogate_is_a_runtime_error(sandbox: ZygoteSandbox) -> None:
    """Text that is not valid UTF-8 fails as python would fail on such a file, not in the worker."""
    outcome = run(sandbox, "print('\ud800')")
    assert (outcome.kind, outcome.exit_code) == (Kind.RUNTIME_ERROR, 1)
    assert "SyntaxError" in outcome.stderr


def test_a_program_may_signal_itself_and_dies_of_it(sandbox: ZygoteSandbox) -> None:
    """SIGTERM to itself ends the run by that signal (the zygote's own handler is not inherited)."""
    outcome = run(
        sandbox, "import os, signal\nos.kill(os.getpid(), signal.SIGTERM)\nprint('alive')"
    )
    assert (outcome.kind, outcome.exit_code, outcome.stdout) == (Kind.RUNTIME_ERROR, None, b"")


def test_stdout_is_flushed_at_exit(sandbox: ZygoteSandbox) -> None:
    """Buffered output is written even when the program ends with sys.exit."""
    outcome = run(sandbox, "import sys\nprint('partial', end='')\nsys.exit(0)\n")
    assert outcome.stdout == b"partial"


def test_the_program_runs_as_main_with_python_s_argv(sandbox: ZygoteSandbox) -> None:
    """__name__ is __main__, sys.argv is ['solution.py'], and no pickle module was loaded."""
    source = "import sys\nprint(__name__, sys.argv, 'pickle' in sys.modules)\n"
    assert run(sandbox, source).stdout == b"__main__ ['solution.py'] False\n"


def test_threads_may_run(sandbox: ZygoteSandbox) -> None:
    """A program may start and join threads."""
    source = (
        "import threading\nout = []\nts = [threading.Thread(target=out.append, args=(i,))"
        " for i in range(4)]\n[t.start() for t in ts]\n[t.join() for t in ts]\nprint(sorted(out))\n"
    )
    assert run(sandbox, source).stdout == b"[0, 1, 2, 3]\n"


def test_a_busy_loop_ends_in_time_limit(sandbox: ZygoteSandbox) -> None:
    """A program that never stops computing is killed and reported as time_limit."""
    outcome = run(sandbox, "while True: pass", limits=SHORT)
    assert (outcome.kind, outcome.exit_code) == (Kind.TIME_LIMIT, None)
    assert outcome.elapsed_s >= SHORT.time_s


def test_a_sleeping_program_ends_in_time_limit_by_the_wall_clock(sandbox: ZygoteSandbox) -> None:
    """A program that waits without using CPU is killed at its wall-clock deadline."""
    outcome = run(sandbox, "import time; time.sleep(100)", limits=SHORT)
    assert (outcome.kind, outcome.exit_code) == (Kind.TIME_LIMIT, None)


def test_a_big_allocation_ends_in_memory_limit(sandbox: ZygoteSandbox) -> None:
    """Allocating past the address-space limit is memory_limit."""
    outcome = run(sandbox, "x = bytearray(2 * 1024**3)", limits=Limits(2.0, 128, 1 << 20))
    assert outcome.kind is Kind.MEMORY_LIMIT
    assert outcome.stderr.endswith("MemoryError\n")


def test_endless_output_ends_in_output_limit_with_the_cap_kept(sandbox: ZygoteSandbox) -> None:
    """Writing past output_bytes kills the run; exactly output_bytes are returned."""
    outcome = run(sandbox, "while True: print('y' * 100)", limits=Limits(2.0, 256, 10_000))
    assert outcome.kind is Kind.OUTPUT_LIMIT
    assert outcome.stdout == (b"y" * 100 + b"\n") * 99 + b"y" * 1


def test_output_of_exactly_the_cap_is_ok(sandbox: ZygoteSandbox) -> None:
    """output_bytes itself is allowed."""
    outcome = run(sandbox, "print('z' * 9999)", limits=Limits(2.0, 256, 10_000))
    assert (outcome.kind, len(outcome.stdout)) == (Kind.OK, 10_000)


def test_stderr_is_reported_as_its_tail(sandbox: ZygoteSandbox) -> None:
    """Of a long stderr, only the last kilobyte or so comes back, ending with the error."""
    source = "import sys\nsys.stderr.write('e' * 200_000)\nraise ValueError('last words')\n"
    outcome = run(sandbox, source)
    assert len(outcome.stderr) <= 1024
    assert outcome.stderr.endswith("ValueError: last words\n")


def test_the_environment_is_empty_but_home_tmpdir_and_one_thread_pools(
    sandbox: ZygoteSandbox,
) -> None:
    """No variable of the service reaches the program; HOME and TMPDIR are its cwd, and
    numerical libraries are told to use one thread (OMP_NUM_THREADS and the like)."""
    outcome = run(sandbox, "import json, os; print(json.dumps([dict(os.environ), os.getcwd()]))")
    environ, cwd = json.loads(outcome.stdout)
    assert environ == {"HOME": cwd, "TMPDIR": cwd, **ONE_THREAD}
    assert {"OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"} <= set(ONE_THREAD)
    assert {"NUMEXPR_NUM_THREADS", "VECLIB_MAXIMUM_THREADS"} <= set(ONE_THREAD)


def test_numpy_runs_with_its_pool_of_one_thread(sandbox: ZygoteSandbox) -> None:
    """A BLAS product under a 256 MiB address space (a pool per core would need more)."""
    pytest.importorskip("numpy")
    source = "import numpy as np\na = np.ones((300, 300))\nprint(int((a @ a).sum()))\n"
    outcome = run(sandbox, source, limits=Limits(5.0, 256, 1 << 20))
    assert (outcome.kind, outcome.stdout) == (Kind.OK, b"27000000\n"), outcome.stderr


def test_the_standard_streams_have_their_dev_names(sandbox: ZygoteSandbox) -> None:
    """/dev/stdin, /dev/stdout, /dev/stderr and /dev/fd/N are the run's own streams, in the
    mount namespace too (there, through a /proc that shows the run only itself)."""
    source = (
        "import sys\ndata = open('/dev/stdin').read()\n"
        "open('/dev/stdout', 'w').write(data[::-1])\n"
        "with open('/dev/fd/2', 'w') as err:\n    err.write('to fd 2')\n"
        "open('/dev/stderr', 'w').write(' and to stderr\\n')\n"
    )
    outcome = run(sandbox, source, b"abc\n")
    assert (outcome.kind, outcome.stdout) == (Kind.OK, b"\ncba"), outcome.stderr
    assert outcome.stderr == "to fd 2 and to stderr\n"


def test_ints_of_any_size_print(sandbox: ZygoteSandbox) -> None:
    """`print(factorial(5000))` (16,326 digits) and int() of a 10,000-digit line work, as
    in the Pythons and judges that made such problems' outputs (no 4,300-digit limit)."""
    source = "import math\nprint(math.factorial(5000))\nprint(int(input()) % 97)\n"
    outcome = run(sandbox, source, b"7" * 10_000 + b"\n")
    assert outcome.kind is Kind.OK, outcome.stderr
    digits, remainder = outcome.stdout.split()
    limit = sys.get_int_max_str_digits()
    sys.set_int_max_str_digits(0)
    try:
        assert int(digits) == math.factorial(5000)
        assert int(remainder) == int("7" * 10_000) % 97
    finally:
        sys.set_int_max_str_digits(limit)


def test_a_run_is_not_dumpable(sandbox: ZygoteSandbox) -> None:
    """No other process of the run's uid may open its /proc/<pid>/fd or read its memory."""
    outcome = run(sandbox, "import ctypes\nprint(ctypes.CDLL(None).prctl(3, 0, 0, 0, 0))")
    assert outcome.stdout == b"0\n"


def test_each_sandbox_s_runs_get_a_uid_of_their_own() -> None:
    """Where runs switch uid, two zygotes' runs get two uids (each has its own RLIMIT_NPROC
    count), neither the service's; where they cannot, they keep the service's."""
    source = "import os\nprint(os.getuid())"
    with ZygoteSandbox(scratch_mb=29) as first, ZygoteSandbox(scratch_mb=29) as second:
        uids = {int(run(box, source).stdout) for box in (first, second)}
        if "uid" not in first.layers:
            assert uids == {os.getuid()}
        else:
            assert len(uids) == 2 and not uids & {0, 65534, os.getuid()}


def test_each_run_gets_a_fresh_scratch_dir(sandbox: ZygoteSandbox) -> None:
    """The cwd holds only the solution and is writable; by the next run, of another
    program, nothing of it is left: the next run's cwd is another directory and this one
    is gone, or it is the same one (a template's) holding the next solution alone."""
    first = run(
        sandbox, "import os; open('f', 'w').write('x'); print(os.getcwd(), sorted(os.listdir()))"
    )
    cwd, listing = first.stdout.decode().split(" ", 1)
    assert listing.strip() == "['f', 'solution.py']"
    source = f"import os; print(os.getcwd() == {cwd!r}, os.path.exists({cwd!r}), os.listdir())"
    second = run(sandbox, source).stdout
    assert second in (b"False False ['solution.py']\n", b"True True ['solution.py']\n"), second


def test_a_run_writes_nothing_beside_its_scratch_dir(sandbox: ZygoteSandbox) -> None:
    """The scratch dir's parent, shared by the zygote's runs, is not writable by a run."""
    outcome = run(sandbox, "open('../beside', 'w')")
    assert outcome.kind is Kind.RUNTIME_ERROR
    assert "PermissionError" in outcome.stderr


def test_stop_at_first_failure_stops_after_the_first_failing_run(sandbox: ZygoteSandbox) -> None:
    """With it, runs stop after a failure; without it, every stdin runs."""
    program = Program("python", "import sys; sys.exit(int(input()))")
    stdins = [b"0\n", b"4\n", b"0\n"]
    stopping = sandbox.execute(program, stdins, LIMITS, budget_s=30).outcomes()
    assert [o.kind for o in stopping] == [Kind.OK, Kind.RUNTIME_ERROR]
    every = sandbox.execute(
        program, stdins, LIMITS, budget_s=30, stop_at_first_failure=False
    ).outcomes()
    assert [o.exit_code for o in every] == [0, 4, 0]


def test_a_budget_smaller_than_a_run_runs_nothing(sandbox: ZygoteSandbox) -> None:
    """A run that could overrun the budget is not started."""
    outcomes = sandbox.execute(
        Program("python", "print(1)"), [b""] * 3, LIMITS, budget_s=1.0
    ).outcomes()
    assert outcomes == []


def test_the_budget_stops_runs_that_could_overrun_it(sandbox: ZygoteSandbox) -> None:
    """Runs that each may take time_s stop once the budget left is below time_s."""
    program = Program("python", "import time; time.sleep(100)")
    outcomes = sandbox.execute(
        program, [b""] * 5, SHORT, budget_s=1.3, stop_at_first_failure=False
    ).outcomes()
    assert [o.kind for o in outcomes] == [Kind.TIME_LIMIT, Kind.TIME_LIMIT]


def test_an_unknown_language_is_refused(sandbox: ZygoteSandbox) -> None:
    """A language without a runner is the caller's error, not a run."""
    with pytest.raises(ValueError, match="cobol"):
        sandbox.execute(Program("cobol", ""), [b""], LIMITS, budget_s=30)


def test_limits_above_the_worker_s_own_are_clamped_not_refused() -> None:
    """A memory limit over the hard limit the worker has runs under that hard limit."""
    script = (
        "import resource\n"
        "resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))\n"
        "from reward_service.sandbox import Limits, Program\n"
        "from reward_service.sandbox.zygote_client import ZygoteSandbox\n"
        "with ZygoteSandbox() as sandbox:\n"
        "    source = 'import resource; print(resource.getrlimit(resource.RLIMIT_AS)[1] >> 20)'\n"
        "    limits = Limits(2.0, 4096, 1000)\n"
        "    (o,) = sandbox.execute(Program('python', source), [b''], limits, 30).runs\n"
        "print(o.kind.value, o.stdout.decode().strip())\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert done.stdout.split() == ["ok", "1024"], done.stderr


def test_layers_are_known_names_and_include_the_always_on_ones(sandbox: ZygoteSandbox) -> None:
    """Every reported layer is a documented name; process and rlimits are always there."""
    assert {"process", "rlimits"} <= set(sandbox.layers) <= set(LAYERS)
    if {"netns", "mountns", "pidns"} <= set(sandbox.layers):
        assert "namespaces" in sandbox.layers


def test_probe_layers_reports_what_a_sandbox_gets(sandbox: ZygoteSandbox) -> None:
    """The start-up probe names the same layers as a running sandbox."""
    assert probe_layers() == sandbox.layers


def test_a_required_layer_that_is_not_active_fails_the_build() -> None:
    """uid (root only) and userns (non-root only) are never both active: requiring both fails."""
    with pytest.raises(SandboxUnavailable, match="required sandbox layers not active"):
        ZygoteSandbox(required_layers={"uid", "userns"})


def test_an_unknown_required_layer_fails_the_build() -> None:
    """A misspelt layer is an error, not silently ignored."""
    with pytest.raises(SandboxUnavailable, match="unknown sandbox layers"):
        ZygoteSandbox(required_layers={"seccmop"})


def test_a_killed_zygote_is_restarted_by_the_next_run() -> None:
    """After its zygote dies, the sandbox starts another and the next run succeeds."""
    tag = '"scratch_mb": 31'
    with ZygoteSandbox(scratch_mb=31) as sandbox:
        (before,) = zygote_processes(tag)[:1]
        os.kill(before, signal.SIGKILL)
        outcome = run(sandbox, "print('again')")
        assert (outcome.kind, outcome.stdout) == (Kind.OK, b"again\n")
        assert before not in zygote_processes(tag)


def test_a_run_dies_with_its_zygote() -> None:
    """Killing the zygote mid-run takes the run's process with it; the run is retried."""
    tag = '"scratch_mb": 33'
    with ZygoteSandbox(scratch_mb=33) as sandbox:
        program = Program("python", "import time; print('up', flush=True); time.sleep(30)")
        result: list[Outcome] = []
        runner = threading.Thread(
            target=lambda: result.extend(sandbox.execute(program, [b""], SHORT, 30).outcomes())
        )
        first = set(zygote_processes(tag))
        runner.start()
        while len(set(zygote_processes(tag)) - first) < 1:  # the run process appears
            time.sleep(0.01)
        doomed = set(zygote_processes(tag))
        for pid in sorted(first):
            os.kill(pid, signal.SIGKILL)
        runner.join()
        assert [o.kind for o in result] == [Kind.TIME_LIMIT]
        assert not doomed & set(zygote_processes(tag))


@pytest.mark.parametrize(("where", "call"), [("_outcome", 2), ("_read", 4), ("_read", 5)])
def test_a_failure_mid_answer_gives_the_next_answer_a_fresh_zygote(
    monkeypatch: pytest.MonkeyPatch, where: str, call: int
) -> None:
    """A MemoryError while the worker reads an answer (after its first outcome; before the
    second's frame, or inside it, its header read) kills the zygote, so the next answer
    reads its own outcomes, never the rest of the previous one's; the error goes on up."""
    tag = '"scratch_mb": 41'
    with ZygoteSandbox(scratch_mb=41) as sandbox:
        (before,) = zygote_processes(tag)[:1]
        real = getattr(zygote_client, where)
        calls = 0

        def failing(*args: Any) -> Any:
            nonlocal calls
            calls += 1
            if calls == call:
                raise MemoryError
            return real(*args)

        monkeypatch.setattr(zygote_client, where, failing)
        first = Program("python", "print('first', input())")
        stdins = [b"1\n", b"2\n", b"3\n", b"4\n"]
        with pytest.raises(MemoryError):
            sandbox.execute(
                first, stdins, LIMITS, budget_s=30, stop_at_first_failure=False
            ).outcomes()
        monkeypatch.undo()
        second = Program("python", "print('second', input())")
        outcomes = sandbox.execute(second, [b"a\n", b"b\n"], LIMITS, budget_s=30).outcomes()
        assert [(o.kind, o.stdout) for o in outcomes] == [
            (Kind.OK, b"second a\n"),
            (Kind.OK, b"second b\n"),
        ]
        assert before not in zygote_processes(tag)


REPLY = {"kind": "ok", "exit_code": 0, "elapsed_s": 0.1, "confinement": None}
REPLY |= {"stdout_bytes": 1, "stderr_bytes": 1}
ABC = zygote_client._Fetch(("a", "b", "c"), 3)
"""Files a, b and c asked for, 3 bytes of them in all."""


def test_a_reply_s_files_follow_its_streams() -> None:
    """A run's fetched files follow its stdout and stderr, named by their index in `fetch`."""
    reply = {**REPLY, "files": [[0, 2], [2, 1]]}
    outcome = zygote_client._outcome(reply, b"oeaac", LIMITS, ABC)
    assert (outcome.stdout, outcome.stderr, outcome.files) == (b"o", "e", {"a": b"aa", "c": b"c"})


@pytest.mark.parametrize(
    "files",
    [[[3, 1]], [[1, 1], [1, 1]], [[1, 1], [0, 1]], [[0, 4]], [[0, -1]], [[0, 1.0]], {"a": 1}],
    ids=["not-asked", "twice", "out-of-order", "over-the-cap", "negative", "float", "not-a-list"],
)
def test_a_reply_s_files_are_checked_as_data(files: Any) -> None:
    """A reply naming a file not asked for, one twice or out of order, or more bytes than
    allowed, is a broken zygote's."""
    payload = b"oe" + b"x" * sum(max(0, int(f[1])) for f in files if isinstance(f, list))
    with pytest.raises(zygote_client.protocol.ProtocolError):
        zygote_client._outcome({**REPLY, "files": files}, payload, LIMITS, ABC)


def test_close_leaves_no_process_behind() -> None:
    """After close, no process started from the zygote script is alive."""
    tag = '"scratch_mb": 37'
    sandbox = ZygoteSandbox(scratch_mb=37)
    run(sandbox, "print('x')")
    assert zygote_processes(tag)
    sandbox.close()
    assert zygote_processes(tag) == []


ZYGOTE_SIDE = (
    "zygote",
    "template",
    "confine",
    "runners",
    "toolchains",
    "supervise",
    "seccomp",
    "exec_once",
    "landlock",
    "namespaces",
    "linux",
    "protocol",
    "run_files",
)


@pytest.mark.parametrize("module", ZYGOTE_SIDE)
def test_the_zygote_side_imports_only_the_stdlib_and_its_siblings(module: str) -> None:
    """No zygote-side module imports pickle, or anything outside the stdlib and the sandbox."""
    tree = ast.parse((ZYGOTE.parent / f"{module}.py").read_text())
    imported = {
        name
        for node in ast.walk(tree)
        for name in (
            [a.name for a in node.names]
            if isinstance(node, ast.Import)
            else [node.module or ""]
            if isinstance(node, ast.ImportFrom)
            else []
        )
    }
    assert "pickle" not in imported
    outside = {n for n in imported if n.split(".")[0] not in sys.stdlib_module_names}
    assert outside <= {
        "reward_service.sandbox",
        *(f"reward_service.sandbox.{m}" for m in ZYGOTE_SIDE),
    }


FORK_COSTLY = {
    "threading",
    "random",
    "subprocess",
    "shutil",
    "tempfile",
    "hashlib",
    "socket",
    "selectors",
    "zlib",
    "bz2",
    "lzma",
    "platform",
}
"""Modules every run would inherit from the zygote at a cost: `threading` and `random` hook
every fork (their after-fork handlers copied ~100 and ~45 of the zygote's pages in each
run: `random` reseeds itself, which a run that imports it does anyway), the others map
extension modules and libraries (a fork copies, and an exit tears down, each mapping) or
import those that do."""


def test_the_zygote_loads_nothing_a_fork_pays_for(sandbox: ZygoteSandbox) -> None:
    """A run holds the zygote's modules: none of `FORK_COSTLY`, and nothing a `.pth` file
    imports (the zygote starts with `python -S`)."""
    source = (
        f"import sys\nprint(sorted({FORK_COSTLY!r} & set(sys.modules)), "
        "[m for m in sys.modules if m.startswith(('_distutils_hack', '__editable__'))])"
    )
    assert run(sandbox, source).stdout == b"[] []\n"


def test_a_run_is_compiled_as_python_compiles_it(sandbox: ZygoteSandbox) -> None:
    """No `__future__` of the sandbox's own reaches the program: its annotations are
    evaluated when its functions are defined, as under `python solution.py`."""
    source = "def f(x: int) -> None:\n    pass\nprint(f.__annotations__['x'] is int)\n"
    assert run(sandbox, source).stdout == b"True\n"
    undefined = run(sandbox, "def f(x: NoSuchName):\n    pass\n")
    assert undefined.kind is Kind.RUNTIME_ERROR and "NameError" in undefined.stderr


def test_a_run_imports_what_the_worker_has_installed(sandbox: ZygoteSandbox) -> None:
    """Without `site`, the worker's site-packages are still on a run's path."""
    source = "import sniffio\nprint(sniffio.__name__)"
    assert run(sandbox, source).stdout == b"sniffio\n"


def test_each_run_starts_with_fresh_standard_streams(sandbox: ZygoteSandbox) -> None:
    """The streams are built once in the zygote and never used there: what one run left
    unread in stdin's buffer, or unflushed in stdout's, is not in the next run's."""
    source = (
        "import os, sys\nline = sys.stdin.readline()\nprint(line.strip())\n"
        "if line.startswith('a'):\n    os._exit(0)\n"
    )
    program = Program("python", source)
    first, second = sandbox.execute(
        program, [b"a\nleft over\n", b"b\n"], LIMITS, budget_s=30
    ).outcomes()
    assert (first.stdout, second.stdout) == (b"", b"b\n")


@pytest.mark.parametrize(
    ("active", "missing"),
    [
        (("process", "rlimits", "uid", "seccomp"), None),
        (("process", "rlimits", "seccomp", "landlock"), None),
        (("process", "rlimits", "seccomp"), "landlock or uid"),
        (("process", "rlimits", "landlock"), "seccomp"),
    ],
)
def test_required_alternatives_are_checked_against_the_active_layers(
    monkeypatch: pytest.MonkeyPatch, active: tuple[str, ...], missing: str | None
) -> None:
    """`a|b` is met by either layer; building fails naming what is missing and what is active."""
    monkeypatch.setattr(ZygoteSandbox, "_start", lambda self: active)
    required = {"seccomp", "uid|landlock"}
    if missing is None:
        assert ZygoteSandbox(required_layers=required).layers == active
        return
    with pytest.raises(SandboxUnavailable) as error:
        ZygoteSandbox(required_layers=required)
    assert str(error.value) == (
        f"required sandbox layers not active here: {missing} (active: {', '.join(active)})"
    )


def test_a_required_alternative_that_is_active_here_passes(sandbox: ZygoteSandbox) -> None:
    """With a real zygote: an item whose one active alternative is here passes; alone, the
    inactive alternative fails the build."""
    active = next(layer for layer in ("seccomp", "landlock", "uid") if layer in sandbox.layers)
    inactive = next(layer for layer in ("uid", "userns") if layer not in sandbox.layers)
    with ZygoteSandbox(required_layers=[f"{inactive}|{active}"]) as box:
        assert box.layers == sandbox.layers
    with pytest.raises(SandboxUnavailable, match=f"not active here: {inactive} "):
        ZygoteSandbox(required_layers=[inactive])


def test_an_unknown_alternative_fails_the_build() -> None:
    """A misspelt name among alternatives is an error too, before any zygote starts."""
    with pytest.raises(SandboxUnavailable, match=r"unknown sandbox layers \['lanlock'\]"):
        ZygoteSandbox(required_layers={"uid|lanlock"})
