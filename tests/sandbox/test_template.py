"""A Python answer's runs forked by its template (`reward_service.sandbox.template`).

Each run must start as a run forked by the zygote does: its own process and
session, the directory as the first run found it, the streams new; it must
reach nothing of the template; and a template that fails must cost no
verdict (the zygote forks the rest of the answer's runs itself).
"""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from reward_service.sandbox import Kind, Limits, Program
from reward_service.sandbox.template import TEMPLATE_RUNS
from reward_service.sandbox.zygote import TEMPLATE_IDLE_S
from reward_service.sandbox.zygote_client import ZygoteSandbox

LIMITS = Limits(time_s=2.0, memory_mb=256, output_bytes=1 << 20)


@pytest.fixture(scope="module")
def sandbox() -> Iterator[ZygoteSandbox]:
    with ZygoteSandbox() as running:
        yield running


def runs(sandbox: ZygoteSandbox, source: str, stdins: list[bytes]) -> list[bytes]:
    outcomes = sandbox.execute(
        Program("python", source), stdins, LIMITS, 30, stop_at_first_failure=False
    ).outcomes()
    assert [o.kind for o in outcomes] == [Kind.OK] * len(stdins), outcomes
    return [o.stdout for o in outcomes]


def test_runs_share_a_template_while_their_limits_do(sandbox: ZygoteSandbox) -> None:
    """Runs share a parent that is neither the zygote nor any run, across requests (an
    answer's tests come in several) and across programs (the next answer's), and each is
    a process of its own leading its own session; other limits get another template."""
    source = "import os\nprint(os.getppid(), os.getpid(), os.getsid(0) == os.getpid())"
    seen = [line.split() for line in runs(sandbox, source, [b""] * 3)]
    parents, pids, leaders = zip(*seen, strict=True)
    assert len(set(parents)) == 1 and len(set(pids)) == 3 and set(leaders) == {b"True"}
    assert parents[0] not in pids
    (again,) = runs(sandbox, source, [b""])
    assert again.split()[0] == parents[0]
    (other,) = runs(sandbox, source + "\n", [b""])
    assert other.split()[0] == parents[0]
    shorter = Limits(time_s=1.5, memory_mb=256, output_bytes=1 << 20)
    (limited,) = sandbox.execute(Program("python", source + "\n"), [b""], shorter, 30).outcomes()
    assert limited.stdout.split()[0] != other.split()[0]


def test_a_template_takes_no_request_past_its_runs(sandbox: ZygoteSandbox) -> None:
    """After `TEMPLATE_RUNS` runs, the next request gets a new template."""
    source = "import os\nprint(os.getppid())"
    first = set(runs(sandbox, source, [b""] * TEMPLATE_RUNS))
    assert len(first) == 1
    (after,) = runs(sandbox, source, [b""])
    assert after not in first


def test_a_run_finds_nothing_of_another_program(sandbox: ZygoteSandbox) -> None:
    """A program run by the template that ran another finds its own source alone in the
    directory: nothing another answer's runs wrote, made, changed or removed."""
    vandal = (
        "import os\nopen('left', 'w').write('x')\nos.makedirs('a/b')\n"
        "open('solution.py', 'a').write('print(\"forged\")')\n"
    )
    runs(sandbox, vandal, [b""] * 2)
    reader = "import os\nprint(sorted(os.listdir('.')), open('solution.py').read()[:6])\n"
    assert runs(sandbox, reader, [b""] * 2) == [b"['solution.py'] import\n"] * 2


def test_each_run_finds_the_directory_as_the_first_run_did(sandbox: ZygoteSandbox) -> None:
    """What a run writes, makes or removes in its directory is gone for the next run."""
    source = (
        "import os\nprint(sorted(os.listdir('.')), open('solution.py').read()[:6])\n"
        "open('left', 'w').write('x')\nos.makedirs('a/b/c')\nos.symlink('/etc', 'link')\n"
        "os.remove('solution.py')\n"
    )
    first, second, third = runs(sandbox, source, [b""] * 3)
    assert first == second == third == b"['solution.py'] import\n"


def test_a_run_cannot_signal_or_read_its_template(sandbox: ZygoteSandbox) -> None:
    """Signals to the parent are refused, its /proc entries are closed to the run, and
    the runs after it are answered as before."""
    source = (
        "import os\nparent = os.getppid()\nresults = []\n"
        "for attempt in (lambda: os.kill(parent, 9), lambda: os.killpg(parent, 9),\n"
        "                lambda: open(f'/proc/{parent}/environ').read(),\n"
        "                lambda: os.listdir(f'/proc/{parent}/fd')):\n"
        "    try:\n        attempt()\n        results.append('done')\n"
        "    except OSError as e:\n        results.append(type(e).__name__)\n"
        "print(results)\n"
    )
    outputs = runs(sandbox, source, [b""] * 3)
    assert len(set(outputs)) == 1 and b"done" not in outputs[0], outputs


def test_a_run_cannot_fork(sandbox: ZygoteSandbox) -> None:
    """No process outlives a run of a template: a run cannot make one."""
    source = "import os\ntry:\n    os.fork()\nexcept OSError as e:\n    print(e.errno)\n"
    assert runs(sandbox, source, [b""] * 2) == [b"1\n", b"1\n"]


