"""The zygote: a pre-warmed interpreter that forks one confined process per run.

Started by `ZygoteSandbox` as `python -I zygote.py CONFIG` with an empty
environment; stdlib only, it imports its sibling modules and nothing else
of the package. It enters what namespaces it can, self-tests the layers,
answers `{"layers": [...]}`, then serves one run per request over its
stdin/stdout (`protocol`): fork, confine (`confine`), become the program
(`runners`), supervise its pipes against the wall clock and the output cap,
kill its group and whatever else it left, remove its scratch directory,
answer the outcome. It exits at end of file on stdin and dies with its
parent (PR_SET_PDEATHSIG); its runs die with it.
"""

from __future__ import annotations

import os
import sys

if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

import bisect  # noqa: F401  # pre-warmed for the programs
import collections  # noqa: F401
import contextlib
import decimal  # noqa: F401
import fractions  # noqa: F401
import functools  # noqa: F401
import gc
import heapq  # noqa: F401
import itertools  # noqa: F401
import json
import math  # noqa: F401
import random  # noqa: F401
import re  # noqa: F401
import select
import shutil
import signal
import statistics  # noqa: F401
import string  # noqa: F401
import tempfile
import time
import typing
from dataclasses import dataclass

from reward_service.sandbox import landlock, linux, namespaces, protocol
from reward_service.sandbox.confine import (
    CONFINEMENT_FAILED,
    NOBODY,
    REPORT_FD,
    Confinement,
    RunLimits,
)
from reward_service.sandbox.landlock import Ruleset
from reward_service.sandbox.runners import RUNNERS, Runner
from reward_service.sandbox.seccomp import SyscallFilter

STDERR_TAIL = 1024
_STDERR_WINDOW = 64 * 1024
_CHUNK = 65536
_DRAIN_S = 1.0
RUN_OVERHEAD_S = 0.05
"""Set aside per run, beyond its time limit, when deciding whether it fits in the budget."""
_PROBE_IMPORTS = ("colorsys", "datetime", "cmath", "array", "textwrap")
"""Stdlib modules a probe run imports from disk (those the zygote has not imported)."""


@dataclass
class _Seen:
    """What the zygote saw of a run."""

    stdout: bytearray
    stderr: bytearray
    report: bytearray
    output_exceeded: bool = False
    timed_out: bool = False
    scratch_exceeded: bool = False
    """Its scratch directory outgrew `scratch_mb` (where no tmpfs bounds it, seen afterwards)."""


