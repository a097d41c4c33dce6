"""Two zygotes side by side, as two grading workers hold them: one answer's program must not
make another's fail; and the service's processes as a run of the same uid sees them.

Never run this directly: `test_neighbours.py` starts it under `tests.sandbox.harness.confine`
inside `unshare --pid --fork --mount-proc` (a thread bomb runs here), on a platform of
`tests.sandbox.harness.platforms`, or as a real unprivileged uid. One JSON line per finding:

- `holder`: a program holding its whole thread budget in one sandbox while an honest
  threaded program (`threading.stack_size` raised, the usual idiom for deep recursion)
  runs in the other, three times;
- `bomb`: a thread bomb with the smallest stacks in one sandbox while the honest program
  runs again and again in the other; the most threads the bomb reported, and the uid the
  kernel counts its tasks under;
- `dumpable`: whether this process (the zygotes' parent, of their uid) may open a
  zygote's /proc/<pid>/fd/0 and environ, and its capabilities;
- `streams`: benign programs that need what a usual Python start has (/dev/stdin and the
  other links, big ints, one thread for numerical libraries).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
import time
from pathlib import Path
from typing import Any

from reward_service.sandbox import Limits, Outcome, Program
from reward_service.sandbox.confine import THREAD_MARGIN, THREADS, shared_uid_task_limit
from reward_service.sandbox.zygote_client import ZYGOTE, ZygoteSandbox

HONEST = """\
import sys, threading
sys.setrecursionlimit(1 << 20)
threading.stack_size(64 << 20)
def depth(n):
    return 0 if n == 0 else 1 + depth(n - 1)
def main():
    print(depth(20000))
worker = threading.Thread(target=main)
worker.start()
worker.join()
"""
HONEST_OUT = b"20000\n"
HOLDER = """\
import threading, time
threading.stack_size(32768)
stop = threading.Event()
for _ in range(254):
    threading.Thread(target=stop.wait, daemon=True).start()
print("holding", threading.active_count(), flush=True)
time.sleep(3)
stop.set()
"""
"""254 threads and the main one: a run's whole budget (`confine.THREADS`), kept 3 s."""
BOMB = """\
import _thread, ctypes, os, time
ctypes.CDLL(None).mallopt(-8, 1)  # M_ARENA_MAX: no 64 MiB arena reserved per thread
_thread.stack_size(32768)
n = 0
try:
    while n < 1500:
        _thread.start_new_thread(time.sleep, (30,))
        n += 1
        if n % 25 == 0:
            print("threads", n, flush=True)
except RuntimeError as exc:
    print("stopped at", n, exc, flush=True)
    raise
time.sleep(1)
print("held", n, flush=True)
"""
STREAMS = {
    "dev_stdin": ("import sys\nprint(open('/dev/stdin').read().upper(), end='')", b"IN\n"),
    "dev_fd_0": ("print(open('/dev/fd/0').read(), end='')", b"in\n"),
    "dev_stdout": ("open('/dev/stdout', 'w').write('out\\n')", b"out\n"),
    "big_int": ("from math import factorial\nprint(len(str(factorial(5000))))", b"16326\n"),
    "one_thread_env": (
        "import os\nprint(sorted(k for k, v in os.environ.items() if v == '1'))",
        None,
    ),
}
LIMITS = Limits(time_s=4.0, memory_mb=256, output_bytes=1 << 16)


def emit(results: Path, event: str, **fields: Any) -> None:
    with results.open("a") as f:
        f.write(json.dumps({"event": event, **fields}, default=str) + "\n")


def describe(outcome: Outcome) -> dict[str, Any]:
    return {
        "kind": outcome.kind.value,
        "stdout": outcome.stdout.decode(errors="replace")[-400:],
        "stderr": outcome.stderr[-300:],
        "elapsed_s": round(outcome.elapsed_s, 3),
    }


