"""The zygote: a pre-warmed interpreter that forks one confined process per run.

Started by `ZygoteSandbox` as `python -I -S -c LAUNCH zygote.py CONFIG`
(`zygote_client.LAUNCH`: this module, imported) with an empty environment;
stdlib only, it imports its sibling modules and nothing else of the package.
It enters what namespaces it can, self-tests the layers, answers
`{"layers": [...]}`, then serves one request per answer over its
stdin/stdout (`protocol`), and for each of its stdins: fork, confine
(`confine`), become the program (`runners`), supervise its pipes against
the wall clock and the output cap (`supervise`), kill its group and
whatever else it left, remove its scratch directory, answer the outcome.
It exits at end of file on stdin and dies with its parent
(PR_SET_PDEATHSIG); its runs die with it.
"""

from __future__ import annotations

import bisect  # noqa: F401  # pre-warmed for the programs
import collections  # noqa: F401
import contextlib
import dataclasses
import decimal  # noqa: F401
import fractions  # noqa: F401
import functools  # noqa: F401
import gc
import heapq  # noqa: F401
import itertools  # noqa: F401
import json
import math  # noqa: F401
import mmap
import os
import re  # noqa: F401
import select
import signal
import string  # noqa: F401
import sys
import time
import typing

from reward_service.sandbox import (
    exec_once,
    landlock,
    linux,
    namespaces,
    protocol,
    run_files,
    run_launcher,
)
from reward_service.sandbox.confine import (
    CONFINEMENT_FAILED,
    PR_SET_DUMPABLE,
    REPORT_FD,
    THREADS,
    Confinement,
    RunLimits,
    claim_run_uid,
    shared_uid_task_limit,
)
from reward_service.sandbox.landlock import Ruleset
from reward_service.sandbox.runners import (
    RUNNERS,
    ExecRunner,
    PythonRunner,
    Runner,
    share_environment,
)
from reward_service.sandbox.seccomp import SyscallFilter
from reward_service.sandbox.supervise import (
    BuildWatch,
    ScratchWatch,
    Seen,
    ThreadWatch,
    make_scratch_root,
    remove_contents,
    remove_tree,
    scratch_parent,
    supervise,
    sweep_scratch_roots,
)
from reward_service.sandbox.template import Template, TemplateLost
from reward_service.sandbox.toolchains import (
    BUILD_HOME,
    TOOLCHAINS,
    Command,
    Cpp,
    Found,
    Toolchain,
    elf_interpreter,
    found_from_json,
)

STDERR_TAIL = 1024
RUN_OVERHEAD_S = 0.05
"""Set aside per run, beyond its time limit, when deciding whether it fits in the budget."""
_PROBE_IMPORTS = ("colorsys", "datetime", "cmath", "array", "textwrap")
"""Stdlib modules a probe run imports from disk (those the zygote has not imported)."""
BUILD_OUTPUT = 64 * 1024
"""A build's messages read (stdout and stderr joined); past it the build ends `output_limit`."""
BUILD_MESSAGE = 4096
"""Of a build's messages, the first bytes answered."""
TEMPLATE_IDLE_S = 0.1
"""How long a template waits for the next request (an answer's next tests, the next answer)
before it is closed: requests that follow each other share it, and no template is left
when requests stop."""
_TEMPLATE_WAIT_S = 2.0
"""How long a template may take to be ready, to fork a run or to report one ended: past it,
it is lost (a run so retried stays well inside the worker's grace, `_REPLY_GRACE_S`)."""
BUILDS_KEPT = 2
"""Programs kept built (the answer in progress, the one before): an answer's tests sent in
several requests build once."""
BUILD_PROCESSES = 16
"""The most processes a build may have at once, the compiler's own tools included (a Go
build of one package runs four at most, g++ five); past it the build is killed
(`runtime_error`), as it is past its memory (`build_memory_mb`) summed over them all
(`memory_limit`): `supervise.BuildWatch`."""


def _ended_build(kind: str, seen: Seen, step: Step) -> bytes:
    """The line a build's message starts with when the sandbox, not the compiler, ended it:
    without it such a build is a `compile_error` with an empty message."""
    if seen.build_exceeded == "processes":
        return f"sandbox: the build ran more than {BUILD_PROCESSES} processes\n".encode()
    if seen.build_exceeded == "memory":
        return f"sandbox: the build held more than {step.memory_mb} MiB in all\n".encode()
    if kind == "time_limit":
        return f"sandbox: the build ran past its {step.time_s:g} s\n".encode()
    if kind == "output_limit":
        return b"sandbox: the build wrote past its output or scratch cap\n"
    return b""


