"""A template: one confined process that forks the runs of Python programs.

Stdlib only (the zygote imports it). Forked from the zygote for Python runs
under one set of limits (and kept while the next requests run Python under
the same limits, up to `TEMPLATE_RUNS` runs or `TEMPLATE_LIFE_S`), the
template puts on itself every layer a run inherits (uid, rlimits, not
dumpable, no_new_privs, landlock) and its part of the seccomp filter
(`seccomp.TEMPLATE_RELAXED`: it may fork), prepares what every run starts
from (`PythonRunner.prepare`), then forks one run per test, which adds what
it cannot inherit (its own session, its pipes, its parent's death signal,
its part of the filter, last: `Confinement.apply_test`) and becomes the
program the zygote laid out in the template's directory (each run reads and
compiles it, under the whole filter: the template never reads a program). A
run so costs a fork of the template and the program's own work; the zygote,
which forks no run, pays neither the fork nor the copy-on-write of its pages
after one, and an answer pays no template of its own.

The template runs the zygote's code only, and holds nothing of any answer:
what its runs may see of it is what every run starts from. The zygote
resets the directory before every run but the first (`Zygote._reset`): a
run finds nothing of the runs before it, of its answer or another's. Its
runs cannot signal or trace it (seccomp lets a run signal itself alone; the
template is not dumpable), cannot fork (so leave no process behind), and
hold none of its descriptors. The zygote still supervises each run: its
pipes, deadline, caps, kill; the template only forks it and reports its
wait status and CPU time.

Over a SOCK_SEQPACKET pair (the template's end at its fd 0, then `_CHANNEL_FD`):
`ready` (prepared) or `!<why>` (a layer failed), then per run the zygote's
`run` with the run's four pipe ends attached (SCM_RIGHTS), answered by the
run's pid with a pidfd of it attached (opened before the run can be reaped,
so it is that process however soon it ends), then by its pid, wait status
and CPU seconds once it has ended. The zygote's end of file ends the
template.
"""

from __future__ import annotations

import _socket
import contextlib
import os
import select
import signal
import struct
import time
from typing import NoReturn

from reward_service.sandbox.confine import CONFINEMENT_FAILED, Confinement, RunLimits
from reward_service.sandbox.landlock import Ruleset
from reward_service.sandbox.runners import PythonRunner

_PID = struct.Struct("=i")
_ENDED = struct.Struct("=iid")
_RUN = b"run"
_READY = b"ready"
_FDS = _socket.CMSG_SPACE(4 * 4)
_PIDFD = _socket.CMSG_SPACE(4)
_CHANNEL_FD = 4
"""The template's end of its channel once it is ready: above fds 0-3, where the four
descriptors of each run arrive (the lowest free), so its runs find them in place."""


class TemplateLost(Exception):
    """The template did not answer as it should: the zygote runs the rest without it."""


TEMPLATE_RUNS = 100
TEMPLATE_LIFE_S = 2.0
"""A template takes no request once it has forked `TEMPLATE_RUNS` runs or lived
`TEMPLATE_LIFE_S`: a new one takes over, so that its own CPU time (it shares its runs'
RLIMIT_CPU) stays far below the limit and a shared uid's task budget (`Zygote._tasks`) is
counted afresh."""