def one(sandbox: ZygoteSandbox, source: str, stdin: bytes = b"") -> Outcome:
    (outcome,) = sandbox.execute(Program("python", source), [stdin], LIMITS, budget_s=30).outcomes()
    return outcome


def beside(
    first: ZygoteSandbox, source: str, second: ZygoteSandbox, wait_s: float, rounds: int
) -> tuple[Outcome, list[Outcome]]:
    """`source` in `first`; after `wait_s`, the honest program in `second` `rounds` times
    (0: until `source`'s run ends, at least once)."""
    ended: list[Outcome] = []
    running = threading.Thread(target=lambda: ended.append(one(first, source)))
    running.start()
    time.sleep(wait_s)
    honest: list[Outcome] = []
    while len(honest) < rounds or (rounds == 0 and (not honest or running.is_alive())):
        honest.append(one(second, HONEST))
    running.join()
    return ended[0], honest


def uid_tasks() -> int:
    """This uid's tasks as a run's task limit counts them (`shared_uid_task_limit`)."""
    return shared_uid_task_limit(os.getuid()) - THREADS - THREAD_MARGIN


def settle(tasks: int, timeout_s: float = 10.0) -> int:
    """This uid's tasks once they are back to `tasks` (an ended run's threads still exiting
    would raise the next run's limit by as many), or as many as are left after `timeout_s`."""
    deadline = time.monotonic() + timeout_s
    while (now := uid_tasks()) > tasks and time.monotonic() < deadline:
        time.sleep(0.05)
    return now


def kernel_uid() -> int:
    """This process's uid as the kernel's first user namespace sees it (the simulated pods map
    theirs to this machine's root, whom the kernel exempts from RLIMIT_NPROC)."""
    uid = os.getuid()
    for line in Path("/proc/self/uid_map").read_text().splitlines():
        inside, outside, count = map(int, line.split())
        if inside <= uid < inside + count:
            return outside + uid - inside
    return uid


def zygotes() -> list[int]:
    """The zygotes this process started (its children running zygote.py)."""
    me = os.getpid()
    found = []
    for pid in Path(f"/proc/{me}/task/{me}/children").read_text().split():
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        if str(ZYGOTE).encode() in cmdline:
            found.append(int(pid))
    return found


def capabilities() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("CapEff:"):
            return int(line.split()[1], 16)
    return 0


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--results", type=Path, required=True)
    args = parser.parse_args()
    with ZygoteSandbox(scratch_mb=32) as first, ZygoteSandbox(scratch_mb=32) as second:
        emit(args.results, "layers", layers=list(first.layers), uid=os.getuid())
        opened: dict[str, str] = {}
        for pid in zygotes():
            for what in ("fd/0", "environ"):  # its /dev/null; its (empty) environment
                try:
                    os.close(os.open(f"/proc/{pid}/{what}", os.O_RDONLY | os.O_NONBLOCK))
                    opened[f"{pid}/{what}"] = "opened"
                except OSError as e:
                    opened[f"{pid}/{what}"] = str(e.strerror)
        emit(args.results, "dumpable", opened=opened, capabilities=capabilities())
        streams = {}
        for name, (source, _) in STREAMS.items():
            streams[name] = describe(one(first, source, b"in\n"))
        emit(args.results, "streams", outcomes=streams)
        tasks = uid_tasks()
        held, honest = beside(first, HOLDER, second, 1.0, 3)
        emit(args.results, "holder", run=describe(held), honest=[describe(o) for o in honest])
        tasks = settle(tasks)  # the bomb's limit counts what the holder has not yet let go
        bomb, honest = beside(first, BOMB, second, 0.1, 0)
        counts = [int(w) for w in bomb.stdout.split() if w.isdigit()]
        emit(
            args.results,
            "bomb",
            run=describe(bomb),
            most=max(counts, default=0),
            tasks_before=tasks,
            kernel_uid=kernel_uid(),
            honest=[describe(o) for o in honest],
        )
        emit(args.results, "after", honest=describe(one(second, HONEST)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