@dataclasses.dataclass(frozen=True)
class Step:
    """A kind of run: the runner it becomes and what it may use."""

    runner: Runner
    time_s: float
    memory_mb: int
    output_bytes: int
    mode: str = "program"
    """Its seccomp filter (`Confinement.filter_for`)."""
    syscalls: tuple[str, ...] = ()
    """Calls denied to other runs that this one may make (its runtime's)."""
    executable: str | None = None
    """The file opened for it at `EXEC_FD`."""
    execute: tuple[str, ...] | None = None
    """The only files it may exec under landlock; None: whatever it reads."""
    reads: tuple[str, ...] = ()
    """What it reads beyond the zygote's read paths (its build)."""


@dataclasses.dataclass(frozen=True)
class Build:
    """A program built once for its runs: where, under which name, how the build ended."""

    directory: str
    source_name: str
    reply: protocol.Message
    message: memoryview
    """The compiler's messages' head, in a buffer no run is forked with (they quote the
    source)."""
    loader: str | None = None
    """The ELF loader the built binary names, read before it became execute-only (a zygote
    without CAP_DAC_OVERRIDE cannot read it after)."""


class Zygote:
    def __init__(
        self,
        scratch_mb: int,
        toolchains: dict[str, Found] | None = None,
        pch: dict[str, str] | None = None,
        launcher_path: str | None = None,
    ) -> None:
        share_environment()
        self.scratch_mb = scratch_mb
        self.toolchains = toolchains or {}
        tools = [sys.executable, *(t for f in self.toolchains.values() for t in f.tools.values())]
        self.loaders = {elf_interpreter(os.path.realpath(tool)) for tool in tools} - {None}
        """The system's ELF loaders, those the interpreter and the toolchains name: the only
        ones a built binary may name (its `.interp` is the program's to write)."""
        self.pch = pch
        """{"dir", "dialect"}: a precompiled `bits/stdc++.h` for C++ builds of that dialect."""
        self.launcher = launcher_path
        """The run launcher (`run_launcher`) that starts runs which exec their program; None:
        they are forked (none built, or its check failed: `launcher_problem` says why)."""
        self.launcher_problem: str | None = None if launcher_path else "none built"
        self.builds: dict[str, Build] = {}
        self.runs = 0
        self.running: int | None = None
        """The run process between its fork and its reaping."""
        self.template: Template | None = None
        """The last request's template, kept for the next (`_template_for`)."""
        pid = os.getpid()
        can_switch_uid = os.geteuid() == 0 and linux.has_capabilities(
            linux.CAP_SETUID, linux.CAP_SETGID, linux.CAP_CHOWN
        )
        self.namespaces: list[str] = []
        if os.geteuid() != 0 and namespaces.enter_user_namespace():
            self.namespaces.append("userns")
        # Not dumpable from here on (a user namespace's maps are written first: a process
        # that is not dumpable may not write them): no other process of our uid opens our
        # /proc/<pid>/fd (the worker's pipes) or reads our memory; every run starts so.
        linux.prctl(PR_SET_DUMPABLE, 0)
        switch_uid = can_switch_uid and "userns" not in self.namespaces
        # Claimed before a network namespace of our own: claims are names in the host's.
        self.uid_claim = claim_run_uid() if switch_uid else None
        read_paths = _read_paths([*(r for f in self.toolchains.values() for r in f.reads)])
        if pch is not None:
            read_paths.append(pch["dir"])
        if launcher_path is not None:  # its probe execs it as the program (`check_launcher`)
            read_paths.append(os.path.dirname(launcher_path))
        self.scratch_root = ""
        self.root_lock: int | None = None
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
            if "mountns" in self.namespaces:
                namespaces.mount_proc()  # for /dev/stdin and its like: each run sees only itself
        if not self.pid_namespace:
            linux.prctl(linux.PR_SET_CHILD_SUBREAPER, 1)
        if not self.scratch_root:
            self.scratch_root, self.root_lock = make_scratch_root(scratch_parent(), pid)
            os.chmod(self.scratch_root, 0o711)  # the runs' uid enters its own dir, lists none
        self.owns_scratch_root = "mountns" not in self.namespaces
        self.confinement = Confinement(
            zygote_pid=os.getpid(),
            run_uid=self.uid_claim[0] if self.uid_claim is not None else None,
            landlock_reads=read_paths if landlock.abi() >= 1 else None,
            syscall_filter=_try(lambda: SyscallFilter(read_only_files=landlock.abi() < 1)),
            exec_once=exec_once.works(),
        )

    @property
    def layers(self) -> list[str]:
        c = self.confinement
        layers = ["process", "rlimits"]
        layers += ["uid"] if c.run_uid is not None else []
        layers += ["seccomp"] if c.syscall_filter is not None else []
        layers += ["exec_once"] if c.syscall_filter is not None and c.exec_once else []
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
        source = f"import os\nfor p in {paths!r}:\n    os.listdir(p)\n{imports}print('ok')\n"
        probe = Step(RUNNERS["python"], 10, 512, 1024)
        for _ in range(4):
            reply, seen = self.run(probe, memoryview(source.encode()), memoryview(b""))
            stdout = bytes(seen.stdout.head(1024))
            stderr = bytes(seen.stderr.tail(STDERR_TAIL)).decode("utf-8", "replace")
            seen.close()
            if reply["kind"] == "ok" and stdout == b"ok\n":
                self.check_launcher()
                return None
            confinement = reply["confinement"]
            failed = confinement.split(":", 1)[0] if confinement else None
            if failed is None and self.confinement.run_uid is not None:
                failed = "uid"
            c = self.confinement
            if failed == "uid" and c.run_uid is not None:
                c.run_uid = None
                if self.uid_claim is not None:
                    self.uid_claim[1].close()  # the uid is free for another zygote
            elif failed == "landlock" and c.landlock_reads is not None:
                c.landlock_reads = None
                if c.syscall_filter is not None:  # no landlock: the filter refuses file writes
                    c.syscall_filter = SyscallFilter(read_only_files=True)
            elif failed == "seccomp" and c.syscall_filter is not None:
                c.syscall_filter = None
            else:
                return f"self-test failed: {confinement or stderr}"
        return "self-test failed"

    def check_launcher(self) -> None:
        """Run the launcher as a program through every layer (`run_launcher.PROBE_OUTPUT`);
        runs are forked instead where it fails, `launcher_problem` saying why."""
        if self.launcher is None:
            return
        command = Command(self.launcher, [run_launcher.NAME, "probe"], {})
        probe = Step(
            ExecRunner("launcher", command),
            10,
            64,
            1024,
            mode="exec",
            executable=self.launcher,
            execute=(self.launcher,),
        )
        reply, seen = self.run(probe, memoryview(b""), memoryview(b""))
        stdout = bytes(seen.stdout.head(1024))
        stderr = bytes(seen.stderr.tail(STDERR_TAIL)).decode("utf-8", "replace")
        seen.close()
        if reply["kind"] != "ok" or stdout != run_launcher.PROBE_OUTPUT:
            why = reply["confinement"] or stderr.strip() or f"{reply['kind']}, {stdout!r}"
            self.launcher, self.launcher_problem = None, f"its check failed: {why}"

    def serve(self, request: protocol.Message, payload: mmap.mmap, control_out: int) -> None:
        """Run the program once per stdin of `request`, answering each outcome as it ends.

        The payload holds the source and then the stdins (`source_bytes`,
        `stdin_bytes`). Stops after the first failure when asked, and before a
        run that could overrun the request's budget; `{"done": true}` ends the answer.
        """
        started = time.monotonic()
        with memoryview(payload) as view:
            offset = int(request["source_bytes"])
            source = view[:offset]
            files, fetch, offset = run_files.unpack(view, offset, request)
            step = self._step(request, source, files, started, control_out)
            sizes = request["stdin_bytes"] if step is not None else []
            fetched: list[tuple[int, memoryview]] = []

            def take(workdir: str, outcome: protocol.Message) -> None:
                fetched[:] = run_files.read_files(workdir, fetch, int(request["fetch_bytes"]))

            template: Template | None = None
            templated = step is not None and self._templated(step)
            if not templated:
                self.drop_template()
            try:
                for size in sizes:
                    assert step is not None
                    left = float(request["budget_s"]) - (time.monotonic() - started)
                    if left < float(request["time_s"]) + RUN_OVERHEAD_S:
                        break
                    stdin, offset = view[offset : offset + size], offset + size
                    fetched.clear()
                    if templated and template is None:
                        templated, template = False, self._template_for(step, source, files)
                    keep = take if fetch else None
                    outcome, seen, template = self._run_via(
                        template, step, source, stdin, keep, files
                    )
                    stdout = seen.stdout.head(int(request["output_bytes"]))
                    stderr = seen.stderr.tail(STDERR_TAIL)
                    outcome.update(stdout_bytes=len(stdout), stderr_bytes=len(stderr))
                    outcome["files"] = [[index, len(data)] for index, data in fetched]
                    datas = [data for _, data in fetched]
                    protocol.write_frame(control_out, outcome, stdout, stderr, *datas)
                    stdout.release()
                    stderr.release()
                    stdin.release()
                    seen.close()
                    if request["stop_at_first_failure"] and outcome["kind"] != "ok":
                        break
            finally:
                if template is not None:  # for the next request, if it runs Python
                    self.template = template
            source.release()
            for _, data in files:
                data.release()
        protocol.write_frame(control_out, {"done": True})

    def _step(
        self,
        request: protocol.Message,
        source: memoryview,
        files: run_files.Files,
        started: float,
        control_out: int,
    ) -> Step | None:
        """How `request`'s program runs; for a compiled language its build first (once per
        program, answered as a `build` frame), None when it did not build."""
        language = request["language"]
        time_s, memory_mb = float(request["time_s"]), int(request["memory_mb"])
        output_bytes = int(request["output_bytes"])
        if language not in TOOLCHAINS:
            return Step(RUNNERS[language], time_s, memory_mb, output_bytes)
        toolchain = TOOLCHAINS[language]
        if not toolchain.builds:
            return self._script_step(toolchain, request)
        build = self._build(toolchain, request, source, files, started)
        reply = {"build": build.reply, "stdout_bytes": 0, "stderr_bytes": len(build.message)}
        protocol.write_frame(control_out, reply, build.message)
        if build.reply["kind"] != "ok":
            return None
        found = self.toolchains[language]
        command = toolchain.launch(found, build.directory, build.source_name, memory_mb)
        loader = elf_interpreter(command.executable) or build.loader
        if loader not in self.loaders:  # a program that names its own (a shell) gets none
            loader = None
        return Step(
            ExecRunner(language, command, memory_errors=toolchain.memory_errors),
            time_s,
            memory_mb + toolchain.runtime_mb,
            output_bytes,
            mode="exec",
            syscalls=toolchain.syscalls,
            executable=command.executable,
            execute=(command.executable, *([loader] if loader else [])),
            reads=(build.directory,),
        )

    def _script_step(self, toolchain: Toolchain, request: protocol.Message) -> Step | None:
        """How a language without a build runs (JavaScript): its runtime on the source, laid
        out in each run's directory; None (after a failed build's frame, as for a build)
        when its toolchain is not here."""
        found = self.toolchains.get(toolchain.language)
        if found is None:
            return None
        memory_mb = int(request["memory_mb"])
        command = toolchain.launch(found, ".", toolchain.source_file, memory_mb)
        loader = elf_interpreter(command.executable)
        return Step(
            ExecRunner(toolchain.language, command, toolchain.source_file, toolchain.memory_errors),
            float(request["time_s"]),
            memory_mb + toolchain.runtime_mb,
            int(request["output_bytes"]),
            mode="exec",
            syscalls=toolchain.syscalls,
            executable=command.executable,
            execute=(command.executable, *([loader] if loader and loader in self.loaders else [])),
        )

    def _build(
        self,
        toolchain: Toolchain,
        request: protocol.Message,
        source: memoryview,
        files: run_files.Files,
        started: float,
    ) -> Build:
        """The program built (or kept from an earlier request), in a confined run of the
        compiler with the request's build limits."""
        self.drop_template()  # a build is a run forked here
        found = self.toolchains.get(toolchain.language)
        try:
            dialect = toolchain.dialect(request.get("dialect"))
        except ValueError as e:
            return _failed_build(str(e))
        if found is None:
            return _failed_build(f"no {toolchain.language} toolchain in this sandbox")
        key = run_files.digest(f"{toolchain.language} {dialect}", source, files)
        kept = self.builds.pop(key, None)
        if kept is not None:
            self.builds[key] = kept
            return kept
        while len(self.builds) >= BUILDS_KEPT:
            remove_tree(self.builds.pop(next(iter(self.builds))).directory)
        source_name = toolchain.source_name(source)
        pch = self.pch["dir"] if self.pch and self.pch["dialect"] == dialect else None
        commands = [toolchain.build(found, dialect, source_name, pch)]
        forced = toolchain.forced_header(source) if isinstance(toolchain, Cpp) else None
        if pch is not None and forced is not None and isinstance(toolchain, Cpp):
            # a precompiled header first, as `-include`; a program the compiler refuses
            # so is built again as it always was, and that build's verdict is the answer's
            commands.insert(0, toolchain.build(found, dialect, source_name, pch, forced=forced))
        self.runs += 1
        directory = os.path.join(self.scratch_root, f"build-{self.runs}")
        os.mkdir(directory, 0o711)

        loaders: list[str | None] = []

        def keep(workdir: str, outcome: protocol.Message) -> None:
            if outcome["kind"] == "ok":
                loaders.append(_keep_outputs(workdir, directory, toolchain.outputs))

        for command in commands:
            left = float(request["budget_s"]) - (time.monotonic() - started) - RUN_OVERHEAD_S
            step = Step(
                ExecRunner(f"{toolchain.language}-build", command, source_name, build=True),
                max(0.1, min(float(request["build_time_s"]), left)),
                int(request["build_memory_mb"]),
                BUILD_OUTPUT,
                mode="build",
                syscalls=toolchain.syscalls,
                executable=command.executable,
            )
            reply, seen = self.run(step, source, memoryview(b""), keep, files)
            refused = reply["kind"] == "runtime_error" and reply["exit_code"] not in (None, 0)
            if command is commands[-1] or not refused or reply["confinement"] is not None:
                break
            seen.close()
        note = _ended_build(reply["kind"], seen, step)
        message = _private_copy(note, seen.stdout.head(BUILD_MESSAGE - len(note)))  # it quotes
        seen.close()
        failed = reply["kind"] != "ok" and reply["confinement"] is None
        if failed and any(message[: len(u)] == u for u in toolchain.unusable):  # the toolchain's
            line = bytes(message[:200]).split(b"\n", 1)[0].decode("utf-8", "replace")
            reply = {**reply, "confinement": f"the toolchain cannot run here: {line}"}
        build = Build(directory, source_name, reply, message, loaders[0] if loaders else None)
        if reply["kind"] == "ok":
            self.builds[key] = build
        else:
            remove_tree(directory)
        return build

    def run(
        self,
        step: Step,
        source: memoryview,
        stdin: memoryview,
        keep: typing.Callable[[str, protocol.Message], None] | None = None,
        files: run_files.Files = (),
    ) -> tuple[protocol.Message, Seen]:
        """One run of `step` on `stdin`, starting with `files` beside the runner's: its
        outcome and what was read of it; `keep` takes what it wants of the run's directory
        once the run and all it left are dead."""
        limits = RunLimits(step.time_s, step.memory_mb, self.scratch_mb, self._tasks())
        self.runs += 1
        workdir = os.path.join(self.scratch_root, f"run-{self.runs}")
        os.mkdir(workdir, 0o700)
        exec_fd = None
        try:
            if step.executable is not None:
                exec_fd = os.open(step.executable, os.O_PATH | os.O_CLOEXEC)
            self._lay_out(step, source, files, workdir)
            ruleset = self.confinement.ruleset(workdir, step.execute, step.reads)
            # built here, once per kind of run (`filter_for` keeps it): a child builds its own
            syscall_filter = self.confinement.filter_for(step.mode, step.syscalls)
            (stdin_r, stdout_w, stderr_w, report_w), ours = self._pipes()
            child_fds = (stdin_r, stdout_w, stderr_w, report_w)
            started = time.monotonic()
            pid = self._start_run(
                step, child_fds, ruleset, workdir, limits, syscall_filter, exec_fd
            )
            for fd in (stdin_r, stdout_w, stderr_w, report_w, *([ruleset.fd] if ruleset else [])):
                os.close(fd)
            kill, end = (lambda: self._kill(pid)), (lambda: self._end(pid))
            return self._watch(pid, stdin, ours, started, step, limits, workdir, kill, end, keep)
        finally:
            if exec_fd is not None:
                os.close(exec_fd)
            remove_tree(workdir)

    def _watch(
        self,
        pid: int,
        stdin: memoryview,
        ours: tuple[int, int, int, int],
        started: float,
        step: Step,
        limits: RunLimits,
        workdir: str,
        kill: typing.Callable[[], None],
        end: typing.Callable[[], tuple[int, float]],
        keep: typing.Callable[[str, protocol.Message], None] | None,
        pidfd: int | None = None,
    ) -> tuple[protocol.Message, Seen]:
        """Supervise run `pid` (started at `started`, in `workdir`; our ends of its pipes
        `ours`) until it ends or breaks a limit, `kill` ending it and `end` telling its wait
        status and CPU seconds once it is gone; its outcome, and what was read of it. `keep`
        takes what it wants of the run's directory then."""
        self.running = pid
        watch = None if "mountns" in self.namespaces else ScratchWatch(workdir, self.scratch_mb)
        seen = supervise(
            pid,
            stdin,
            ours,
            started + limits.time_s,
            step.output_bytes,
            watch,
            ThreadWatch(pid, THREADS) if self.shares_uid else None,
            kill,
            pidfd,
            BuildWatch(os.getpid(), step.memory_mb << 20, BUILD_PROCESSES)
            if step.mode == "build"
            else None,
        )
        try:
            status, cpu_s = end()
        except BaseException:
            seen.close()
            raise
        finally:
            self.running = None
        if watch is not None:
            seen.scratch_exceeded = seen.scratch_exceeded or watch.exceeded(final=True)
        outcome = _outcome(seen, status, cpu_s, limits, seen.ended - started, step.runner)
        if keep is not None:
            if self.confinement.run_uid is not None:  # the run's directory back
                os.chown(workdir, os.geteuid(), os.getegid())
            keep(workdir, outcome)
        return outcome, seen

    def _lay_out(
        self, step: Step, source: memoryview, files: run_files.Files, workdir: str
    ) -> None:
        """The files a run starts with, in `workdir`, handed to the runs' uid; for a build,
        its home made empty after them (`toolchains.BUILD_HOME`)."""
        step.runner.write_files(source, workdir)
        if step.mode == "build":
            files = [(path, data) for path, data in files if not _in_build_home(path)]
        run_files.write_files(workdir, files)
        if step.mode == "build":
            os.mkdir(os.path.join(workdir, BUILD_HOME), 0o700)
        if self.confinement.run_uid is not None:
            # the files before their directory; the directory keeps the zygote's group
            # (0750), so that root holding CAP_CHOWN but not CAP_DAC_OVERRIDE still
            # reaches inside to count and remove what the run wrote
            run_files.hand_over(workdir, self.confinement.run_uid)
            os.chmod(workdir, 0o750)
            os.chown(workdir, self.confinement.run_uid, os.getegid())

    def _pipes(self) -> tuple[tuple[int, int, int, int], tuple[int, int, int, int]]:
        """A run's pipes: its ends (stdin's read end, stdout's, stderr's and the report's
        write ends), then ours."""
        stdin_r, stdin_w = os.pipe()
        stdout_r, stdout_w = os.pipe()
        stderr_r, stderr_w = os.pipe()
        report_r, report_w = os.pipe()
        if self.confinement.run_uid is not None:  # its own, to reopen as /dev/stdin and such
            for fd in (stdin_r, stdout_w, stderr_w):
                os.fchown(fd, self.confinement.run_uid, self.confinement.run_uid)
        theirs = (stdin_r, stdout_w, stderr_w, report_w)
        return theirs, (stdin_w, stdout_r, stderr_r, report_r)

    def _templated(self, step: Step) -> bool:
        """Whether the runs of `step` come from a template (`template`): Python
        programs, where seccomp keeps each run from forking (no run of a template may leave
        a process behind)."""
        return (
            isinstance(step.runner, PythonRunner)
            and step.mode == "program"
            and self.confinement.syscall_filter is not None
        )

    def _template_for(
        self, step: Step, source: memoryview, files: run_files.Files
    ) -> Template | None:
        """The template kept from the last request if it serves these limits (an answer's
        tests come in several requests, and the next answer's after them), its directory
        to be laid out for this program before its run; else a new one with the directory
        laid out (None where it could not start)."""
        kept, self.template = self.template, None
        if kept is not None and kept.serves(step.time_s, step.memory_mb):
            kept.dirty = True  # it may hold another program
            return kept
        if kept is not None:
            self._close_template(kept)
        return self._open_template(step, source, files)

    def drop_template(self) -> None:
        """Close the template kept from the last request: no run is forked here beside one
        (the strays a run of ours leaves are found among our children)."""
        kept, self.template = self.template, None
        if kept is not None:
            self._close_template(kept)

    def _open_template(
        self, step: Step, source: memoryview, files: run_files.Files
    ) -> Template | None:
        """A template for Python runs of `step`'s limits, its directory laid out for this
        program, ready; None where it could not be confined or prepared in time (the runs
        are then forked here, and say why)."""
        assert isinstance(step.runner, PythonRunner)
        self.runs += 1
        workdir = os.path.join(self.scratch_root, f"run-{self.runs}")
        os.mkdir(workdir, 0o700)
        limits = RunLimits(step.time_s, step.memory_mb, self.scratch_mb, self._tasks())
        try:
            self._lay_out(step, source, files, workdir)
            ruleset = self.confinement.ruleset(workdir, step.execute, step.reads)
            template = Template(self.confinement, step.runner, workdir, ruleset, limits)
        except OSError:
            remove_tree(workdir)
            return None
        try:
            failed = template.wait_ready(_TEMPLATE_WAIT_S)
        except TemplateLost:
            failed = "lost"
        if failed is not None:
            self._close_template(template)
            return None
        return template

    def _close_template(self, template: Template) -> None:
        template.close()
        remove_tree(template.workdir)

    def _run_via(
        self,
        template: Template | None,
        step: Step,
        source: memoryview,
        stdin: memoryview,
        keep: typing.Callable[[str, protocol.Message], None] | None,
        files: run_files.Files,
    ) -> tuple[protocol.Message, Seen, Template | None]:
        """One run, by `template` if there is one (the template still there after it, or
        None): a template that fails is closed, and the run forked here instead."""
        if template is None:
            return (*self.run(step, source, stdin, keep, files), None)
        try:
            if template.dirty:
                self._reset(template, step, source, files)
            outcome, seen = self._run_templated(template, step, stdin, keep)
        except (TemplateLost, OSError):
            self._close_template(template)
            return (*self.run(step, source, stdin, keep, files), None)
        return outcome, seen, template

    def _run_templated(
        self,
        template: Template,
        step: Step,
        stdin: memoryview,
        keep: typing.Callable[[str, protocol.Message], None] | None,
    ) -> tuple[protocol.Message, Seen]:
        """`run`, forked by the template in its directory; TemplateLost when it fails."""
        theirs, ours = self._pipes()
        started = time.monotonic()
        try:
            pid, pidfd = template.start_run(theirs, _TEMPLATE_WAIT_S)
        except TemplateLost:
            for fd in ours:
                os.close(fd)
            raise
        finally:
            for fd in theirs:
                os.close(fd)
        limits = RunLimits(step.time_s, step.memory_mb, self.scratch_mb)
        kill, end = (lambda: _kill_by(pidfd)), (lambda: template.end_run(pid, _TEMPLATE_WAIT_S))
        workdir = template.workdir
        return self._watch(pid, stdin, ours, started, step, limits, workdir, kill, end, keep, pidfd)

    def _reset(
        self, template: Template, step: Step, source: memoryview, files: run_files.Files
    ) -> None:
        """The template's directory as a first run finds it, for this program: what runs
        left removed (the directory itself kept: the template's landlock rule names it),
        the files laid out."""
        if self.confinement.run_uid is not None:
            os.chown(template.workdir, os.geteuid(), os.getegid())
        if not remove_contents(template.workdir):
            raise TemplateLost("what a run left could not be removed")
        self._lay_out(step, source, files, template.workdir)
        template.dirty = False

    @property
    def shares_uid(self) -> bool:
        """Runs keep the service's uid, in no user namespace of the zygote's own: every task
        of the uid counts against one RLIMIT_NPROC (`shared_uid_task_limit`)."""
        return self.confinement.run_uid is None and "userns" not in self.namespaces

    def _tasks(self) -> int:
        """The run's RLIMIT_NPROC: a uid of this zygote's own, or a user namespace of its own
        (the count is per namespace; this zygote and its PID namespace's waiter are in it),
        hold its `THREADS` alone; a shared uid takes the uid's tasks now into account."""
        if self.confinement.run_uid is not None:
            return THREADS
        if "userns" in self.namespaces:
            return THREADS + 2
        return shared_uid_task_limit(os.getuid())

    def _start_run(
        self,
        step: Step,
        fds: tuple[int, int, int, int],
        ruleset: Ruleset | None,
        workdir: str,
        limits: RunLimits,
        syscall_filter: SyscallFilter | None,
        exec_fd: int | None,
    ) -> int:
        """The run's process, its pid: spawned by the run launcher for a run that execs its
        program (where this zygote has one), else forked, the child confining itself and
        becoming the program."""
        runner = step.runner
        if self.launcher is not None and exec_fd is not None and isinstance(runner, ExecRunner):
            options = self.confinement.launch_options(workdir, limits, syscall_filter, runner.build)
            ruleset_fd = ruleset.fd if ruleset is not None else None
            env = runner.environment(workdir)
            try:
                return run_launcher.spawn(
                    self.launcher, fds, exec_fd, ruleset_fd, options, runner.command.argv, env
                )
            except OSError as e:  # gone since the check: runs are forked from now on
                self.launcher, self.launcher_problem = None, f"it could not be started: {e}"
        pid = os.fork()
        if pid != 0:
            return pid
        try:
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            try:
                self.confinement.apply(fds, ruleset, workdir, limits, syscall_filter, exec_fd)
            except OSError as e:
                os.write(REPORT_FD, str(e.strerror).encode())
                os._exit(CONFINEMENT_FAILED)
            os.close(REPORT_FD)  # the program gets no channel but its standard streams
            runner.run(workdir)
        finally:
            os._exit(CONFINEMENT_FAILED)

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
        self.drop_template()
        if self.owns_scratch_root:
            remove_tree(self.scratch_root)  # what is left, the next sweep removes


