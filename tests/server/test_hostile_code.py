"""The hostile programs through a live server's `code` scorer, the server in a PID namespace.

`reward-service serve` runs under `tests.sandbox.harness.confine` inside `unshare
--pid --fork --mount-proc` (the network is shared, so its loopback port is
reachable), with `REWARD_API_TOKEN` and other secrets set to fresh canaries.
One campaign per platform profile (`tests.sandbox.harness.platforms`) posts every
hostile program and every forgery to `/score/code?detail=1` two at a time
while `/livez` is polled and math answers are graded alongside, then a
GRPO-like group (three correct answers and a copier on one label); the
tests read what it saw. The profiles' campaigns go two at a time from the module's
start (`tests.sandbox.harness.campaigns`): each has its own server, port, listeners
and canaries. A program's findings come back the one way a
service answers: the stderr excerpt of `first_failure`.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import signal
import site
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

from reward_service.sandbox import Kind
from reward_service.testing import LivenessProbe, free_port
from tests.sandbox.harness import campaigns, confine, platforms, procs
from tests.sandbox.harness.hostile_programs import (
    ACHIEVED,
    COPY_ANSWER,
    FORGERIES,
    FORK_GATE,
    PROGRAMS,
    REACH_PROBE,
    SOLVE_FOR_COPY,
    Forgery,
    Hostile,
    Target,
    served_source,
)
from tests.sandbox.harness.runner import Listeners, files_outside

REPO = Path(__file__).resolve().parents[2]
DEADLINE_S = 150.0
CONCURRENCY = 2
MATH = [("so \\boxed{42}", "42", 1.0), ("so \\boxed{41}", "42", 0.0)]
NEVER = "never printed"
RUN_CODE_READERS = (
    "print_environ",
    "proc_self_environ",
    "proc_parent_environ",
    "proc_init_environ",
    "proc_every_environ",
    "serviceaccount_token",
    "scan_own_memory",
    "scan_parent_memory",
    "proc_fd_of_service",
)
"""The secret readers also sent to `/run_code`, whose answer is the program's whole stdout."""
LIVE_PROFILES = ("full", "nonroot-pod", "nonroot-old-kernel")
"""The platforms a live server is attacked on (`tests.sandbox.harness.platforms`): all layers, the
manifests' unprivileged pod, and that pod on a kernel without landlock."""
CAMPAIGNS_WAIT_S = len(LIVE_PROFILES) * (DEADLINE_S + 60)
"""A profile's campaign may wait for every earlier one to end at its server's deadline."""

pytestmark = [
    pytest.mark.heavy,
    pytest.mark.skipif(confine.unavailable() is not None, reason=str(confine.unavailable())),
]


@dataclass
class Campaign:
    """What one confined server answered and left behind."""

    outer: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    scorers: Any = None
    reach: dict[str, Any] = field(default_factory=dict)
    fork_gate: dict[str, Any] = field(default_factory=dict)
    answers: dict[str, dict[str, Any]] = field(default_factory=dict)
    run_code: dict[str, dict[str, Any]] = field(default_factory=dict)
    bodies: list[str] = field(default_factory=list)
    math_wrong: list[str] = field(default_factory=list)
    math_done: int = 0
    liveness: tuple[int, int, float] = (0, 0, 0.0)
    hits: dict[str, int] = field(default_factory=dict)
    orphans: list[str] = field(default_factory=list)
    files: dict[str, list[str]] = field(default_factory=dict)
    log: str = ""
    canaries: dict[str, str] = field(default_factory=dict)
    profile: str = "full"
    sent: int = 0
    copied: tuple[Any, Any] = (None, None)


def _code_body(source: str, label: dict[str, Any]) -> dict[str, Any]:
    return {"prompt": "solve", "response": f"```python\n{source}\n```", "label": label}


def _stdin_label(hostile: Hostile) -> dict[str, Any]:
    return {
        "inputs": [""],
        "outputs": [NEVER],
        "time_limit_s": hostile.time_s,
        "memory_mb": hostile.memory_mb,
    }