class Template:
    """The zygote's side: a template forked for Python runs under `limits` in `workdir`."""

    def __init__(
        self,
        confinement: Confinement,
        runner: PythonRunner,
        workdir: str,
        ruleset: Ruleset | None,
        limits: RunLimits,
    ) -> None:
        self.workdir = workdir
        self.limits = limits
        self.runs = 0
        self.dirty = False
        """Whether a run may have changed the directory since it was laid out."""
        self._born = time.monotonic()
        ours, theirs = _socket.socketpair(_socket.AF_UNIX, _socket.SOCK_SEQPACKET)
        self.channel = ours
        self.pid = os.fork()
        if self.pid == 0:
            ours.close()
            _become_template(confinement, runner, theirs.detach(), ruleset, workdir, limits)
        theirs.close()
        if ruleset is not None:
            os.close(ruleset.fd)

    def serves(self, time_s: float, memory_mb: int) -> bool:
        """Whether a request for Python runs under these limits may use it."""
        if (self.limits.time_s, self.limits.memory_mb) != (time_s, memory_mb):
            return False
        return self.runs < TEMPLATE_RUNS and time.monotonic() - self._born < TEMPLATE_LIFE_S

    def wait_ready(self, timeout_s: float) -> str | None:
        """None once the template is ready; why not, if a layer failed. TemplateLost when it
        says nothing in `timeout_s`."""
        message = self._receive(timeout_s)
        if message == _READY:
            return None
        if message.startswith(b"!"):
            return message[1:].decode("utf-8", "replace")
        raise TemplateLost("no word from the template")

    def start_run(self, fds: tuple[int, int, int, int], timeout_s: float) -> tuple[int, int]:
        """Hand the template a run's pipe ends (stdin's read end, stdout's and stderr's and
        the report's write ends); the pid of the run it forked, and the pidfd of it the
        template opened before it could reap the run."""
        try:
            self.channel.sendmsg(
                [_RUN], [(_socket.SOL_SOCKET, _socket.SCM_RIGHTS, struct.pack("=4i", *fds))]
            )
        except OSError as e:
            raise TemplateLost(f"the template is gone: {e}") from None
        self.runs += 1
        self.dirty = True
        self._wait(timeout_s)
        try:
            message, ancillary, _, _ = self.channel.recvmsg(64, _PIDFD)
        except OSError as e:
            raise TemplateLost(f"the template is gone: {e}") from None
        received = [
            fd
            for level, kind, data in ancillary
            if level == _socket.SOL_SOCKET and kind == _socket.SCM_RIGHTS
            for (fd,) in struct.iter_unpack("=i", data[: len(data) - len(data) % 4])
        ]
        if len(message) != _PID.size or _PID.unpack(message)[0] <= 0 or len(received) != 1:
            for fd in received:
                os.close(fd)
            raise TemplateLost("the template forked no run")
        pid: int = _PID.unpack(message)[0]
        return pid, received[0]

    def end_run(self, pid: int, timeout_s: float) -> tuple[int, float]:
        """The wait status and CPU seconds of run `pid`, once it has ended."""
        message = self._receive(timeout_s)
        if len(message) != _ENDED.size:
            raise TemplateLost("no wait status from the template")
        ended, status, cpu_s = _ENDED.unpack(message)
        if ended != pid:
            raise TemplateLost("the wait status of another run")
        return status, cpu_s

    def close(self) -> None:
        """End the template (it exits at end of file; killed besides) and reap it."""
        self.channel.close()
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.pid, signal.SIGKILL)
        with contextlib.suppress(ChildProcessError):
            os.waitpid(self.pid, 0)

    def _wait(self, timeout_s: float) -> None:
        ready, _, _ = select.select([self.channel], [], [], max(0.0, timeout_s))
        if not ready:
            raise TemplateLost("the template did not answer in time")

    def _receive(self, timeout_s: float) -> bytes:
        self._wait(timeout_s)
        try:
            message: bytes = self.channel.recv(64)
        except OSError as e:
            raise TemplateLost(f"the template is gone: {e}") from None
        if not message:
            raise TemplateLost("the template ended")
        return message


def _become_template(
    confinement: Confinement,
    runner: PythonRunner,
    channel: int,
    ruleset: Ruleset | None,
    workdir: str,
    limits: RunLimits,
) -> NoReturn:
    """In the forked template: confine, prepare, then fork a run per `run`; never returns."""
    try:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        try:
            confinement.apply_template(channel, ruleset, workdir, limits)
        except OSError as e:
            os.write(0, b"!" + str(e.strerror).encode())
            os._exit(CONFINEMENT_FAILED)
        prepared = runner.prepare(workdir)
        os.dup2(0, _CHANNEL_FD, inheritable=False)
        os.close(0)
        sock = _socket.socket(fileno=_CHANNEL_FD)
        sock.sendmsg([_READY])  # not `send`: `sendto` is a call runs are refused
        me = os.getpid()
        while True:
            message, ancillary, _, _ = sock.recvmsg(16, _FDS)
            if message != _RUN:
                os._exit(0)  # end of file: the answer is done
            fds = _received_fds(ancillary)
            pid = os.fork()
            if pid == 0:
                try:
                    confinement.apply_test(fds, me)
                except OSError as e:
                    os.write(3, str(e.strerror).encode())
                    os._exit(CONFINEMENT_FAILED)
                os.close(3)  # the program gets no channel but its standard streams
                runner.start(prepared)
            for fd in fds:
                os.close(fd)
            pidfd = os.pidfd_open(pid)  # before the run may be reaped: it is that process
            sock.sendmsg(
                [_PID.pack(pid)],
                [(_socket.SOL_SOCKET, _socket.SCM_RIGHTS, struct.pack("=i", pidfd))],
            )
            os.close(pidfd)
            _, status, usage = os.wait4(pid, 0)
            sock.sendmsg([_ENDED.pack(pid, status, usage.ru_utime + usage.ru_stime)])
    finally:
        os._exit(CONFINEMENT_FAILED)


def _received_fds(ancillary: list[tuple[int, int, bytes]]) -> tuple[int, int, int, int]:
    """The four descriptors of a `run` message; the template ends on anything else."""
    for level, kind, data in ancillary:
        if level == _socket.SOL_SOCKET and kind == _socket.SCM_RIGHTS and len(data) == 16:
            stdin_r, stdout_w, stderr_w, report_w = struct.unpack("=4i", data)
            return stdin_r, stdout_w, stderr_w, report_w
    os._exit(CONFINEMENT_FAILED)