def _kill_by(pidfd: int) -> None:
    """SIGKILL a template's run by its pidfd: that process, even once its template has
    reaped it and its pid is free (it cannot fork: nothing else of it is left)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        signal.pidfd_send_signal(pidfd, signal.SIGKILL)


def _outcome(
    seen: Seen, status: int, cpu_s: float, limits: RunLimits, elapsed_s: float, runner: Runner
) -> protocol.Message:
    """The reply's fields; stdout and stderr follow it as payload, never in it."""
    exit_code = os.waitstatus_to_exitcode(status)
    confinement = None
    if seen.report.size:  # written only by the run's confinement, closed before the program
        kind = "runtime_error"
        report = bytes(seen.report.head(seen.report.size)).decode("utf-8", "replace")
        confinement = run_launcher.readable_report(report)
    elif seen.output_exceeded or seen.scratch_exceeded:
        kind = "output_limit"
    elif seen.threads_exceeded or seen.build_exceeded == "processes":
        kind = "runtime_error"
    elif seen.build_exceeded == "memory":
        kind = "memory_limit"
    elif seen.timed_out or cpu_s >= limits.time_s or exit_code == -signal.SIGXCPU:
        kind = "time_limit"
    elif runner.out_of_memory(exit_code, seen.stderr):
        kind = "memory_limit"
    elif exit_code == 0:
        kind = "ok"
    else:
        kind = "runtime_error"
    return {
        "kind": kind,
        "exit_code": exit_code if exit_code >= 0 else None,
        "signal": -exit_code if exit_code < 0 else None,
        "elapsed_s": round(elapsed_s, 6),
        "confinement": confinement,
    }


