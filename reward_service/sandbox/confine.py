"""What a run process does to itself between fork and the program.

Stdlib only (the zygote imports it). The order matters: a session of its
own, the run's pipes on fds 0-3 and nothing else open, the unprivileged
uid (or no capabilities), the `exec_once` supervisor thread of a run that
execs its program (after the uid change, which glibc would otherwise signal
it to make too; before the rlimits, as neither its stack nor its first
frame would fit under an address space smaller than the zygote's),
rlimits, then not dumpable and the parent-death signal (after the uid
change, which resets the one and clears the other), no_new_privs,
landlock, seccomp last (with a listener for the supervisor). A step that
fails ends the process before the program runs; the zygote reports it.
A run that execs its program has all this done by the run launcher
instead (`run_launcher`, told by `launch_options`), in the same order.

Also here: which uid a zygote's runs get (`claim_run_uid`, one per zygote)
and, where runs share the service's uid, the process limit a run gets
(`shared_uid_task_limit`).
"""

from __future__ import annotations

import _socket  # not `socket`, which maps `array` and imports `selectors` into every fork
import contextlib
import fcntl
import math
import os
import resource
import signal
from collections.abc import Sequence
from dataclasses import dataclass, field

from reward_service.sandbox import linux
from reward_service.sandbox.exec_once import Supervisor
from reward_service.sandbox.landlock import Ruleset
from reward_service.sandbox.seccomp import SyscallFilter

RUN_UID_BASE = 60600
RUN_UID_SLOTS = 512
"""Runs of a root zygote get uid (and gid) `RUN_UID_BASE + slot`, a slot no other live
zygote holds (`claim_run_uid`): 60600-61111, inside the 16-bit range a user-namespaced
pod maps, beside systemd's dynamic users (61184-65519) and nobody (65534), which other
services use."""
OPEN_FILES = 256
"""A run's `RLIMIT_NOFILE`: R refuses to start below 167 (it keeps 60% of them for the
libraries it may load, and wants 100 of those)."""
EXEC_FD = OPEN_FILES
"""Where a run that execs its program holds the file (close-on-exec): the only descriptor
its filter lets `execveat` take, and past `OPEN_FILES`, so no file opened later gets it."""
THREADS = 256
"""A run's task budget (its threads, the main one included)."""
THREAD_MARGIN = 256
"""Where runs share the service's uid: how far past the uid's tasks plus `THREADS` the
kernel lets a run go (`shared_uid_task_limit`), room for the zygote's thread watch to
see a bomb and kill it before the uid's count reaches a neighbour's limit."""
PR_SET_DUMPABLE = 4
REPORT_FD = 3
"""The run's write end of its report pipe, where a failed step is named (fds 0-2 are its
standard streams); closed before the program starts."""
CONFINEMENT_FAILED = 125
"""A run process's status when a layer could not be put in place."""


@dataclass(frozen=True)
class RunLimits:
    time_s: float
    memory_mb: int
    file_mb: int
    tasks: int | None = None
    """RLIMIT_NPROC (it counts every task of the run's uid); None: left as inherited."""


