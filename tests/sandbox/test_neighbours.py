"""One answer's program against another's, and the service's processes against a run.

For each platform profile, and as a real unprivileged uid (the simulated non-root pods
map their uid to this machine's root, whom the kernel exempts from RLIMIT_NPROC),
`tests.sandbox.harness.neighbours` runs two zygotes side by side inside `unshare --pid --fork
--mount-proc`: a program holding its whole thread budget, then a thread bomb, in one,
while an honest threaded program runs in the other. Also the service's processes are
not dumpable: a process of their uid (a run where nothing confines reads) opens none of
their /proc/<pid>/fd.
"""

from __future__ import annotations

import asyncio
import ctypes
import functools
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from reward_service.grading.pool import WorkerPool
from reward_service.sandbox.confine import THREAD_MARGIN, THREADS
from tests.sandbox.harness import confine, platforms
from tests.sandbox.harness.neighbours import HONEST_OUT, STREAMS
from tests.sandbox.harness.platforms import PROFILES

REAL_UID = "nonroot-real-uid"
"""uid 10001 of this machine itself, no namespaces: the kernel counts its tasks as a pod's."""
VARIANTS = [*PROFILES, REAL_UID]
DEADLINE_S = 120.0
CAP_SYS_PTRACE = 19

pytestmark = [
    pytest.mark.heavy,
    pytest.mark.skipif(confine.unavailable() is not None, reason=str(confine.unavailable())),
]


def readable_python(uid: int) -> str | None:
    """An interpreter (>= 3.11) whose own directories `uid` can list (the venv's lives under
    /root here)."""
    for candidate in ("/usr/bin/python3", shutil.which("python3"), sys.executable):
        if candidate is None or not os.path.exists(candidate):
            continue
        code = "import json, os, sys; assert sys.version_info >= (3, 11); "
        code += "print(json.dumps([p for p in sys.path if os.path.isdir(p)]))"
        found = subprocess.run([candidate, "-I", "-c", code], capture_output=True, text=True)
        if found.returncode != 0:
            continue
        lists = "import json, os, sys; [os.listdir(p) for p in json.loads(sys.argv[1])]"
        probe = ["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups", candidate]
        probe += ["-I", "-c", lists, found.stdout.strip()]
        if subprocess.run(probe, capture_output=True).returncode == 0:
            return candidate
    return None


def _inner(variant: str, results: Path) -> list[str]:
    """The neighbours runner on `variant`'s platform."""
    module = ["-m", "tests.sandbox.harness.neighbours", "--results", str(results)]
    if variant != REAL_UID:
        return platforms.command(variant, [sys.executable, *module])
    python = readable_python(10001)
    assert python is not None
    runner = [python, *module]
    setpriv = [shutil.which("setpriv") or "setpriv", "--reuid=10001", "--regid=10001"]
    setpriv += ["--clear-groups", "--inh-caps=-all", "--"]
    return [*setpriv, python, "-m", "tests.sandbox.harness.platforms", "nonroot-pod", "--", *runner]


def _unavailable(variant: str) -> str | None:
    if variant != REAL_UID:
        return platforms.unavailable(variant)
    if os.geteuid() != 0 or shutil.which("setpriv") is None:
        return "needs root and setpriv to become uid 10001"
    if platforms.unavailable("nonroot-pod"):
        return platforms.unavailable("nonroot-pod")
    if readable_python(10001) is None:
        return "no Python here whose files uid 10001 can read"
    return None


@pytest.fixture(
    scope="module",
    params=[v if v == "full" else pytest.param(v, marks=pytest.mark.slow) for v in VARIANTS],
)
def found(request: pytest.FixtureRequest) -> dict[str, Any]:
    """The neighbours runner's findings on one variant, by event."""
    variant: str = request.param
    if reason := _unavailable(variant):
        pytest.skip(reason)
    inner = functools.partial(_inner, variant)
    events = confine.confined_events(f"neighbours-{variant}-", inner, DEADLINE_S)
    return {name: found[0] for name, found in events.items()} | {"variant": variant}