def _read_paths(toolchains: list[str]) -> list[str]:
    """What a run may read: the system's libraries, a few /etc files, devices, Python's own,
    the toolchains' directories and files outside the system's (LDC's `/etc/ldc2.conf`)."""
    python = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix}
    python.update(p for p in sys.path if p and os.path.isdir(p))
    python.update(p for p in toolchains if os.path.isdir(p) or os.path.isfile(p))
    paths = [*namespaces.SYSTEM_DIRS, *namespaces.ETC_FILES, *namespaces.DEVICES]
    return paths + sorted(os.path.abspath(p) for p in python)


def _failed_build(message: str) -> Build:
    reply = {"kind": "runtime_error", "exit_code": None, "elapsed_s": 0.0, "confinement": None}
    return Build("", "", reply, memoryview(message.encode()[:BUILD_MESSAGE]))


def _in_build_home(path: str) -> bool:
    names = run_files.parts(path)
    return names is not None and names[0] == BUILD_HOME


def _private_copy(*parts: bytes | memoryview) -> memoryview:
    """`parts` joined in a buffer of their own that no run is forked with."""
    size = sum(map(len, parts))
    view = memoryview(protocol.private_buffer(size))[:size]
    at = 0
    for part in parts:
        view[at : at + len(part)] = part
        at += len(part)
    return view


