"""Runs the hostile programs against the service's sandbox; one JSON line per program.

Never run this directly: `test_hostile.py` starts it under `tests.sandbox.harness.confine`
inside `unshare --pid --fork --mount-proc`, so whatever escapes the sandbox
still meets a PID namespace of its own. Secret canaries arrive in this
process's environment (`HOSTILE_*_CANARY`, `REWARD_API_TOKEN`), as a service's
secrets would; every output is searched for them.

Around each program it keeps a bystander process (it must stay alive and
running), loopback listeners (they must accept and receive nothing), and
after it checks the sandbox still runs a correct program, that no process
outlived the run, and that no file named by the run's marker appeared
outside the scratch directory.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import json
import os
import re
import secrets
import site
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from reward_service.sandbox import Kind, Limits, Outcome, Program, Sandbox
from tests.sandbox.harness import confine, platforms, procs
from tests.sandbox.harness.hostile_native import NATIVE
from tests.sandbox.harness.hostile_programs import (
    ACHIEVED,
    HEALTH,
    PROGRAMS,
    SANDBOX_PROBE,
    Hostile,
    Target,
)
from tests.sandbox.harness.hostile_scripts import SCRIPTS

LEFTOVER = re.compile(r"leftover[0-9a-f]{32}")
"""The marker `leave_output` prints; seen again in a later run's output, memory leaked across."""
ALL_CPUS = os.sched_getaffinity(0)
REPO = Path(__file__).resolve().parents[3]
SCRATCH_MB = 64
SURVIVOR_GRACE_S = 1.0
SURVIVOR_POLL_S = 0.01
"""How often a new process is looked for again while the grace lasts: the sandbox's own
template for the health run's limits ends 0.1 s after it (`zygote.TEMPLATE_IDLE_S`), and
each program waits for that; a scan reads one stat line per process."""
STDERR_CAP = 4096
SLACK_S = 2.0
"""Seconds a run may last past its time limit (process start, kill, reap)."""
DEFERRED_S = 1.5
"""Seconds after the daemon's run before its late writes are looked for again."""


def secret_canaries() -> list[str]:
    """The secrets here: this process's environment (a worker's) and the service-account token."""
    found = [value for key, value in os.environ.items() if key.endswith("_CANARY")]
    return [*found, os.environ["REWARD_API_TOKEN"], confine.TOKEN_PATH.read_text()]


class Listeners:
    """Loopback endpoints that count every connection and datagram they get."""

    def __init__(self) -> None:
        self.hits: dict[str, int] = {}
        self._sockets: list[socket.socket] = []
        self.service = self._stream("service", socket.AF_INET, ("127.0.0.1", 0))
        self.tcp = self._stream("tcp", socket.AF_INET, ("127.0.0.1", 0))
        self.tcp6 = self._stream("tcp6", socket.AF_INET6, ("::1", 0))
        self.unix_name = f"hostile-{secrets.token_hex(6)}"
        self._stream("unix", socket.AF_UNIX, "\0" + self.unix_name)
        udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        udp.bind(("127.0.0.1", 0))
        self.udp = udp.getsockname()[1]
        self._serve("udp", udp, lambda s: s.recvfrom(65536))

    def _stream(self, name: str, family: int, address: Any) -> int:
        listener = socket.socket(family, socket.SOCK_STREAM)
        listener.bind(address)
        listener.listen(16)
        self._serve(name, listener, lambda s: s.accept()[0].close())
        return listener.getsockname()[1] if family != socket.AF_UNIX else 0

    def _serve(self, name: str, sock: socket.socket, receive: Any) -> None:
        self.hits[name] = 0
        self._sockets.append(sock)

        def loop() -> None:
            with contextlib.suppress(OSError):
                while True:
                    receive(sock)
                    self.hits[name] += 1

        threading.Thread(target=loop, daemon=True).start()

    def close(self) -> None:
        for sock in self._sockets:
            sock.close()


@dataclass
class Sampler:
    """Peak process count and resident memory of the namespace while a run goes on."""

    peak_processes: int = 0
    peak_rss: int = 0
    _stop: threading.Event = field(default_factory=threading.Event)

    @contextlib.contextmanager
    def watching(self) -> Iterator[Sampler]:
        thread = threading.Thread(target=self._loop, daemon=True)
        thread.start()
        try:
            yield self
        finally:
            self._stop.set()
            thread.join()

    def _loop(self) -> None:
        while not self._stop.is_set():
            alive = procs.stats()
            self.peak_processes = max(self.peak_processes, len(alive))
            self.peak_rss = max(self.peak_rss, sum(p.rss_bytes for p in alive))
            self._stop.wait(0.02)


