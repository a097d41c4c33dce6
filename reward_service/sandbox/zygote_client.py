"""The worker's side of the sandbox: the `Sandbox` a grading worker holds, one zygote.

The zygote (`zygote.py`) is a fresh interpreter with an empty environment;
it forks a confined process per run, so a test costs a fork rather than an
interpreter start. Nothing but frames (a JSON object and the raw bytes it
describes, `protocol`) crosses between worker and zygote, and every reply
is checked as data before it becomes an `Outcome`. A zygote that dies or
breaks the protocol is replaced, and the runs left go to the new one.
"""

from __future__ import annotations

import json
import logging
import os
import select
import site
import subprocess
import sys
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import KW_ONLY, dataclass, replace
from pathlib import Path
from types import TracebackType
from typing import TypeGuard

from reward_service.errors import SandboxUnavailable
from reward_service.sandbox import (
    LANGUAGES,
    LAYERS,
    Execution,
    Kind,
    Limits,
    Outcome,
    Program,
    protocol,
)
from reward_service.sandbox.run_launcher import launcher_of
from reward_service.sandbox.supervise import SCRATCH_PREFIX, remove_tree
from reward_service.sandbox.toolchains import TOOLCHAINS, Found, discover, found_to_json, pch_of

log = logging.getLogger(__name__)

ZYGOTE = Path(__file__).with_name("zygote.py")
LAUNCH = (
    "import sys\n"
    "sys.path.insert(0, sys.argv[1].rsplit('/', 3)[0])\n"
    "from reward_service.sandbox import zygote\n"
    "zygote.main()\n"
)
"""How the zygote starts: `python -I -S -c LAUNCH ZYGOTE CONFIG`. Its module is imported,
so from its cached bytecode (run as a script, it would be compiled: some 2 MB of heap
that every fork copies the page tables of and every exit tears down), and without
`site` (the `.pth` files' imports, 2 MB more; `zygote.main` adds what runs need of it)."""
_START_TIMEOUT_S = 30.0
_REPLY_GRACE_S = 10.0
"""Beyond a run's own time limit: fork, drain, clean-up, and a loaded machine."""
_CLOSE_TIMEOUT_S = 5.0
_STDERR_BYTES = 4096
"""The most of a reply's payload beyond stdout: the stderr tail (1 kB) with room to spare."""
_STDERR_CHARS = 2048


@dataclass(frozen=True)
class _Fetch:
    """The files a run's reply may carry: their paths (in the order asked), and the bytes
    they may hold in all."""

    paths: tuple[str, ...] = ()
    max_bytes: int = 0


@dataclass(frozen=True)
class _Request:
    """What one request asks the zygote: a program, the stdins left to run, their limits."""

    program: Program
    stdins: Sequence[bytes]
    limits: Limits
    budget_s: float
    _: KW_ONLY
    stop_at_first_failure: bool
    build_time_s: float
    build_memory_mb: int
    fetch: _Fetch

    def frame(self) -> tuple[protocol.Message, list[bytes]]:
        """The request as the zygote reads it: a JSON object, then the bytes it describes
        (the source, each file's path and content, the paths to fetch, the stdins)."""
        files = [(os.fsencode(path), data) for path, data in self.program.files]
        paths = [os.fsencode(path) for path in self.fetch.paths]
        source = self.program.source.encode("utf-8", "surrogatepass")
        message = {
            "language": self.program.language,
            "source_bytes": len(source),
            "files": [[len(path), len(data)] for path, data in files],
            "fetch": [len(path) for path in paths],
            "fetch_bytes": self.fetch.max_bytes,
            "stdin_bytes": [len(stdin) for stdin in self.stdins],
            "time_s": self.limits.time_s,
            "memory_mb": self.limits.memory_mb,
            "output_bytes": self.limits.output_bytes,
            "budget_s": self.budget_s,
            "stop_at_first_failure": self.stop_at_first_failure,
            "dialect": self.program.dialect,
            "build_time_s": self.build_time_s,
            "build_memory_mb": self.build_memory_mb,
        }
        return message, [source, *(part for file in files for part in file), *paths, *self.stdins]


@dataclass(frozen=True)
class _Built:
    """A build's frame: how the build ended."""

    outcome: Outcome
    _: KW_ONLY
    unrunnable: bool
    """True: it could not run here (a layer failed, or the toolchain cannot work here), so
    it says nothing of the program."""