def test_time_limits_and_failures_are_each_runs_own(sandbox: ZygoteSandbox) -> None:
    """A run past its time limit, or raising, ends so alone; the next run starts afresh."""
    source = "import sys\nline = input()\nif line == 'loop':\n    while True: pass\nprint(line)\n"
    program = Program("python", source)
    short = Limits(time_s=0.3, memory_mb=256, output_bytes=1 << 20)
    outcomes = sandbox.execute(
        program, [b"a\n", b"loop\n", b"b\n", b""], short, 30, stop_at_first_failure=False
    ).outcomes()
    kinds = [o.kind for o in outcomes]
    assert kinds == [Kind.OK, Kind.TIME_LIMIT, Kind.OK, Kind.RUNTIME_ERROR], outcomes
    assert [o.stdout for o in outcomes[:3]] == [b"a\n", b"", b"b\n"]
    assert "EOFError" in outcomes[3].stderr


def _templates_running(root: int, depth: int) -> list[int]:
    """The templates with a run in progress, in the process tree of `root` (the process
    the worker started): the parents of the processes `depth` levels below it."""
    level, parents = [root], {root: 0}
    for _ in range(depth):
        below = []
        for pid in level:
            for child in _children(pid):
                parents[child] = pid
                below.append(child)
        level = below
    return sorted({parents[pid] for pid in level})


def _children(pid: int) -> list[int]:
    try:
        text = Path(f"/proc/{pid}/task/{pid}/children").read_text()
    except OSError:
        return []
    return [int(child) for child in text.split()]


def test_a_lost_template_costs_no_verdict(sandbox: ZygoteSandbox) -> None:
    """The template killed while a run is in progress: that run is run again, forked by
    the same zygote (not a replacement), and so are the rest; every verdict is the
    program's own."""
    assert sandbox._process is not None
    root = sandbox._process.pid
    # root -> zygote -> template -> run; in a PID namespace, root waits for the zygote
    depth = 3 if "pidns" in sandbox.layers else 2
    source = "import time\nline = input()\nif line == 'slow':\n    time.sleep(0.5)\nprint(line)\n"
    killed: list[int] = []

    def kill_the_template() -> None:
        deadline = time.monotonic() + 5
        while not killed and time.monotonic() < deadline:
            for pid in _templates_running(root, depth):
                os.kill(pid, signal.SIGKILL)
                killed.append(pid)
            time.sleep(0.01)

    killer = threading.Thread(target=kill_the_template)
    killer.start()
    outputs = runs(sandbox, source, [b"slow\n", b"a\n", b"b\n"])
    killer.join()
    assert killed, "no template seen"
    assert outputs == [b"slow\n", b"a\n", b"b\n"]
    assert sandbox._process is not None and sandbox._process.pid == root  # not a restart


def test_a_template_outlives_its_answer_briefly(sandbox: ZygoteSandbox) -> None:
    """Once no request follows for `TEMPLATE_IDLE_S`, the template is gone: nothing of an
    answer stays alive after it."""
    assert sandbox._process is not None
    root = sandbox._process.pid
    depth = 2 if "pidns" in sandbox.layers else 1  # root -> zygote -> template

    def below() -> list[int]:
        level = [root]
        for _ in range(depth):
            level = [child for pid in level for child in _children(pid)]
        return level

    runs(sandbox, "print('kept')", [b""])
    assert below(), "no template after a run"
    time.sleep(TEMPLATE_IDLE_S + 0.5)
    assert below() == []


def test_a_run_holds_its_standard_streams_alone(sandbox: ZygoteSandbox) -> None:
    """No descriptor but 0-2 is open when the program starts: neither the template's
    channel nor the report pipe."""
    source = (
        "import os\nopen_fds = []\nfor fd in range(64):\n    try:\n        os.fstat(fd)\n"
        "        open_fds.append(fd)\n    except OSError:\n        pass\nprint(open_fds)\n"
    )
    assert runs(sandbox, source, [b""] * 3) == [b"[0, 1, 2]\n"] * 3


PAGES_BEFORE_THE_PROGRAM = 320
"""The most page faults a templated run may take before its program's first statement
(counted from its fork, the import and call that read the count included). At 322c5ec
it took 403, three in four of them writes to pages it shares with its template (each a
copy: a third of a run's CPU). Now some 255: the filters are built in the zygote, not in
every run; the streams and `__main__` are set up by the template; the run's descriptors
arrive in place; no `random` reseeds itself in every fork."""


def test_a_run_writes_few_pages_before_its_program(sandbox: ZygoteSandbox) -> None:
    """What a run costs beyond its program, counted in page faults (not time: the count is
    the same on a loaded machine)."""
    source = "import resource\nprint(resource.getrusage(resource.RUSAGE_SELF).ru_minflt)\n"
    counts = [int(out) for out in runs(sandbox, source, [b""] * 4)]
    assert max(counts) < PAGES_BEFORE_THE_PROGRAM, counts