def _honest(outcomes: list[dict[str, Any]]) -> list[str]:
    return [f"{o['kind']} {o['stdout'][-40:]!r} {o['stderr'][-200:]}" for o in outcomes]


def test_a_neighbour_holding_its_whole_budget_leaves_threads_for_the_honest(
    found: dict[str, Any],
) -> None:
    """255 tasks held in one sandbox (a run's whole budget); a threaded program with a big
    stack in the other passes, every time (with one uid for all runs it could not start
    its thread)."""
    holder = found["holder"]
    assert holder["run"]["kind"] == "ok", holder["run"]
    ok = {"kind": "ok", "stdout": HONEST_OUT.decode()}
    assert all(o.items() >= ok.items() for o in holder["honest"]), _honest(holder["honest"])


def test_a_thread_bomb_is_bounded_and_its_neighbour_passes(found: dict[str, Any]) -> None:
    """The bomb (32 KiB stacks: RLIMIT_AS does not bound it) ends with a runtime error; the
    honest program beside it and after it passes. Where the kernel counts the uid's tasks
    (every real pod; not the simulated ones, whose uid is this machine's root and exempt
    from RLIMIT_NPROC), the bomb gets no further than its task limit: its budget, the
    margin, and what the uid held before it (a few dozen). In a simulated pod only the
    zygote's 10 ms thread watch stops it, and how far a bomb gets in that time is the
    machine's load, not the sandbox's."""
    bomb = found["bomb"]
    assert bomb["run"]["kind"] == "runtime_error", bomb["run"]
    assert "held" not in bomb["run"]["stdout"], bomb["run"]
    if found["variant"] == REAL_UID:
        assert bomb["kernel_uid"] == 10001, bomb  # the bound below is checked somewhere
    if bomb["kernel_uid"] != 0:
        assert bomb["most"] < THREADS + THREAD_MARGIN + 256, bomb
    honest = [*bomb["honest"], found["after"]["honest"]]
    assert all(o["kind"] == "ok" and o["stdout"] == HONEST_OUT.decode() for o in honest), _honest(
        honest
    )


def test_no_zygote_is_dumpable_to_a_process_of_its_uid(found: dict[str, Any]) -> None:
    """The zygotes' parent, without CAP_SYS_PTRACE (where it has it, it reads anything),
    opens neither zygote's /proc/<pid>/fd/0 nor its environ."""
    dumpable = found["dumpable"]
    if dumpable["capabilities"] >> CAP_SYS_PTRACE & 1:
        pytest.skip("the runner holds CAP_SYS_PTRACE here")
    assert len(dumpable["opened"]) == 4, dumpable
    assert set(dumpable["opened"].values()) == {"Permission denied"}, dumpable


def test_a_run_has_what_a_usual_python_start_has(found: dict[str, Any]) -> None:
    """/dev/stdin and /dev/fd (and /dev/stdout where files may be opened for writing at all:
    without landlock the filter refuses it), ints of any size, one thread for numerical
    libraries."""
    outcomes = found["streams"]["outcomes"]
    layers = found["layers"]["layers"]
    for name, (_, stdout) in STREAMS.items():
        if name == "dev_stdout" and "landlock" not in layers:
            continue
        outcome = outcomes[name]
        assert outcome["kind"] == "ok", (name, outcome)
        if stdout is not None:
            assert outcome["stdout"] == stdout.decode(), (name, outcome)
    assert "OMP_NUM_THREADS" in outcomes["one_thread_env"]["stdout"]


def _dumpable() -> int:
    """PR_GET_DUMPABLE of the calling process."""
    return int(ctypes.CDLL(None).prctl(3, 0, 0, 0, 0))


def test_a_grading_worker_is_not_dumpable() -> None:
    """A worker (its task pipe holds the next answer's label, expected outputs included) is
    not dumpable, as the server is not."""

    async def run() -> int:
        pool = WorkerPool(1, _noop)
        await pool.start()
        try:
            result: int = await pool.run(_dumpable, (), 30.0)
            return result
        finally:
            await pool.close()

    assert asyncio.run(run()) == 0


def _noop() -> None:
    """Worker initializer."""