class Harness:
    """The sandbox under test and everything around it that a program must not touch."""

    def __init__(self, sandbox: Sandbox, results: Path) -> None:
        self.sandbox = sandbox
        self.results = results.open("a")
        self.listeners = Listeners()
        self.canaries = secret_canaries()
        self.bystander = subprocess.Popen(
            [sys.executable, "-c", "import time; print(flush=True); time.sleep(600)"],
            env={},
            stdout=subprocess.PIPE,
        )
        assert self.bystander.stdout is not None
        self.bystander.stdout.readline()  # started: no longer reading its files (state D)
        self.known = {1, os.getpid(), self.bystander.pid}
        self.baseline: set[int] = set()
        self.session = secrets.token_hex(4)
        self.late: list[tuple[float, Hostile, Target, list[str]]] = []
        self.outputs_seen: set[str] = set()

    def emit(self, event: str, **fields: Any) -> None:
        self.results.write(json.dumps({"event": event, **fields}, default=str) + "\n")
        self.results.flush()

    def target(self, name: str) -> Target:
        return Target(
            run_id=f"hostile-{self.session}-{name}",
            service_port=self.listeners.service,
            tcp_port=self.listeners.tcp,
            tcp6_port=self.listeners.tcp6,
            udp_port=self.listeners.udp,
            unix_name=self.listeners.unix_name,
            repo=str(REPO),
            home=str(Path.home()),
            site=site.getsitepackages()[0],
        )

    def run_one(
        self,
        source: str,
        stdin: bytes,
        limits: Limits,
        language: str = "python",
        templated: bool = False,
    ) -> Outcome | str:
        """The program's run on `stdin`; `templated`, as the first of an answer's two runs (a
        Python answer's runs come from its template: `reward_service.sandbox.template`), the
        second run on the same stdin only if the first ended ok."""
        stdins = [stdin, stdin] if templated else [stdin]
        try:
            # a JVM compiler's build (scalac, kotlinc) takes 5-20 s on a loaded machine
            outcomes = self.sandbox.execute(
                Program(language, source), stdins, limits, limits.time_s * 2 + 60, build_time_s=40
            ).outcomes()
        except Exception as exc:  # the interface promises never to raise for a program
            return f"Sandbox.run raised {type(exc).__name__}: {exc}"
        return outcomes[0] if outcomes else "Sandbox.run returned no outcome"

    def healthy(self) -> str:
        """'' when a correct program still gets the right answer, else what went wrong."""
        outcome = self.run_one(HEALTH, b"hostile\n", Limits(5.0, 128, 4096))
        if isinstance(outcome, str):
            return outcome
        if outcome.kind is not Kind.OK or outcome.stdout != b"elitsoh\n":
            return f"health program got {outcome.kind.value} {outcome.stdout[:100]!r}"
        return ""

    def snapshot_baseline(self) -> None:
        self.baseline = {p.pid for p in procs.stats()}

    def survivors(self) -> list[str]:
        """Processes that are neither ours nor the sandbox's own, still alive after a grace.

        A new process whose parent is this harness is the sandbox replacing
        one of its own; anything else new (an orphan under PID 1, a run's
        child, a fresh session) outlived its run. Survivors are killed.
        """
        deadline = time.monotonic() + SURVIVOR_GRACE_S
        while True:
            new = [p for p in procs.stats() if p.pid not in self.baseline | self.known]
            for process in [p for p in new if p.ppid == os.getpid()]:
                self.baseline.add(process.pid)
            strays = [p for p in new if p.ppid != os.getpid()]
            if not strays or time.monotonic() > deadline:
                break
            time.sleep(SURVIVOR_POLL_S)
        described = []
        for process in strays:
            seen = procs.read(process.pid)
            described.append(seen.describe() if seen else f"{process} (gone before it was read)")
            with contextlib.suppress(ProcessLookupError):
                os.kill(process.pid, 9)
        return described

    def bystander_state(self) -> str:
        """'' when the bystander is alive and not stopped, else its state."""
        seen = procs.stat(self.bystander.pid)
        if self.bystander.poll() is not None or seen is None:
            return f"bystander dead ({self.bystander.returncode})"
        return "" if seen.state in ("S", "R") else f"bystander in state {seen.state}"

    def secrets_in(self, *texts: str) -> list[str]:
        leaked = [i for i, canary in enumerate(self.canaries) if any(canary in t for t in texts)]
        return [f"secret #{i} in its output" for i in leaked]

    def attack(self, hostile: Hostile, gates: dict[str, str], templated: bool = False) -> None:
        """Run `hostile` (`templated`: by a template) and judge what it did."""
        target = self.target(hostile.name)
        holes: list[str] = []
        if hostile.gate and gates.get(hostile.gate):
            self.emit(
                "program",
                name=hostile.name,
                skipped=gates[hostile.gate],
                holes=[f"not run: {gates[hostile.gate]}"],
            )
            return
        hits_before = dict(self.listeners.hits)
        scheduling_before = scheduling()
        limits = Limits(hostile.time_s, hostile.memory_mb, hostile.output_bytes)
        with Sampler().watching() as sampler:
            source = hostile.source(target)
            outcome = self.run_one(source, b"", limits, hostile.language, templated)
        if isinstance(outcome, str):
            self.emit("program", name=hostile.name, holes=[outcome])
            return
        stdout = outcome.stdout.decode(errors="replace")
        cwds = [line[4:] for line in stdout.splitlines() if line.startswith("CWD=")]
        extra = [f"{os.path.dirname(cwd)}/{target.run_id}" for cwd in cwds]
        extra += [f"{cwd}/{target.run_id}-inside" for cwd in cwds]
        if outcome.kind not in hostile.kinds:
            holes.append(
                f"ended {outcome.kind.value}, expected one of "
                f"{sorted(k.value for k in hostile.kinds)}"
            )
        holes += [
            line[:300]
            for line in (stdout + "\n" + outcome.stderr).splitlines()
            if line.startswith(ACHIEVED)
        ][:5]
        holes += self.secrets_in(stdout, outcome.stderr)
        markers = set(LEFTOVER.findall(stdout + outcome.stderr))
        holes += [f"read an earlier run's output: {m}" for m in sorted(markers & self.outputs_seen)]
        self.outputs_seen |= markers
        if len(outcome.stdout) > hostile.output_bytes:
            holes.append(f"stdout {len(outcome.stdout)} bytes over the cap {hostile.output_bytes}")
        if len(outcome.stderr) > STDERR_CAP:
            holes.append(f"stderr {len(outcome.stderr)} characters")
        if outcome.elapsed_s > hostile.time_s + SLACK_S:
            holes.append(f"ran {outcome.elapsed_s:.1f} s, limit {hostile.time_s} s")
        if hostile.name == "fork_bomb" and sampler.peak_processes > 300:
            holes.append(f"fork bomb reached {sampler.peak_processes} processes")
        holes += [
            f"listener {name} got {n - hits_before[name]}"
            for name, n in self.listeners.hits.items()
            if n != hits_before[name]
        ]
        holes += [
            f"(nice, cpus) of {who} changed: {scheduling_before[pid][1]} -> {now}"
            for pid, (who, now) in scheduling().items()
            if pid in scheduling_before and scheduling_before[pid][1] != now
        ]
        restore_affinity()
        if state := self.bystander_state():
            holes.append(state)
        if problem := self.healthy():
            holes.append(f"sandbox unhealthy afterwards: {problem}")
        holes += [f"survivor: {s}" for s in self.survivors()]
        holes += [f"file outside scratch: {path}" for path in files_outside(target, extra)]
        holes += [f"scratch directory left behind: {cwd}" for cwd in cwds if os.path.isdir(cwd)]
        self.late.append((time.monotonic(), hostile, target, extra))
        self.emit(
            "program",
            name=hostile.name,
            path="template" if templated else "fork",
            kind=outcome.kind.value,
            exit_code=outcome.exit_code,
            elapsed_s=round(outcome.elapsed_s, 3),
            stdout=_redact(stdout[:600], self.canaries),
            stderr=_redact(outcome.stderr[-300:], self.canaries),
            peak_processes=sampler.peak_processes,
            peak_rss_mb=sampler.peak_rss >> 20,
            holes=holes,
        )

    def late_checks(self) -> None:
        """Files written late (a daemon's) and processes that lingered since."""
        if self.late:
            time.sleep(max(0.0, self.late[-1][0] + DEFERRED_S - time.monotonic()))
        late = {}
        for _, hostile, target, extra in self.late:
            found = files_outside(target, extra)
            if found:
                late[hostile.name] = found
        self.emit("late", files=late, survivors=self.survivors())