@dataclass
class Confinement:
    """The layers every run puts on itself; None: that layer is off."""

    zygote_pid: int
    run_uid: int | None
    """The unprivileged uid runs switch to; None: they keep the zygote's, without capabilities."""
    landlock_reads: list[str] | None
    """What a run may read under landlock (it writes only its scratch dir); None: no landlock."""
    syscall_filter: SyscallFilter | None
    exec_once: bool = False
    """A run that execs its program makes that exec only (`exec_once.works`); False: its
    filter lets that exec through with any absolute path."""
    _variants: dict[tuple[str, bool, tuple[str, ...], bool], SyscallFilter] = field(
        default_factory=dict
    )

    def ruleset(
        self, workdir: str, execute: Sequence[str] | None = None, reads: Sequence[str] = ()
    ) -> Ruleset | None:
        """The run's landlock ruleset, built in the zygote before the fork: `execute` the
        only files it may exec (None: what it reads), `reads` its own beyond the zygote's."""
        if self.landlock_reads is None:
            return None
        return Ruleset(self.landlock_reads, [workdir, "/dev/null"], execute, reads)

    def filter_for(self, mode: str, allowed: tuple[str, ...] = ()) -> SyscallFilter | None:
        """The filter of a run of `mode`: `program` (the interpreter's own), `exec` (it execs
        the file at `EXEC_FD`), `build` (a compiler: processes, execs, writes), with the
        denied calls `allowed` allowed; `template` and `template_run` the two parts of
        `program` a template and its runs put on (`TEMPLATE_RELAXED`); each built once."""
        base = self.syscall_filter
        if base is None or mode == "program":
            return base
        key = (mode, base.read_only_files, allowed, self.exec_once)
        if key not in self._variants:
            exec_fd = EXEC_FD if mode == "exec" else None
            part = mode if mode in ("template", "template_run") else "whole"
            built = SyscallFilter(
                base.read_only_files, exec_fd, mode == "build", allowed, self.exec_once, part
            )
            self._variants[key] = built
        return self._variants[key]

    def build_filters(self) -> None:
        """In the zygote, once its layers are known: the filters of templates and their runs
        (`filter_for`), so that forks inherit them. Built after a fork, every template and
        every run built its own: some 120 page faults and 0.3 ms a run."""
        for mode in ("template", "template_run"):
            self.filter_for(mode)

    def launch_options(
        self,
        workdir: str,
        limits: RunLimits,
        syscall_filter: SyscallFilter | None,
        merge_stderr: bool,
    ) -> list[str]:
        """What the launcher (`run_launcher.c`) is told to put on a run that execs its program,
        every layer `apply` puts on a forked one (`syscall_filter` the run's own, or None
        without seccomp); `merge_stderr`: a build's stderr joins its stdout."""
        options = [f"zygote={self.zygote_pid}", f"dir={workdir}"]
        options += [f"uid={self.run_uid}"] if self.run_uid is not None else []
        options += [f"rlimit={which},{soft},{hard}" for which, soft, hard in rlimit_values(limits)]
        options += syscall_filter.launch_options() if syscall_filter is not None else []
        options += ["stderr=stdout"] if merge_stderr else []
        return options

    def apply(
        self,
        fds: tuple[int, int, int, int],
        ruleset: Ruleset | None,
        workdir: str,
        limits: RunLimits,
        syscall_filter: SyscallFilter | None = None,
        exec_fd: int | None = None,
    ) -> None:
        """In the forked run process: raises OSError naming the step that failed. Without
        `syscall_filter` the run gets the zygote's; `exec_fd` moves to `EXEC_FD`."""
        self._apply(
            [*fds], ruleset, workdir, limits, syscall_filter or self.syscall_filter, exec_fd
        )

    def apply_template(
        self, channel: int, ruleset: Ruleset | None, workdir: str, limits: RunLimits
    ) -> None:
        """In a template process (`template`): every layer, with the
        template's part of the filter (`TEMPLATE_RELAXED`: it may fork), its runs adding
        theirs (`apply_test`); `channel` (to the zygote) at fd 0."""
        self._apply([channel], ruleset, workdir, limits, self.filter_for("template"), None)

    def apply_test(self, fds: tuple[int, int, int, int], template_pid: int) -> None:
        """In a run forked by a template: what a run does not inherit from it (a session of
        its own, only its pipes open, its parent's death signal) and, last, its part of the
        filter (the template's part, inherited, holds the rest)."""
        step = "process"
        try:
            os.setsid()
            _own_fds([*fds])
            linux.prctl(linux.PR_SET_PDEATHSIG, signal.SIGKILL)
            if os.getppid() != template_pid:
                raise OSError(3, "the template is gone")
            run_filter = self.filter_for("template_run")
            if run_filter is not None:
                step = "seccomp"
                run_filter.install(os.getpid())
        except OSError as e:
            raise OSError(e.errno, f"{step}: {e.strerror}") from None

    def _apply(
        self,
        keep: list[int],
        ruleset: Ruleset | None,
        workdir: str,
        limits: RunLimits,
        syscall_filter: SyscallFilter | None,
        exec_fd: int | None,
    ) -> None:
        step = "process"
        try:
            os.setsid()
            _own_fds([*keep, *([ruleset.fd] if ruleset is not None else [])], exec_fd)
            if self.run_uid is not None:
                step = "uid"
                os.setgroups([])
                os.setresgid(self.run_uid, self.run_uid, self.run_uid)
                os.setresuid(self.run_uid, self.run_uid, self.run_uid)
            else:
                step = "capabilities"
                linux.drop_capabilities()
            supervisor = None
            if syscall_filter is not None and syscall_filter.exec_once:
                step = "exec_once"
                supervisor = Supervisor()
            step = "rlimits"
            _set_rlimits(limits)
            step = "process"
            os.chdir(workdir)  # as the run: its uid owns the directory, 0700
            # Inherited from the zygote, but a uid change resets it to fs.suid_dumpable (which
            # may be 1): no other process of the run's uid may read its /proc/<pid>/fd or mem.
            linux.prctl(PR_SET_DUMPABLE, 0)
            linux.prctl(linux.PR_SET_PDEATHSIG, signal.SIGKILL)
            if os.getppid() != self.zygote_pid:
                raise OSError(3, "the zygote is gone")
            linux.prctl(linux.PR_SET_NO_NEW_PRIVS, 1)
            if ruleset is not None:
                step = "landlock"
                ruleset.restrict_self(len(keep))
                os.close(len(keep))
            if syscall_filter is not None:
                step = "seccomp"
                if supervisor is not None:
                    supervisor.serve(syscall_filter.install_listening(os.getpid()))
                else:
                    syscall_filter.install(os.getpid())
        except OSError as e:
            raise OSError(e.errno, f"{step}: {e.strerror}") from None