class Server:
    """`reward-service serve` confined; stopped by SIGTERM to the namespace's PID 1."""

    def __init__(self, tmp: Path, env: dict[str, str], profile: str) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.report, self.log = tmp / "confine.jsonl", tmp / "server.log"
        serve = [sys.executable, "-m", "reward_service", "serve", "--host", "127.0.0.1"]
        serve += ["--port", str(self.port), "--workers", "2"]
        with self.log.open("wb") as log:
            self.process = subprocess.Popen(
                confine.command(self.report, platforms.command(profile, serve), DEADLINE_S),
                cwd=REPO,
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
            )

    def init_pid(self) -> int | None:
        """The host PID of the namespace's PID 1 (the confinement)."""
        below = [p for p in procs.descendants(self.process.pid) if p.ppid == self.process.pid]
        return below[0].pid if below else None

    def wait_ready(self, timeout_s: float = 90.0) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"confined server exited with {self.process.returncode}")
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(f"{self.url}/readyz", timeout=1.0).status_code == 200:
                    return
            time.sleep(0.2)
        raise TimeoutError("confined server not ready")

    def orphans(self) -> list[str]:
        """Processes adopted by the namespace's PID 1 other than the server: escaped runs."""
        init = self.init_pid()
        if init is None:
            return []
        server = [p.pid for p in procs.descendants(init) if p.ppid == init][:1]
        return [
            p.describe()
            for p in procs.descendants(init)
            if (p.ppid == init and p.pid not in server) or p.comm == "hx-daemon"
        ]

    def stop(self) -> None:
        init = self.init_pid()
        if init is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(init, signal.SIGTERM)
        try:
            self.process.wait(60)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def _post(client: httpx.Client, url: str, body: dict[str, Any], sink: list[str]) -> dict[str, Any]:
    response = client.post(url, json=body)
    sink.append(response.text)
    response.raise_for_status()
    answer: dict[str, Any] = response.json()
    return answer


def _math_loop(client: httpx.Client, url: str, stop: threading.Event, campaign: Campaign) -> None:
    while not stop.is_set():
        for response, label, reward in MATH:
            try:
                body = {"response": response, "label": label}
                answer = _post(client, f"{url}/score?detail=1", body, [])
            except httpx.HTTPError as exc:
                answer = {"error": repr(exc)}
            campaign.math_done += 1
            if answer.get("reward") != reward:
                campaign.math_wrong.append(f"{response!r}: {answer}")
        stop.wait(0.2)


def _attack(
    client: httpx.Client, url: str, name: str, body: dict[str, Any], campaign: Campaign
) -> None:
    try:
        campaign.answers[name] = _post(client, f"{url}/score/code?detail=1", body, campaign.bodies)
    except httpx.HTTPError as exc:
        campaign.answers[name] = {"transport_error": repr(exc)}


def _copy_attempt(client: httpx.Client, url: str) -> tuple[Any, Any]:
    """Three correct answers (a GRPO group's), then one that only prints what it finds in memory."""
    lines = [secrets.token_hex(16) for _ in range(20)]
    label = {
        "inputs": ["".join(f"{line}\n" for line in lines)],
        "outputs": ["".join(f"ANSWER:{line[::-1]}\n" for line in lines)],
    }
    solved = [
        _post(client, f"{url}/score/code?detail=1", _code_body(SOLVE_FOR_COPY, label), [])
        for _ in range(3)
    ]
    copier = _post(client, f"{url}/score/code?detail=1", _code_body(COPY_ANSWER, label), [])
    return solved, copier


