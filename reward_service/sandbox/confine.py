"""What a run process does to itself between fork and the program.

Stdlib only (the zygote imports it). The order matters: a session of its
own, the run's pipes on fds 0-3 and nothing else open, rlimits, the
unprivileged uid (or no capabilities), then the parent-death signal (after
the uid change, which clears it), no_new_privs, landlock, seccomp last.
A step that fails ends the process before the program runs; the zygote
reports it.
"""

from __future__ import annotations

import fcntl
import math
import os
import resource
import signal
from dataclasses import dataclass

from reward_service.sandbox import linux
from reward_service.sandbox.landlock import Ruleset
from reward_service.sandbox.seccomp import SyscallFilter

NOBODY = 65534
OPEN_FILES = 64
THREADS = 256
REPORT_FD = 3
"""The run's write end of its report pipe, where a failed step is named (fds 0-2 are its
standard streams); closed before the program starts."""
CONFINEMENT_FAILED = 125
"""A run process's status when a layer could not be put in place."""
_RULESET_FD = 4


@dataclass(frozen=True)
class RunLimits:
    time_s: float
    memory_mb: int
    file_mb: int


@dataclass
class Confinement:
    """The layers every run puts on itself; None: that layer is off."""

    zygote_pid: int
    run_uid: int | None
    """The unprivileged uid runs switch to; None: they keep the zygote's, without capabilities."""
    landlock_reads: list[str] | None
    """What a run may read under landlock (it writes only its scratch dir); None: no landlock."""
    syscall_filter: SyscallFilter | None

    def ruleset(self, workdir: str) -> Ruleset | None:
        """The run's landlock ruleset, built in the zygote before the fork."""
        if self.landlock_reads is None:
            return None
        return Ruleset(self.landlock_reads, [workdir, "/dev/null"])

    def apply(
        self,
        fds: tuple[int, int, int, int],
        ruleset: Ruleset | None,
        workdir: str,
        limits: RunLimits,
    ) -> None:
        """In the forked run process: raises OSError naming the step that failed."""
        step = "process"
        try:
            os.setsid()
            _own_fds([*fds, *([ruleset.fd] if ruleset is not None else [])])
            step = "rlimits"
            _set_rlimits(limits, nproc=self.run_uid is not None)
            os.chdir(workdir)
            if self.run_uid is not None:
                step = "uid"
                os.setgroups([])
                os.setresgid(self.run_uid, self.run_uid, self.run_uid)
                os.setresuid(self.run_uid, self.run_uid, self.run_uid)
            else:
                step = "capabilities"
                linux.drop_capabilities()
            step = "process"
            linux.prctl(linux.PR_SET_PDEATHSIG, signal.SIGKILL)
            if os.getppid() != self.zygote_pid:
                raise OSError(3, "the zygote is gone")
            linux.prctl(linux.PR_SET_NO_NEW_PRIVS, 1)
            if ruleset is not None:
                step = "landlock"
                ruleset.restrict_self(_RULESET_FD)
                os.close(_RULESET_FD)
            if self.syscall_filter is not None:
                step = "seccomp"
                self.syscall_filter.install(os.getpid())
        except OSError as e:
            raise OSError(e.errno, f"{step}: {e.strerror}") from None


def _own_fds(keep: list[int]) -> None:
    """`keep` become fds 0, 1, ... (the run's pipes, then its ruleset); all others close."""
    high = [fcntl.fcntl(fd, fcntl.F_DUPFD, 64) for fd in keep]
    for target, fd in enumerate(high):
        os.dup2(fd, target, inheritable=False)
    os.closerange(len(high), 1 << 20)


def _set_rlimits(limits: RunLimits, nproc: bool) -> None:
    """The run's limits, each at most the hard limit the zygote inherited."""
    cpu = max(1, math.ceil(limits.time_s))
    memory = limits.memory_mb * 1024 * 1024
    files = limits.file_mb * 1024 * 1024
    for which, soft, hard in (
        (resource.RLIMIT_CORE, 0, 0),
        (resource.RLIMIT_CPU, cpu, cpu + 1),
        (resource.RLIMIT_AS, memory, memory),
        (resource.RLIMIT_FSIZE, files, files),
        (resource.RLIMIT_NOFILE, OPEN_FILES, OPEN_FILES),
        *([(resource.RLIMIT_NPROC, THREADS, THREADS)] if nproc else []),
    ):
        ceiling = resource.getrlimit(which)[1]
        if ceiling != resource.RLIM_INFINITY:
            soft, hard = min(soft, ceiling), min(hard, ceiling)
        resource.setrlimit(which, (soft, hard))
