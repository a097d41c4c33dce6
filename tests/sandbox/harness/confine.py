"""PID 1 of the outer namespace that every hostile program runs in.

Started as `unshare --pid --fork --mount-proc --kill-child python -m
tests.sandbox.harness.confine --report FILE --outer-pidns NS --outer-mntns NS -- CMD...`.
It first proves the confinement (it is PID 1 of a PID namespace that is not
the caller's, alone in /proc, in a mount namespace of its own) and refuses
to start CMD otherwise. Then, as init of that namespace (which nothing inside
can kill), it reaps orphans, forwards SIGTERM/SIGINT to CMD, kills every
process of the namespace when a watchdog bound is crossed (processes, memory,
disk) or the deadline passes, and lists the processes still alive once CMD
has exited: each of those outlived the service that started it.

With `--fake-token`, a size-limited tmpfs covers /run in this private mount
namespace only, holding a service-account token whose text is the
`HOSTILE_TOKEN_CANARY` variable (which CMD then does not inherit), world-readable
as in a pod.
With `--private-tmp`, a tmpfs of its own covers /tmp in this mount namespace only (the
report's directory bound back where it was).
The report is JSON lines: probe, watchdog, leftovers, exit.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import json
import os
import resource
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.sandbox.harness import procs

REPO = Path(__file__).resolve().parents[3]
"""The checkout: a confined runner starts there, its modules importable."""

TOKEN_PATH = Path("/var/run/secrets/kubernetes.io/serviceaccount/token")
PROBE_FAILED = 97
MAX_PROCESSES = 600
MAX_RSS_BYTES = 6 << 30
MAX_DISK_DROP_BYTES = 4 << 30
BACKSTOP_FILE_BYTES = 2 << 30
"""Largest file anything here may write, should every inner bound fail."""
PRIVATE_TMP_MB = 2048
"""The tmpfs over CMD's /tmp (`mount_private_tmp`)."""


class Report:
    def __init__(self, path: Path) -> None:
        self._file = path.open("a")
        self._lock = threading.Lock()

    def write(self, event: str, **fields: Any) -> None:
        with self._lock:
            self._file.write(json.dumps({"event": event, **fields}) + "\n")
            self._file.flush()


@functools.cache
def unavailable() -> str | None:
    """Why no PID namespace can be made here (no unshare, or not allowed), or None."""
    unshare = shutil.which("unshare")
    if unshare is None:
        return "unshare (util-linux) is not installed"
    tried = subprocess.run(
        [unshare, "--pid", "--fork", "--mount-proc", "--kill-child", "true"], capture_output=True
    )
    if tried.returncode != 0:
        return f"unshare cannot make a PID namespace here: {tried.stderr.decode().strip()}"
    return None


def command(
    report: Path,
    inner: list[str],
    deadline_s: float,
    fake_token: bool = True,
    private_tmp: bool = True,
) -> list[str]:
    """The command line that runs `inner` confined, for a caller outside the namespace;
    without `private_tmp` it shares the host's /tmp (for a caller that looks there)."""
    unshare = shutil.which("unshare")
    if unshare is None:
        raise FileNotFoundError("unshare (util-linux) is not installed")
    line = [unshare, "--pid", "--fork", "--mount-proc", "--kill-child"]
    line += [sys.executable, "-m", "tests.sandbox.harness.confine", "--report", str(report)]
    line += ["--outer-pidns", os.readlink("/proc/self/ns/pid")]
    line += ["--outer-mntns", os.readlink("/proc/self/ns/mnt"), "--deadline-s", str(deadline_s)]
    line += ["--fake-token"] if fake_token else []
    return [*line, *(["--private-tmp"] if private_tmp else []), "--", *inner]


def canaries() -> dict[str, str]:
    """Fresh secrets for one confined run, as environment variables."""
    names = ("HOSTILE_ENV_CANARY", "HOSTILE_TOKEN_CANARY", "REWARD_API_TOKEN")
    return {name: f"canary{secrets.token_hex(16)}" for name in names}