def _campaign(tmp: Path, profile: str) -> Campaign:
    """Start the confined server, send every hostile program and forgery, stop it; the record."""
    found = Campaign(canaries=confine.canaries(), profile=profile)
    env = {**os.environ, **found.canaries, "REWARD_ACCESS_LOG": "all", "REWARD_WORKERS": "2"}
    listeners = Listeners()
    server = Server(tmp, env, profile)
    headers = {"Authorization": f"Bearer {found.canaries['REWARD_API_TOKEN']}"}
    targets: dict[str, Target] = {}
    try:
        server.wait_ready()
        found.outer = confine.read_report(server.report)
        with httpx.Client(headers=headers, timeout=60) as client:
            found.scorers = client.get(f"{server.url}/scorers").json()
            found.bodies.append(str(found.scorers))
            label = {"inputs": ["1\n"], "outputs": ["blocked"]}
            found.reach = _post(
                client, f"{server.url}/score/code?detail=1", _code_body(REACH_PROBE, label), []
            )
            found.fork_gate = _post(
                client,
                f"{server.url}/score/code?detail=1",
                _code_body(FORK_GATE, {"inputs": [""], "outputs": ["bounded"]}),
                [],
            )
            jobs = []
            for hostile in PROGRAMS:
                if hostile.gate == "fork" and found.fork_gate.get("reward") != 1.0:
                    continue
                target = targets[hostile.name] = Target(
                    run_id=f"hostile-{secrets.token_hex(4)}-{hostile.name}",
                    service_port=server.port,
                    tcp_port=listeners.tcp,
                    tcp6_port=listeners.tcp6,
                    udp_port=listeners.udp,
                    unix_name=listeners.unix_name,
                    repo=str(REPO),
                    home=str(Path.home()),
                    site=site.getsitepackages()[0],
                )
                body = _code_body(served_source(hostile, target), _stdin_label(hostile))
                jobs.append((hostile.name, body))
            jobs += [(f.name, _code_body(f.source, f.label)) for f in FORGERIES]
            found.sent = len(jobs)
            stop = threading.Event()
            math = threading.Thread(target=_math_loop, args=(client, server.url, stop, found))
            with LivenessProbe(server.url) as probe:
                math.start()
                with ThreadPoolExecutor(CONCURRENCY) as pool:
                    for name, body in jobs:
                        pool.submit(_attack, client, server.url, name, body, found)
                stop.set()
                math.join()
            found.liveness = (probe.answers, probe.failures, probe.slowest_s)
            found.copied = _copy_attempt(client, server.url)
            for hostile in PROGRAMS:
                if hostile.name in RUN_CODE_READERS:
                    body = {
                        "code": hostile.source(targets[hostile.name]),
                        "language": "python",
                        "run_timeout": hostile.time_s,
                        "memory_limit_MB": hostile.memory_mb,
                    }
                    found.run_code[hostile.name] = _post(
                        client, f"{server.url}/run_code", body, found.bodies
                    )
        time.sleep(1.5)
        found.orphans = server.orphans()
        found.hits = dict(listeners.hits)
        for name, target in targets.items():
            if files := files_outside(target, []):
                found.files[name] = files
    finally:
        server.stop()
        listeners.close()
    found.outer = confine.read_report(server.report)
    found.log = server.log.read_text(errors="replace")
    (tmp / "answers.json").write_text(json.dumps(found.answers, indent=1, default=str))
    return found