def scheduling() -> dict[int, tuple[str, tuple[int, int]]]:
    """Nice value and CPU count of every process here: a run must change neither of another's."""
    found = {}
    for process in procs.stats():
        with contextlib.suppress(OSError):
            nice = os.getpriority(os.PRIO_PROCESS, process.pid)
            cpus = len(os.sched_getaffinity(process.pid))
            found[process.pid] = (process.comm, (nice, cpus))
    return found


def restore_affinity() -> None:
    """Every CPU back for every process here, after a run that pinned them."""
    for process in procs.stats():
        with contextlib.suppress(OSError):
            os.sched_setaffinity(process.pid, ALL_CPUS)


def files_outside(target: Target, extra: list[str]) -> list[str]:
    """The files named by the run's marker that exist outside its scratch (removed once seen)."""
    found = [path for path in target.outside_paths() + extra if os.path.lexists(path)]
    for path in found:
        with contextlib.suppress(OSError):
            os.unlink(path)
    return found


def _redact(text: str, canaries: list[str]) -> str:
    for i, canary in enumerate(canaries):
        text = text.replace(canary, f"<secret #{i}>")
    return text


def gates_from(probe: dict[str, Any]) -> dict[str, str]:
    """Capabilities the sandbox leaves unbounded, so the bombs that need them stay unrun."""
    gates = {}
    nproc = probe.get("rlimits", {}).get("NPROC", [-1])[0]
    if probe.get("fork") == "allowed" and (probe.get("uid") == 0 or not 0 <= nproc <= 4096):
        gates["fork"] = f"fork allowed with uid {probe.get('uid')} and RLIMIT_NPROC {nproc}"
    return gates


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--results", type=Path, required=True)
    parser.add_argument("--only", nargs="*", default=None)
    parser.add_argument("--profile", choices=platforms.PROFILES, default="full")
    args = parser.parse_args()
    ctypes.CDLL(None).prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE 0, as a grading worker sets it
    from reward_service.sandbox.run_launcher import build_launcher
    from reward_service.sandbox.toolchains import discover
    from reward_service.sandbox.zygote_client import ZygoteSandbox
    from reward_service.scorers.code.settings import DEFAULT_LAUNCHER_DIR, DEFAULT_TOOLCHAIN_PATH

    languages = ["cpp", *(hostile.language for hostile in SCRIPTS)]
    built = build_launcher(DEFAULT_LAUNCHER_DIR, DEFAULT_TOOLCHAIN_PATH)
    sandbox = ZygoteSandbox(
        SCRATCH_MB,
        toolchain_path=DEFAULT_TOOLCHAIN_PATH,
        languages=languages,
        launcher_dir=DEFAULT_LAUNCHER_DIR,
    )
    harness = Harness(sandbox, args.results)
    try:
        harness.emit("layers", layers=list(sandbox.layers), profile=args.profile)
        harness.emit("launcher", status=sandbox.launcher, built=built)
        outcome = harness.run_one(SANDBOX_PROBE, b"", Limits(5.0, 128, 64 * 1024))
        if isinstance(outcome, str) or outcome.kind is not Kind.OK:
            harness.emit("sandbox_probe", ok=False, outcome=str(outcome))
            return 1
        probe = json.loads(outcome.stdout)
        probe["runner_ns"] = {n: os.readlink(f"/proc/self/ns/{n}") for n in probe["ns"]}
        harness.emit("sandbox_probe", ok=True, **probe)
        gates = gates_from(probe)
        if problem := harness.healthy():
            harness.emit("health", problem=problem)
            return 1
        harness.snapshot_baseline()
        # Python programs take turns between the two ways a run starts (forked by the
        # zygote, or by its answer's template), the other way round on the next profile:
        # each program meets both across the profiles.
        turn = list(platforms.PROFILES).index(args.profile)
        found = discover(DEFAULT_TOOLCHAIN_PATH, languages)
        missing = {language for language, tools in found.items() if isinstance(tools, str)}
        for index, hostile in enumerate((*PROGRAMS, *NATIVE, *SCRIPTS)):
            if hostile.language in missing:
                continue  # its test skips, naming the missing toolchain
            closed = sandbox.toolchains.get(hostile.language)
            if isinstance(closed, str) and (args.only is None or hostile.name in args.only):
                harness.emit("program", name=hostile.name, closed=closed, holes=[])
                continue  # the sandbox closed its language on this platform, saying why
            if args.only is None or hostile.name in args.only:
                templated = hostile.language == "python" and (turn + index) % 2 == 0
                harness.attack(hostile, gates, templated)
        harness.late_checks()
    finally:
        sandbox.close()
        time.sleep(0.5)
        after = [p.describe() for p in procs.processes() if p.pid not in harness.known]
        harness.emit("closed", processes=after)
        harness.bystander.kill()
        harness.bystander.communicate()
        harness.listeners.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