def read_report(path: Path) -> dict[str, list[dict[str, Any]]]:
    """The report's events, grouped by kind."""
    events: dict[str, list[dict[str, Any]]] = {}
    with contextlib.suppress(FileNotFoundError):
        for line in path.read_text().splitlines():
            event = json.loads(line)
            events.setdefault(event.pop("event"), []).append(event)
    return events


def probe(outer_pidns: str, outer_mntns: str) -> dict[str, Any]:
    """Evidence that this process is confined; `ok` only if every check holds."""
    pidns = os.readlink("/proc/self/ns/pid")
    mntns = os.readlink("/proc/self/ns/mnt")
    listed = procs.pids()
    checks = {
        "pid_is_1": os.getpid() == 1,
        "own_pid_namespace": pidns != outer_pidns,
        "own_mount_namespace": mntns != outer_mntns,
        "alone_in_proc": listed == [1],
    }
    return {"ok": all(checks.values()), "checks": checks, "pidns": pidns, "listed": listed[:20]}


def mount_fake_token(report: Report) -> None:
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m,mode=755", "tmpfs", "/run"], check=True)
    TOKEN_PATH.parent.mkdir(parents=True)
    TOKEN_PATH.write_text(os.environ.pop("HOSTILE_TOKEN_CANARY"))  # in the file only, as in a pod
    TOKEN_PATH.chmod(0o644)
    report.write("fake_token", path=str(TOKEN_PATH))


def mount_private_tmp(report: Report, keep: list[Path]) -> None:
    """A tmpfs of its own over /tmp, in this mount namespace only (as a pod's `emptyDir`
    that no other writer shares, which docs/sandbox.md asks for): where a profile has no
    mount namespace the sandbox watches the free space of /tmp, and other tests' writing
    on the host's /tmp (a neighbour campaign's disk bombs among them) would otherwise end
    this service's runs. The directories of `keep` under /tmp (where the caller reads the
    reports; a checkout or a virtual environment made there) stay the host's, bound back
    at their paths."""
    under = sorted({path for path in keep if path.is_relative_to("/tmp")})
    outermost = [p for p in under if not any(p != q and p.is_relative_to(q) for q in under)]
    held = [(path, os.open(path, os.O_PATH | os.O_DIRECTORY)) for path in outermost]
    options = f"size={PRIVATE_TMP_MB}m,mode=1777"
    subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", "/tmp"], check=True)
    for path, fd in held:
        path.mkdir(parents=True, exist_ok=True)
        source = f"/proc/{os.getpid()}/fd/{fd}"  # the host's directory, not the new one
        subprocess.run(["mount", "--no-canonicalize", "--bind", source, str(path)], check=True)
        os.close(fd)
    report.write("private_tmp", size_mb=PRIVATE_TMP_MB, kept=[str(p) for p, _ in held])


def kill_namespace() -> int:
    """SIGKILL every other process of this namespace, by PID, until none is left."""
    killed = 0
    for _ in range(200):
        others = [p for p in procs.stats() if p.pid != 1]
        if not others:
            break
        for process in others:
            with contextlib.suppress(ProcessLookupError):
                os.kill(process.pid, signal.SIGKILL)
                killed += 1
        reap()
        time.sleep(0.01)
    return killed


def reap() -> dict[int, int]:
    """Reap every exited child or orphan; their wait statuses by PID."""
    statuses = {}
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return statuses
        if pid == 0:
            return statuses
        statuses[pid] = status