class Zygote:
    def __init__(self, scratch_mb: int) -> None:
        self.scratch_mb = scratch_mb
        self.runs = 0
        can_switch_uid = os.geteuid() == 0 and linux.has_capabilities(
            linux.CAP_SETUID, linux.CAP_SETGID, linux.CAP_CHOWN
        )
        self.namespaces: list[str] = []
        if os.geteuid() != 0 and namespaces.enter_user_namespace():
            self.namespaces.append("userns")
        read_paths = _read_paths()
        self.scratch_root = ""
        self.pid_namespace = False
        if os.geteuid() == 0:
            if namespaces.enter_network_namespace():
                self.namespaces.append("netns")
            if namespaces.enter_mount_namespace(read_paths, scratch_mb):
                self.namespaces.append("mountns")
                self.scratch_root = "/tmp"
            self.pid_namespace = namespaces.enter_pid_namespace()
            if self.pid_namespace:
                linux.prctl(linux.PR_SET_PDEATHSIG, signal.SIGKILL)
                self.namespaces.append("pidns")
        if not self.pid_namespace:
            linux.prctl(linux.PR_SET_CHILD_SUBREAPER, 1)
        if not self.scratch_root:
            self.scratch_root = tempfile.mkdtemp(prefix="reward-sandbox-")
            os.chmod(self.scratch_root, 0o711)  # the runs' uid enters its own dir, lists none
        self.owns_scratch_root = "mountns" not in self.namespaces
        switch_uid = can_switch_uid and "userns" not in self.namespaces
        self.confinement = Confinement(
            zygote_pid=os.getpid(),
            run_uid=NOBODY if switch_uid else None,
            landlock_reads=read_paths if landlock.abi() >= 1 else None,
            syscall_filter=_try(lambda: SyscallFilter(read_only_files=landlock.abi() < 1)),
        )

    @property
    def layers(self) -> list[str]:
        c = self.confinement
        layers = ["process", "rlimits"]
        layers += ["uid"] if c.run_uid is not None else []
        layers += ["seccomp"] if c.syscall_filter is not None else []
        layers += ["landlock"] if c.landlock_reads is not None else []
        layers += self.namespaces
        if {"netns", "mountns", "pidns"} <= set(self.namespaces):
            layers.append("namespaces")
        return layers

    def self_test(self) -> str | None:
        """Run a probe under every layer, turning off a layer that cannot be put in place.

        An unprivileged uid that cannot read the interpreter's own files is
        turned off too (the run then keeps root's uid without capabilities).
        Returns why the sandbox cannot run anything, or None.
        """
        paths = [p for p in sys.path if os.path.isdir(p)]
        imports = "".join(f"import {m}\n" for m in _PROBE_IMPORTS if m not in sys.modules)
        probe = {
            "language": "python",
            "source": f"import os\nfor p in {paths!r}:\n    os.listdir(p)\n{imports}print('ok')\n",
            "time_s": 10,
            "memory_mb": 512,
            "output_bytes": 1024,
        }
        for _ in range(4):
            reply = self.run(probe, b"")
            if reply["kind"] == "ok" and protocol.from_text(reply["stdout"]) == b"ok\n":
                return None
            failed = reply.get("confinement") or ("uid" if self.confinement.run_uid else None)
            c = self.confinement
            if failed == "uid" and c.run_uid is not None:
                c.run_uid = None
            elif failed == "landlock" and c.landlock_reads is not None:
                c.landlock_reads = None
                if c.syscall_filter is not None:  # no landlock: the filter refuses file writes
                    c.syscall_filter = SyscallFilter(read_only_files=True)
            elif failed == "seccomp" and c.syscall_filter is not None:
                c.syscall_filter = None
            else:
                return f"self-test failed: {reply['stderr']}"
        return "self-test failed"

    def serve(self, request: protocol.Message, control_out: int) -> None:
        """Run the program once per stdin of `request`, answering each outcome as it ends.

        Stops after the first failure when asked, and before a run that could
        overrun the request's budget; a final `{"done": true}` closes the answer.
        """
        started = time.monotonic()
        for stdin in request["stdins"]:
            left = float(request["budget_s"]) - (time.monotonic() - started)
            if left < float(request["time_s"]) + RUN_OVERHEAD_S:
                break
            outcome = self.run(request, protocol.from_text(stdin))
            protocol.write_all(control_out, protocol.encode(outcome))
            if request["stop_at_first_failure"] and outcome["kind"] != "ok":
                break
        protocol.write_all(control_out, protocol.encode({"done": True}))

    def run(self, request: protocol.Message, stdin: bytes) -> protocol.Message:
        """One run of `request`'s program on `stdin`."""
        runner = RUNNERS[request["language"]]
        limits = RunLimits(float(request["time_s"]), int(request["memory_mb"]), self.scratch_mb)
        self.runs += 1
        workdir = os.path.join(self.scratch_root, f"run-{self.runs}")
        os.mkdir(workdir, 0o700)
        try:
            runner.write_files(request["source"], workdir)
            if self.confinement.run_uid is not None:
                for path in (workdir, *(e.path for e in os.scandir(workdir))):
                    os.chown(path, self.confinement.run_uid, self.confinement.run_uid)
            ruleset = self.confinement.ruleset(workdir)
            stdin_r, stdin_w = os.pipe()
            stdout_r, stdout_w = os.pipe()
            stderr_r, stderr_w = os.pipe()
            report_r, report_w = os.pipe()
            started = time.monotonic()
            pid = os.fork()
            if pid == 0:
                child_fds = (stdin_r, stdout_w, stderr_w, report_w)
                self._become_run(runner, request["source"], child_fds, ruleset, workdir, limits)
            for fd in (stdin_r, stdout_w, stderr_w, report_w, *([ruleset.fd] if ruleset else [])):
                os.close(fd)
            watch = (
                None if "mountns" in self.namespaces else _ScratchWatch(workdir, self.scratch_mb)
            )
            seen, ended = self._supervise(
                pid,
                stdin,
                (stdin_w, stdout_r, stderr_r, report_r),
                started + limits.time_s,
                int(request["output_bytes"]),
                watch,
            )
            status, usage = self._end(pid)
            if watch is not None:
                seen.scratch_exceeded = seen.scratch_exceeded or watch.exceeded(final=True)
        finally:
            _remove(workdir)
        return _outcome(seen, status, usage, limits, ended - started)

    def _become_run(
        self,
        runner: Runner,
        source: str,
        fds: tuple[int, int, int, int],
        ruleset: Ruleset | None,
        workdir: str,
        limits: RunLimits,
    ) -> None:
        """In the forked child: confine, then become the program; never returns."""
        try:
            try:
                self.confinement.apply(fds, ruleset, workdir, limits)
            except OSError as e:
                os.write(REPORT_FD, str(e.strerror).encode())
                os._exit(CONFINEMENT_FAILED)
            os.close(REPORT_FD)  # the program gets no channel but its standard streams
            runner.run(source, workdir)
        finally:
            os._exit(CONFINEMENT_FAILED)

    def _supervise(
        self,
        pid: int,
        stdin: bytes,
        fds: tuple[int, int, int, int],
        deadline: float,
        output_bytes: int,
        watch: _ScratchWatch | None,
    ) -> tuple[_Seen, float]:
        """Feed stdin, collect the outputs until the run ends or breaks a limit."""
        stdin_w, stdout_r, stderr_r, report_r = fds
        seen = _Seen(bytearray(), bytearray(), bytearray())
        sinks = {stdout_r: seen.stdout, stderr_r: seen.stderr, report_r: seen.report}
        windowed = {stderr_r, report_r}
        pidfd = os.pidfd_open(pid)
        poller = select.poll()
        for fd in (*sinks, pidfd):
            poller.register(fd, select.POLLIN)
        pending = memoryview(stdin)
        if pending:
            os.set_blocking(stdin_w, False)
            poller.register(stdin_w, select.POLLOUT)
        else:
            os.close(stdin_w)
        exited = False
        ended = time.monotonic()
        while not exited or sinks:
            if exited:  # the run is over: its group and strays are killed, drain what is left
                timeout = _DRAIN_S
            else:
                timeout = deadline - time.monotonic()
                if timeout <= 0:
                    seen.timed_out = True
                    break
                if watch is not None:
                    timeout = min(timeout, _ScratchWatch.INTERVAL_S)
            events = poller.poll(timeout * 1000)
            if not events and exited:
                break
            for fd, _ in events:
                if fd == pidfd:
                    exited, ended = True, time.monotonic()
                    poller.unregister(pidfd)
                    self._kill(pid)
                elif fd == stdin_w:
                    pending = self._feed(stdin_w, pending, poller)
                else:
                    self._collect(fd, sinks, poller, fd in windowed)
            if len(seen.stdout) > output_bytes:
                seen.output_exceeded = True
                del seen.stdout[output_bytes:]
                break
            if watch is not None and not exited and watch.exceeded():
                seen.scratch_exceeded = True
                break
        if not exited:
            ended = time.monotonic()
            self._kill(pid)
        for fd in (*sinks, pidfd, *([stdin_w] if pending else [])):
            os.close(fd)
        return seen, ended

    @staticmethod
    def _feed(fd: int, pending: memoryview, poller: select.poll) -> memoryview:
        try:
            pending = pending[os.write(fd, pending[:_CHUNK]) :]
        except BlockingIOError:
            return pending
        except BrokenPipeError:
            pending = pending[len(pending) :]
        if not pending:
            poller.unregister(fd)
            os.close(fd)
        return pending

    @staticmethod
    def _collect(fd: int, sinks: dict[int, bytearray], poller: select.poll, windowed: bool) -> None:
        data = os.read(fd, _CHUNK)
        sink = sinks[fd]
        if not data:
            poller.unregister(fd)
            os.close(fd)
            del sinks[fd]
            return
        sink += data
        if windowed and len(sink) > 2 * _STDERR_WINDOW:
            del sink[:-_STDERR_WINDOW]

    def _kill(self, pid: int) -> None:
        """SIGKILL the run's group, the run, and everything else the run left."""
        for kill in (os.killpg, os.kill):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                kill(pid, signal.SIGKILL)
        if self.pid_namespace and os.getpid() == 1:
            with contextlib.suppress(ProcessLookupError):
                os.kill(-1, signal.SIGKILL)  # as pid 1 of our own namespace: all but ourselves

    def _end(self, pid: int) -> tuple[int, float]:
        """Reap the run and every stray; the run's wait status and CPU seconds."""
        _, status, usage = os.wait4(pid, 0)
        while True:
            strays = self._strays()
            for stray in strays:
                self._kill(stray)
            try:
                while os.waitpid(-1, 0 if strays else os.WNOHANG)[0]:
                    pass
            except ChildProcessError:
                pass
            if not strays:
                return status, usage.ru_utime + usage.ru_stime

    def _strays(self) -> list[int]:
        """Our children (as a subreaper, orphans come to us) when no PID namespace holds them."""
        if self.pid_namespace:
            return []
        me = os.getpid()
        try:
            with open(f"/proc/{me}/task/{me}/children", "rb") as f:
                return [int(pid) for pid in f.read().split()]
        except OSError:
            return []

    def close(self) -> None:
        if self.owns_scratch_root:
            _remove(self.scratch_root)