@pytest.fixture(scope="module")
def started(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[campaigns.Campaigns[Campaign]]:
    """Every selected profile's campaign, a few at a time from the module's start (their
    directories made here: two threads' first `mktemp` would race for pytest's base)."""
    profiles = campaigns.selected(request.session, Path(__file__), "campaign")
    tmps = {profile: tmp_path_factory.mktemp(f"hostile_code-{profile}") for profile in profiles}
    with campaigns.Campaigns(
        lambda profile: _campaign(tmps[profile], profile), profiles, CAMPAIGNS_WAIT_S
    ) as running:
        yield running


@pytest.fixture(
    scope="module",
    params=[p if p == "full" else pytest.param(p, marks=pytest.mark.slow) for p in LIVE_PROFILES],
)
def campaign(request: pytest.FixtureRequest, started: campaigns.Campaigns[Campaign]) -> Campaign:
    """One profile's campaign, once it has ended."""
    profile: str = request.param
    if reason := platforms.unavailable(profile):
        pytest.skip(reason)
    return started.result(profile)


def test_server_runs_confined(campaign: Campaign) -> None:
    """The server's namespace was proven (PID 1, own PID and mount namespaces) before it started."""
    probe = campaign.outer.get("probe", [{}])[0]
    assert probe.get("ok"), probe


def test_sandbox_layers_are_reported(campaign: Campaign) -> None:
    """The layers are named at start-up (a log line), by GET /scorers and in an answer's detail."""
    assert "code" in campaign.scorers["scorers"], campaign.scorers
    layers = campaign.scorers.get("checks", {}).get("code", {}).get("layers")
    assert layers and campaign.reach.get("sandbox") == layers, (campaign.scorers, campaign.reach)
    assert f"code start-up check: sandbox layers: {', '.join(layers)}" in campaign.log


def test_a_run_signals_nothing(campaign: Campaign) -> None:
    """A harmless kill(-1, 0) from a run reaches no process: the program prints `blocked`."""
    assert campaign.reach.get("reward") == 1.0, campaign.reach


def test_fork_is_bounded(campaign: Campaign) -> None:
    """A run cannot fork, or forks under a non-root RLIMIT_NPROC (else no fork bomb is sent)."""
    assert campaign.fork_gate.get("reward") == 1.0, campaign.fork_gate


def _expected_kinds(hostile: Hostile) -> set[str]:
    return {"wrong_output" if kind is Kind.OK else kind.value for kind in hostile.kinds}


@pytest.mark.parametrize("hostile", PROGRAMS, ids=[p.name for p in PROGRAMS])
def test_hostile_program_gets_zero(campaign: Campaign, hostile: Hostile) -> None:
    """Reward 0.0 with a right failure kind, and nothing achieved in the answer's stderr."""
    answer = campaign.answers.get(hostile.name)
    assert answer is not None, f"{hostile.name} was not sent (fork gate: {campaign.fork_gate})"
    failure = answer.get("first_failure") or {}
    assert answer.get("reward") == 0.0, answer
    assert failure.get("kind") in _expected_kinds(hostile), answer
    leaked = [name for name, canary in campaign.canaries.items() if canary in json.dumps(answer)]
    if leaked and campaign.profile == platforms.UNCONFINED_READS:
        assert leaked == [platforms.READ_GAPS.get(hostile.name)], leaked
        pytest.xfail(f"documented gap: {hostile.name} reads a secret where reads are unconfined")
    assert not leaked, f"{hostile.name} exfiltrated {leaked} through its answer"
    said = str(failure.get("stderr")).splitlines()
    assert not [line for line in said if line.startswith(ACHIEVED)], answer


@pytest.mark.parametrize("forgery", FORGERIES, ids=[f.name for f in FORGERIES])
def test_forgery_gets_zero(campaign: Campaign, forgery: Forgery) -> None:
    """A solution that forges the driver's verdicts, or exits before them, gets 0.0."""
    answer = campaign.answers[forgery.name]
    assert answer.get("reward") == 0.0, answer
    assert (answer.get("first_failure") or {}).get("kind") in forgery.kinds, answer


def test_a_later_answer_cannot_copy_an_earlier_answers_output(campaign: Campaign) -> None:
    """An answer that prints an output found in the memory its run inherited gets 0.0."""
    solved, copier = campaign.copied
    assert [answer["reward"] for answer in solved] == [1.0] * 3, solved
    assert copier["reward"] == 0.0, copier


def test_service_kept_answering(campaign: Campaign) -> None:
    """/livez answered throughout and every math answer alongside got its right reward."""
    answers, failures, _ = campaign.liveness
    assert answers > 0 and failures == 0, campaign.liveness
    assert campaign.math_done > 0 and not campaign.math_wrong, campaign.math_wrong[:3]


def test_no_secret_in_any_answer_or_log(campaign: Campaign) -> None:
    """No canary secret (API token, environment, service-account file) is in any answer or log,
    and no line a program wrote reaches the log."""
    texts = {"answers": "\n".join(campaign.bodies), "log": campaign.log}
    assert campaign.log.count('"msg":"request"') >= campaign.sent, "the access log is not on"
    assert "forged log line" not in campaign.log
    unconfined = campaign.profile == platforms.UNCONFINED_READS
    gaps = set(platforms.READ_GAPS.values()) if unconfined else set()
    for where, text in texts.items():
        for name, canary in campaign.canaries.items():
            if where == "answers" and name in gaps:
                continue  # the documented read gap, pinned per program above
            assert canary not in text, f"{name} appears in the {where}"


def test_secret_readers_ran_through_run_code(campaign: Campaign) -> None:
    """The secret readers ran through `/run_code` too, its answers among those searched for
    canaries above: printing what they read to stdout brings back none."""
    assert sorted(campaign.run_code) == sorted(RUN_CODE_READERS)
    for name, answer in campaign.run_code.items():
        assert answer.get("status") in ("Success", "Failed"), (name, answer)


def test_nothing_reached_the_loopback_listeners(campaign: Campaign) -> None:
    """The TCP, IPv6, UDP and abstract-socket listeners got no connection and no datagram."""
    assert not any(campaign.hits.values()), campaign.hits


def test_no_process_survives_and_no_file_appears(campaign: Campaign) -> None:
    """No run's process outlives it (mid-campaign or at shutdown); no file lands outside scratch."""
    assert not campaign.orphans, campaign.orphans
    assert not campaign.files, campaign.files
    assert not campaign.outer.get("watchdog"), campaign.outer.get("watchdog")
    for leftovers in campaign.outer.get("leftovers", []):
        assert not leftovers["processes"], leftovers