def _keep_outputs(workdir: str, directory: str, outputs: tuple[str, ...]) -> str | None:
    """A build's outputs moved from its run's directory to the build's own, the zygote's:
    a binary execute-only (a run that execs a file it cannot read is not dumpable), the
    rest read-only. Returns the loader the binary names, if any (`elf_interpreter`)."""
    loader = None
    for entry in os.scandir(workdir):
        wanted = any(
            entry.name == name or (name.startswith("*") and entry.name.endswith(name[1:]))
            for name in outputs
        )
        if not wanted or not entry.is_file(follow_symlinks=False):
            continue
        if entry.stat(follow_symlinks=False).st_nlink != 1:
            continue  # a link to a file elsewhere: chown and chmod would change that file
        target = os.path.join(directory, entry.name)
        os.rename(entry.path, target)
        with contextlib.suppress(PermissionError):
            os.chown(target, os.geteuid(), os.getegid())
        if entry.name == "main":
            loader = elf_interpreter(target)
        os.chmod(target, 0o111 if entry.name == "main" else 0o444)
    return loader


def _try(build: typing.Callable[[], typing.Any]) -> typing.Any:
    try:
        return build()
    except OSError:
        return None


def main() -> None:
    config = json.loads(sys.argv[-1])
    linux.prctl(linux.PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != config["worker_pid"]:
        return
    control_in, control_out = os.dup(0), os.dup(1)
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 0)
    os.dup2(null, 1)
    os.close(null)
    del sys.path[0]  # the package's root, which `LAUNCH` put first
    _add_site(config.get("site_packages", []))
    zygote: Zygote | None = None
    try:
        try:
            left = sweep_scratch_roots(scratch_parent())  # before a mount namespace
            toolchains = {k: found_from_json(v) for k, v in config.get("toolchains", {}).items()}
            zygote = Zygote(
                int(config["scratch_mb"]), toolchains, config.get("pch"), config.get("launcher")
            )
            error = zygote.self_test()
            zygote.confinement.build_filters()
            gc.freeze()
        except OSError as e:
            protocol.write_frame(control_out, {"layers": [], "error": str(e)})
            return
        if zygote.owns_scratch_root:
            _clean_up_when_orphaned(zygote)
        scratch_root = zygote.scratch_root if zygote.owns_scratch_root else None
        hello = {"layers": zygote.layers, "error": error, "scratch_root": scratch_root}
        hello["launcher"] = zygote.launcher_problem or "on"
        hello["stale_roots_left"] = left
        protocol.write_frame(control_out, hello)
        while error is None:
            if zygote.template is not None and not _readable(control_in, TEMPLATE_IDLE_S):
                zygote.drop_template()  # the answer is over: nothing of it outlives it long
            frame = protocol.read_frame(control_in)
            if frame is None:
                break
            request, payload = frame
            zygote.serve(request, payload, control_out)
            payload.close()
    finally:
        if zygote is not None:
            zygote.close()