def _outcome(
    seen: _Seen, status: int, cpu_s: float, limits: RunLimits, elapsed_s: float
) -> protocol.Message:
    exit_code = os.waitstatus_to_exitcode(status)
    stderr = bytes(seen.stderr[-STDERR_TAIL:]).decode("utf-8", "replace")
    confinement = None
    if seen.report:  # written only by the run's confinement, closed before the program
        kind = "runtime_error"
        message = bytes(seen.report).decode("utf-8", "replace")
        confinement = message.split(":", 1)[0]
        stderr = f"sandbox: {message}"
    elif seen.output_exceeded or seen.scratch_exceeded:
        kind = "output_limit"
    elif seen.timed_out or cpu_s >= limits.time_s or exit_code == -signal.SIGXCPU:
        kind = "time_limit"
    elif exit_code == 1 and _last_line(stderr).startswith("MemoryError"):
        kind = "memory_limit"
    elif exit_code == 0:
        kind = "ok"
    else:
        kind = "runtime_error"
    return {
        "kind": kind,
        "stdout": protocol.to_text(bytes(seen.stdout)),
        "stderr": stderr,
        "exit_code": exit_code if exit_code >= 0 else None,
        "elapsed_s": round(elapsed_s, 6),
        "confinement": confinement,
    }


