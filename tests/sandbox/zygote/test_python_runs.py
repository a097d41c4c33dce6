"""Runs behave as `python solution.py` does: streams, exits, errors, the language."""

from __future__ import annotations

import math
import sys

import pytest

from reward_service.sandbox import Kind, Limits, Program
from reward_service.sandbox.zygote_client import ZygoteSandbox
from tests.sandbox.harness.zygote_runs import LIMITS, run


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