def _add_site(site_packages: list[str]) -> None:
    """What a run gets of `site` (not imported at start-up, `python -S`): the worker's
    site-packages directories on `sys.path` (their `.pth` files neither run nor add
    paths) and the `exit`, `quit`, `help`, `copyright`, `credits` and `license` builtins."""
    import site

    sys.path.extend(str(p) for p in site_packages if os.path.isdir(str(p)))
    site.setquit()
    site.setcopyright()
    site.sethelper()


def _readable(fd: int, timeout_s: float) -> bool:
    return bool(select.select([fd], [], [], timeout_s)[0])


def _clean_up_when_orphaned(zygote: Zygote) -> None:
    """Die of SIGTERM rather than SIGKILL with the worker: the run in progress is killed
    and reaped, then `close` removes the scratch root on the host; a clean-up that hangs
    ends by SIGALRM. (The death signal was SIGKILL until now: no parent death goes
    unnoticed in between.)"""

    def terminate(signum: int, frame: object) -> None:
        signal.alarm(5)
        if zygote.running is not None:
            zygote._kill(zygote.running)
            with contextlib.suppress(ChildProcessError):
                os.waitpid(zygote.running, 0)
        raise SystemExit(0)

    signal.signal(signal.SIGTERM, terminate)
    linux.prctl(linux.PR_SET_PDEATHSIG, signal.SIGTERM)