class _ScratchWatch:
    """Where no tmpfs bounds a run's scratch dir: its file system's free space, polled while
    it runs; a drop past the quota is confirmed by counting the dir itself."""

    INTERVAL_S = 0.05

    def __init__(self, workdir: str, scratch_mb: int) -> None:
        self.workdir = workdir
        self.quota = scratch_mb * 1024 * 1024
        self.free = _free_bytes(workdir)
        self.next = time.monotonic() + self.INTERVAL_S

    def exceeded(self, final: bool = False) -> bool:
        now = time.monotonic()
        if not final and now < self.next:
            return False
        self.next = now + self.INTERVAL_S
        if not final and self.free - _free_bytes(self.workdir) <= self.quota:
            return False
        return _disk_usage(self.workdir, self.quota) > self.quota


def _free_bytes(path: str) -> int:
    stat = os.statvfs(path)
    return stat.f_bavail * stat.f_frsize


def _disk_usage(path: str, limit: int) -> int:
    """Bytes allocated beneath `path`, counted until they pass `limit` (no symlink followed).

    A directory the run made unreadable counts as over the limit."""
    total, directories = 0, [path]
    while directories and total <= limit:
        try:
            with os.scandir(directories.pop()) as entries:
                for entry in entries:
                    total += entry.stat(follow_symlinks=False).st_blocks * 512
                    if entry.is_dir(follow_symlinks=False):
                        directories.append(entry.path)
        except OSError:
            return limit + 1
    return total


def _remove(path: str) -> None:
    """Remove a scratch dir, also when its run took the permissions off its directories."""
    shutil.rmtree(path, ignore_errors=True)
    if not os.path.lexists(path):
        return
    for parent, directories, _ in os.walk(path):
        for name in directories:
            directory = os.path.join(parent, name)
            if not os.path.islink(directory):
                with contextlib.suppress(OSError):
                    os.chmod(directory, 0o700)
    shutil.rmtree(path, ignore_errors=True)


def _last_line(text: str) -> str:
    lines = text.rstrip("\n").rsplit("\n", 1)
    return lines[-1]


def _read_paths() -> list[str]:
    """What a run may read: the system's libraries, a few /etc files, devices, Python's own."""
    python = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix}
    python.update(p for p in sys.path if p and os.path.isdir(p))
    paths = [*namespaces.SYSTEM_DIRS, *namespaces.ETC_FILES, *namespaces.DEVICES]
    return paths + sorted(os.path.abspath(p) for p in python)


def _try(build: typing.Callable[[], typing.Any]) -> typing.Any:
    try:
        return build()
    except OSError:
        return None


def main() -> None:
    config = json.loads(sys.argv[1])
    linux.prctl(linux.PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != config["worker_pid"]:
        return
    control_in, control_out = os.dup(0), os.dup(1)
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 0)
    os.dup2(null, 1)
    os.close(null)
    del sys.path[0]
    try:
        zygote = Zygote(int(config["scratch_mb"]))
        gc.freeze()
        error = zygote.self_test()
    except OSError as e:
        protocol.write_all(control_out, protocol.encode({"layers": [], "error": str(e)}))
        return
    protocol.write_all(control_out, protocol.encode({"layers": zygote.layers, "error": error}))
    try:
        while error is None:
            request = protocol.read_message(control_in)
            if request is None:
                break
            zygote.serve(request, control_out)
    finally:
        zygote.close()


if __name__ == "__main__":
    main()