class ZygoteSandbox:
    """Runs programs through a pre-warmed zygote; raises `SandboxUnavailable` at start-up
    if it cannot start or an item of `required_layers` is not met: each item is a layer,
    or alternatives `a|b` of which one must be active (`parse_required_layers`).

    Compiled languages (`languages`, all by default) use the toolchains found in
    `toolchain_path` (a PATH; `toolchains.discover`), a build given `build_time_s` and
    `build_memory_mb` unless `execute` says otherwise; C++ uses the precompiled
    `bits/stdc++.h` in `pch_dir` when there is one (`toolchains.build_pch`). Runs that
    exec their program are started by the run launcher in `launcher_dir` when it holds one
    (`run_launcher.build_launcher`), else forked (`launcher` says which)."""

    def __init__(
        self,
        scratch_mb: int = 64,
        *,
        required_layers: Iterable[str] = (),
        toolchain_path: str = "",
        languages: Iterable[str] | None = None,
        pch_dir: str = "",
        launcher_dir: str = "",
        build_time_s: float = 10.0,
        build_memory_mb: int = 1024,
    ) -> None:
        self._scratch_mb = scratch_mb
        self._required = parse_required_layers(required_layers)
        wanted = list(TOOLCHAINS) if languages is None else list(languages)
        self.toolchains: dict[str, Found | str] = (
            discover(toolchain_path, wanted) if toolchain_path else {}
        )
        """Each compiled language's toolchain, or why it is not usable here."""
        for language in set(TOOLCHAINS) - set(self.toolchains):
            self.toolchains[language] = "not enabled in this sandbox"
        self._pch = pch_of(pch_dir, self.toolchains.get("cpp"))
        self._launcher_path = launcher_of(launcher_dir)
        self.launcher = "off"
        """"on" when runs that exec their program are started by the run launcher, else
        why they are forked."""
        self._build_time_s, self._build_memory_mb = build_time_s, build_memory_mb
        self._process: subprocess.Popen[bytes] | None = None
        self._scratch_root: str | None = None
        self._layers = self._start()
        gap = exec_gap(self._layers)
        if gap is not None:
            for language, toolchain in self.toolchains.items():
                if isinstance(toolchain, Found):
                    self.toolchains[language] = gap
        unwritable = write_gap(self._layers)
        for language, toolchain in self.toolchains.items():
            if unwritable and isinstance(toolchain, Found) and TOOLCHAINS[language].writes:
                self.toolchains[language] = f"{language} {unwritable}"
        missing = unmet_layers(self._required, self._layers)
        if missing:
            self.close()
            raise SandboxUnavailable(
                f"required sandbox layers not active here: {', '.join(missing)} "
                f"(active: {', '.join(self._layers)})"
            )

    @property
    def layers(self) -> tuple[str, ...]:
        return self._layers

    def execute(
        self,
        program: Program,
        stdins: Sequence[bytes],
        limits: Limits,
        budget_s: float,
        *,
        stop_at_first_failure: bool = True,
        build_time_s: float | None = None,
        build_memory_mb: int | None = None,
        fetch: Sequence[str] = (),
        fetch_bytes: int = 0,
    ) -> Execution:
        """As `Sandbox.execute` says; the build's limits are `build_time_s` and
        `build_memory_mb` unless given. `SandboxUnavailable` names why a language cannot
        run here (`toolchains` says it for each: not found, or a layer missing), or why
        its build could not run (a layer failed, or the toolchain's own first words say
        it cannot work here)."""
        if program.language not in LANGUAGES:
            raise ValueError(f"no runner for language {program.language!r}")
        toolchain = self.toolchains.get(program.language)
        if isinstance(toolchain, str):
            raise SandboxUnavailable(f"{program.language}: {toolchain}")
        if toolchain is not None:
            TOOLCHAINS[program.language].dialect(program.dialect)
        request = _Request(
            program,
            stdins,
            limits,
            budget_s,
            stop_at_first_failure=stop_at_first_failure,
            build_time_s=build_time_s or self._build_time_s,
            build_memory_mb=build_memory_mb or self._build_memory_mb,
            fetch=_Fetch(tuple(fetch), fetch_bytes),
        )
        started = time.monotonic()
        outcomes: list[Outcome] = []
        build: Outcome | None = None
        broken: str | None = None  # why the build could not run here (a layer, the toolchain)
        for _ in range(2):  # a zygote lost on the way is replaced once; the runs left go on
            left = stdins[len(outcomes) :]
            if (
                (not left and (build is not None or toolchain is None))
                or (stop_at_first_failure and outcomes and outcomes[-1].kind is not Kind.OK)
                or (build is not None and build.kind is not Kind.OK)
            ):
                return Execution(build, outcomes)
            attempt = time.monotonic()
            rest = replace(request, stdins=left, budget_s=budget_s - (attempt - started))
            try:
                for answer in self._stream(rest):
                    if isinstance(answer, Outcome):
                        outcomes.append(answer)
                        continue
                    if answer.unrunnable:
                        broken = answer.outcome.stderr
                    if build is None:  # a replaced zygote builds again: the first is the one
                        build = answer.outcome
            except (OSError, protocol.ProtocolError) as e:
                lost = e
                self._kill()
                continue
            except BaseException:
                # Anything else (a MemoryError holding the outcomes, an interruption, a bug)
                # leaves the zygote mid-answer: the rest of this answer's frames must never
                # be read as the next one's, so the next answer gets a fresh zygote.
                self._kill()
                raise
            if broken is not None:
                raise SandboxUnavailable(f"{program.language}: {broken}")
            return Execution(build, outcomes)
        elapsed = time.monotonic() - attempt
        lost_run = Outcome(Kind.RUNTIME_ERROR, b"", f"sandbox: run lost ({lost})", None, elapsed)
        if toolchain is not None and build is None:
            return Execution(lost_run, [])
        return Execution(build, [*outcomes, lost_run])

    def close(self) -> None:
        process, self._process = self._process, None
        if process is None:
            return
        assert process.stdin is not None and process.stdout is not None
        process.stdin.close()
        try:
            process.wait(_CLOSE_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        process.stdout.close()
        self._remove_scratch_root()

    def __enter__(self) -> ZygoteSandbox:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    def _start(self) -> tuple[str, ...]:
        found = {k: found_to_json(v) for k, v in self.toolchains.items() if isinstance(v, Found)}
        config = json.dumps(
            {
                "scratch_mb": self._scratch_mb,
                "worker_pid": os.getpid(),
                "toolchains": found,
                "pch": self._pch,
                "launcher": self._launcher_path,
                "site_packages": [p for p in site.getsitepackages() if os.path.isdir(p)],
            }
        )
        self._process = subprocess.Popen(
            [sys.executable, "-I", "-S", "-c", LAUNCH, str(ZYGOTE), config],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env={},
            cwd="/",
            close_fds=True,
            start_new_session=True,
        )
        try:
            frame = self._receive(time.monotonic() + _START_TIMEOUT_S, 0)
            hello = frame[0] if frame is not None else None
        except protocol.ProtocolError as e:
            hello, reason = None, str(e)
        else:
            reason = "no answer" if hello is None else str(hello.get("error"))
        layers = hello.get("layers") if hello is not None else None
        self._scratch_root = _own_scratch_root(hello.get("scratch_root") if hello else None)
        if hello is None or hello.get("error") is not None or not _is_layer_list(layers):
            self._kill()
            raise SandboxUnavailable(f"the sandbox's zygote did not start: {reason}")
        self.launcher = str(hello.get("launcher", "off"))
        left = hello.get("stale_roots_left")
        if isinstance(left, list) and left:  # swept at start-up, too big for one removal
            log.warning("scratch roots of dead zygotes left for the next sweep: %s", left[:10])
        return tuple(layers)

    def _stream(self, request: _Request) -> Iterator[Outcome | _Built]:
        """Send `request` to the zygote; yield its build (the first frame, for a compiled
        language), then each run's outcome, as the zygote answers them."""
        if self._process is None or self._process.poll() is not None:
            self._restart()
        assert self._process is not None and self._process.stdin is not None
        message, parts = request.frame()
        protocol.write_frame(self._process.stdin.fileno(), message, *parts)
        limits, fetch = request.limits, request.fetch
        toolchain = TOOLCHAINS.get(request.program.language)
        building = toolchain is not None and toolchain.builds
        runs = 0
        while True:
            wait_s = request.build_time_s if building else limits.time_s
            deadline = time.monotonic() + wait_s + _REPLY_GRACE_S
            frame = self._receive(deadline, limits.output_bytes + _STDERR_BYTES + fetch.max_bytes)
            if frame is None:
                raise protocol.ProtocolError("the zygote ended")
            reply, payload = frame
            if reply.get("done") is True:
                return
            if "build" in reply:
                if not building or not isinstance(reply["build"], dict):
                    raise protocol.ProtocolError("a build frame out of place")
                building = False
                unrunnable = bool(reply["build"].get("confinement"))
                yield _Built(_build_outcome(reply["build"], payload), unrunnable=unrunnable)
                continue
            if building:
                raise protocol.ProtocolError("a run before its program's build")
            if runs == len(request.stdins):
                raise protocol.ProtocolError("more outcomes than inputs")
            runs += 1
            yield _outcome(reply, payload, limits, fetch)

    def _restart(self) -> None:
        self._kill()
        layers = self._start()
        if set(layers) != set(self._layers):
            self._kill()
            raise SandboxUnavailable(
                f"the restarted zygote's layers {layers} differ from {self._layers}"
            )

    def _kill(self) -> None:
        process, self._process = self._process, None
        if process is not None:
            process.kill()
            process.wait()
            for pipe in (process.stdin, process.stdout):
                if pipe is not None:
                    pipe.close()
        self._remove_scratch_root()

    def _remove_scratch_root(self) -> None:
        """What a zygote that did not close cleanly left on the host (without a mount
        namespace its scratch root is a directory of the host's /tmp)."""
        root, self._scratch_root = self._scratch_root, None
        if root is not None and os.path.lexists(root):
            remove_tree(root)

    def _receive(self, deadline: float, max_payload: int) -> tuple[protocol.Message, bytes] | None:
        """The zygote's next frame, None if the zygote ends; ProtocolError past `deadline`."""
        assert self._process is not None and self._process.stdout is not None
        fd = self._process.stdout.fileno()
        header = _read(fd, protocol.HEADER.size, deadline)
        if header is None:
            return None
        body_size, payload_size = protocol.sizes(header, max_payload=max_payload)
        body = _read(fd, body_size, deadline)
        payload = _read(fd, payload_size, deadline)
        if body is None or payload is None:
            raise protocol.ProtocolError("the zygote stopped inside a frame")
        return protocol.decode(body), payload


def _read(fd: int, n: int, deadline: float) -> bytes | None:
    data = bytearray()
    while len(data) < n:
        timeout = deadline - time.monotonic()
        if timeout <= 0 or not select.select([fd], [], [], timeout)[0]:
            raise protocol.ProtocolError("the zygote did not answer in time")
        chunk = os.read(fd, n - len(data))
        if not chunk:
            return None
        data += chunk
    return bytes(data)


def _own_scratch_root(path: object) -> str | None:
    """The scratch root a zygote reports, if it is one a zygote makes (never any other path)."""
    if not isinstance(path, str) or not os.path.isabs(path) or os.path.islink(path):
        return None
    return path if os.path.basename(path).startswith(SCRATCH_PREFIX) else None


def _is_layer_list(value: object) -> TypeGuard[list[str]]:
    return isinstance(value, list) and all(isinstance(v, str) and v in LAYERS for v in value)


def _outcome(
    reply: protocol.Message,
    payload: bytes,
    limits: Limits,
    fetch: _Fetch = _Fetch(),
) -> Outcome:
    """A reply checked field by field (anything off is a protocol error); its payload is
    the run's stdout, then its stderr's tail, then the files fetched (`files`: [index in
    `fetch.paths`, bytes] each, within `fetch.max_bytes`)."""
    kind, exit_code, elapsed = reply.get("kind"), reply.get("exit_code"), reply.get("elapsed_s")
    signal = reply.get("signal")
    stdout_bytes, stderr_bytes = reply.get("stdout_bytes"), reply.get("stderr_bytes")
    confinement = reply.get("confinement")
    fetched = _fetched(reply.get("files", []), fetch)
    if (
        kind not in {k.value for k in Kind}
        or not (exit_code is None or type(exit_code) is int)
        or not (signal is None or (type(signal) is int and 0 < signal < 128))
        or not isinstance(elapsed, (int, float))
        or not (confinement is None or isinstance(confinement, str))
        or type(stdout_bytes) is not int
        or type(stderr_bytes) is not int
        or not 0 <= stdout_bytes <= limits.output_bytes
        or stdout_bytes + stderr_bytes + sum(size for _, size in fetched) != len(payload)
    ):
        raise protocol.ProtocolError(f"malformed reply: {sorted(reply)}")
    end = stdout_bytes + stderr_bytes
    files = {}
    for path, size in fetched:
        files[path], end = payload[end : end + size], end + size
    stderr = payload[stdout_bytes : stdout_bytes + stderr_bytes].decode("utf-8", "replace")
    if confinement is not None:
        stderr = f"sandbox: {confinement}"
    return Outcome(
        Kind(kind),
        payload[:stdout_bytes],
        stderr[-_STDERR_CHARS:],
        exit_code,
        float(elapsed),
        files,
        signal,
    )


def _fetched(files: object, fetch: _Fetch) -> list[tuple[str, int]]:
    """(path, bytes) of each file a reply says it fetched, checked: each one asked for,
    once, in order, their bytes within the cap."""
    paths, cap = fetch.paths, fetch.max_bytes
    if not isinstance(files, list):
        raise protocol.ProtocolError("malformed reply: files")
    found: list[tuple[str, int]] = []
    last = -1
    for item in files:
        if not (isinstance(item, list) and len(item) == 2 and all(type(n) is int for n in item)):
            raise protocol.ProtocolError("malformed reply: files")
        index, size = item
        if not last < index < len(paths) or size < 0:
            raise protocol.ProtocolError("malformed reply: files")
        found.append((paths[index], size))
        last = index
    if sum(size for _, size in found) > cap:
        raise protocol.ProtocolError("malformed reply: files over the cap")
    return found


def _build_outcome(reply: protocol.Message, payload: bytes) -> Outcome:
    """A build's reply, checked as a run's is; its payload is the head of its messages."""
    fields = {**reply, "stdout_bytes": 0, "stderr_bytes": len(payload)}
    checked = _outcome(fields, payload, Limits(0.0, 0, 0))  # a build answers no stdout
    stderr = checked.stderr if reply.get("confinement") else payload.decode("utf-8", "replace")
    return Outcome(
        checked.kind, b"", stderr, checked.exit_code, checked.elapsed_s, signal=checked.signal
    )


def exec_gap(layers: Iterable[str]) -> str | None:
    """Why compiled programs cannot run under `layers`, or None: a compiled program is
    exec'd, and only landlock's execute right or `exec_once` holds it to that one exec
    (without either it could exec a shell by `execveat` with an absolute path, which no
    filter can read): closed, not run with that gap."""
    if {"landlock", "exec_once"} & set(layers):
        return None
    return (
        "compiled programs need the landlock or exec_once layer, neither of which is "
        "active here (exec_once: Linux 5.5+ and no seccomp listener above the service)"
    )


def write_gap(layers: Iterable[str]) -> str | None:
    """Why a runtime that must write a file at start (`Toolchain.writes`: R's session
    directory) cannot run under `layers`, or None: without landlock the seccomp filter
    refuses every file write (it sees no paths), so such a run fails before the
    program's first line; closed rather than graded wrong."""
    if "seccomp" not in layers or "landlock" in layers:
        return None
    return (
        "writes a directory at start, and runs here may write no file (no landlock: the "
        "seccomp filter refuses every file write)"
    )


def probe_layers(scratch_mb: int = 64) -> tuple[str, ...]:
    """The layers a sandbox gets here, learnt by starting a zygote and stopping it."""
    with ZygoteSandbox(scratch_mb) as sandbox:
        return sandbox.layers


def parse_required_layers(required: Iterable[str]) -> frozenset[str]:
    """`required` in normal form, or `SandboxUnavailable` naming every unknown name.

    Each item is a layer of `LAYERS` or alternatives `a|b` (any one of them active
    meets it); names are stripped, and alternatives sorted and joined by `|`.
    """
    items: set[str] = set()
    unknown: set[str] = set()
    for item in required:
        names = {name.strip() for name in item.split("|")}
        unknown |= names - set(LAYERS)
        items.add("|".join(sorted(names)))
    if unknown:
        raise SandboxUnavailable(
            f"unknown sandbox layers {sorted(unknown)} (an item is a layer or alternatives "
            f"a|b); known: {', '.join(LAYERS)}"
        )
    return frozenset(items)


def unmet_layers(required: Iterable[str], active: Iterable[str]) -> list[str]:
    """The items of `required` (normal form) that `active` does not meet, as text:
    `seccomp`, or `landlock or uid` for alternatives none of which is active."""
    have = set(active)
    return sorted(
        item.replace("|", " or ") for item in required if have.isdisjoint(item.split("|"))
    )
