"""What a run sees and keeps: its environment, its uid, its scratch, nothing of the zygote's."""

from __future__ import annotations

import ast
import json
import os
import sys

import pytest

from reward_service.sandbox import Kind
from reward_service.sandbox.runners import ONE_THREAD
from reward_service.sandbox.zygote_client import ZYGOTE, ZygoteSandbox
from tests.sandbox.harness.zygote_runs import run


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