def supervise(child: subprocess.Popen[bytes], report: Report, deadline_s: float) -> int:
    """Reap and watch until `child` exits; its exit code."""
    started = time.monotonic()
    disk_start = _disk_free()
    peak_processes = peak_rss = 0
    while True:
        statuses = reap()
        if child.pid in statuses:
            code = os.waitstatus_to_exitcode(statuses[child.pid])
            report.write("exit", code=code, peak_processes=peak_processes, peak_rss=peak_rss)
            return code
        alive = [p for p in procs.stats() if p.pid != 1]
        rss = sum(p.rss_bytes for p in alive)
        peak_processes, peak_rss = max(peak_processes, len(alive)), max(peak_rss, rss)
        reason = None
        if len(alive) > MAX_PROCESSES:
            reason = f"{len(alive)} processes"
        elif rss > MAX_RSS_BYTES:
            reason = f"{rss >> 20} MiB resident"
        elif disk_start - _disk_free() > MAX_DISK_DROP_BYTES:
            reason = f"{(disk_start - _disk_free()) >> 20} MiB of disk used"
        elif time.monotonic() - started > deadline_s:
            reason = f"deadline of {deadline_s} s"
        if reason:
            described = [p.describe() for p in procs.processes() if p.pid != 1][:30]
            report.write("watchdog", reason=reason, processes=described, killed=kill_namespace())
        time.sleep(0.02)


def _disk_free() -> int:
    stat = os.statvfs("/")
    return stat.f_bavail * stat.f_frsize


def leftovers(report: Report) -> None:
    """Record (then kill) what still lives once CMD has gone: each one outlived the service."""
    time.sleep(1.0)
    reap()
    alive = [p for p in procs.processes() if p.pid != 1]
    report.write("leftovers", processes=[p.describe() for p in alive], killed=kill_namespace())


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--report", type=Path, required=True)
    parser.add_argument("--outer-pidns", required=True)
    parser.add_argument("--outer-mntns", required=True)
    parser.add_argument("--fake-token", action="store_true")
    parser.add_argument("--private-tmp", action="store_true")
    parser.add_argument("--deadline-s", type=float, default=300.0)
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    report = Report(args.report)
    evidence = probe(args.outer_pidns, args.outer_mntns)
    report.write("probe", **evidence)
    if not evidence["ok"]:
        return PROBE_FAILED
    if args.fake_token:
        mount_fake_token(report)
    if args.private_tmp:
        keep = [args.report.resolve().parent, REPO, Path(sys.prefix), Path(sys.base_prefix)]
        mount_private_tmp(report, [path.resolve() for path in keep])
    resource.setrlimit(resource.RLIMIT_FSIZE, (BACKSTOP_FILE_BYTES, BACKSTOP_FILE_BYTES))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    child = subprocess.Popen(command)
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda signum, _: child.send_signal(signum))
    code = supervise(child, report, args.deadline_s)
    leftovers(report)
    return code


if __name__ == "__main__":
    sys.exit(main())


def confined_events(
    prefix: str, inner: Callable[[Path], list[str]], deadline_s: float
) -> dict[str, list[dict[str, Any]]]:
    """Run `inner(results)`, a runner's command line, confined (`command`) from the
    repository, in a scratch directory the real uid may write; the events it wrote to
    `results`, once the confinement's own probe proved it and nothing outlived its deadline."""
    tmp = Path(tempfile.mkdtemp(prefix=prefix))
    tmp.chmod(0o777)  # the real uid writes its results here
    try:
        results, report = tmp / "results.jsonl", tmp / "confine.jsonl"
        done = subprocess.run(
            command(report, inner(results), deadline_s, fake_token=False),
            cwd=REPO,
            env={**os.environ, "PYTHONPATH": str(REPO)},
            capture_output=True,
            text=True,
            timeout=deadline_s + 30,
        )
        events = read_report(results)
        outer = read_report(report)
        logs = f"exit {done.returncode}\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}"
        assert outer.get("probe", [{}])[0].get("ok"), f"not confined: {outer}\n{logs}"
        assert not outer.get("watchdog"), outer["watchdog"]
        assert done.returncode == 0 and "after" in events, logs
        return events
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