def _own_fds(keep: list[int], exec_fd: int | None = None) -> None:
    """`keep` become fds 0, 1, ... (the run's pipes, then its ruleset), `exec_fd` becomes
    `EXEC_FD` (close-on-exec); all others close."""
    if exec_fd is None and keep == list(range(len(keep))):  # in place: a template's run
        os.closerange(len(keep), 1 << 20)
        return
    moving = keep if exec_fd is None else [*keep, exec_fd]
    # above every target (and below RLIMIT_NOFILE, which a template's run inherits)
    floor = len(keep) if exec_fd is None else EXEC_FD + 1
    high = [fcntl.fcntl(fd, fcntl.F_DUPFD, floor) for fd in moving]
    for target, fd in enumerate(high[: len(keep)]):
        os.dup2(fd, target, inheritable=False)
    if exec_fd is None:
        os.closerange(len(keep), 1 << 20)
        return
    os.dup2(high[-1], EXEC_FD, inheritable=False)
    os.closerange(len(keep), EXEC_FD)
    os.closerange(EXEC_FD + 1, 1 << 20)


def rlimit_values(limits: RunLimits) -> list[tuple[int, int, int]]:
    """The run's rlimits: (resource, soft, hard), before the inherited hard limits cap them."""
    cpu = max(1, math.ceil(limits.time_s))
    memory = limits.memory_mb * 1024 * 1024
    files = limits.file_mb * 1024 * 1024
    tasks = limits.tasks
    return [
        (resource.RLIMIT_CORE, 0, 0),
        (resource.RLIMIT_CPU, cpu, cpu + 1),
        (resource.RLIMIT_AS, memory, memory),
        (resource.RLIMIT_FSIZE, files, files),
        (resource.RLIMIT_NOFILE, OPEN_FILES, OPEN_FILES),
        *([(resource.RLIMIT_NPROC, tasks, tasks)] if tasks is not None else []),
    ]


def _set_rlimits(limits: RunLimits) -> None:
    """The run's limits, each at most the hard limit the zygote inherited."""
    for which, soft, hard in rlimit_values(limits):
        ceiling = resource.getrlimit(which)[1]
        if ceiling != resource.RLIM_INFINITY:
            soft, hard = min(soft, ceiling), min(hard, ceiling)
        resource.setrlimit(which, (soft, hard))


def claim_run_uid() -> tuple[int, _socket.socket] | None:
    """A uid for this zygote's runs that no other live zygote's runs have, and its claim.

    The claim is an abstract unix socket named after the uid, bound in this
    network namespace (so before the zygote enters one of its own): the
    kernel lets one socket hold a name, and frees it when its holder dies,
    so the uid is free again exactly when the zygote is gone. Runs close
    it with every other fd. Zygotes of other network namespaces (other
    pods on the node) see none of these claims: the slots are tried from
    one hashed from the host name and the network namespace, so two pods'
    zygotes share a uid only when their slots collide. None when every
    slot is taken.
    """
    try:
        here = f"{os.uname().nodename} {os.readlink('/proc/self/ns/net')}"
    except OSError:
        here = os.uname().nodename
    first = _fnv1a(here.encode()) % RUN_UID_SLOTS
    for slot in range(RUN_UID_SLOTS):
        uid = RUN_UID_BASE + (first + slot) % RUN_UID_SLOTS
        claim = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
        try:
            claim.bind(f"\0reward-sandbox-run-uid-{uid}")
        except OSError:
            claim.close()
            continue
        return uid, claim
    return None


def _fnv1a(data: bytes) -> int:
    """FNV-1a, 32 bits: a stable spread of names over the slots (not `zlib`'s crc32: one
    extension module and library fewer mapped in every fork)."""
    value = 0x811C9DC5
    for byte in data:
        value = ((value ^ byte) * 0x01000193) & 0xFFFFFFFF
    return value


def shared_uid_task_limit(uid: int, proc: str = "/proc") -> int:
    """RLIMIT_NPROC for a run that shares `uid` with the service and other zygotes' runs.

    The kernel counts every task of the uid against the limit of the task
    that creates one, so each run gets the tasks the uid has now (as far as
    this PID namespace shows them) plus its budget (`THREADS`) plus
    `THREAD_MARGIN`: its own threads cannot take the uid past that, and a
    neighbour that started later has a higher limit by the tasks counted in
    between. What the budget itself holds is the zygote's thread watch (it
    kills a run past `THREADS`); the margin is how far a bomb gets before it.
    """
    tasks = 0
    with contextlib.suppress(OSError), os.scandir(proc) as entries:
        for entry in entries:
            if not entry.name.isdigit():
                continue
            try:
                if entry.stat(follow_symlinks=False).st_uid != uid:
                    continue
                tasks += thread_count(int(entry.name), proc)
            except (OSError, ValueError):
                continue
    return max(tasks, 1) + THREADS + THREAD_MARGIN


def thread_count(pid: int, proc: str = "/proc") -> int:
    """The threads of process `pid` (its `num_threads` in /proc/<pid>/stat, readable to all)."""
    with open(f"{proc}/{pid}/stat", "rb") as f:
        stat = f.read()
    return int(stat[stat.rindex(b")") + 2 :].split()[17])
