"""The hostile programs against the service's sandbox, inside an outer PID namespace.

For each platform profile (`tests.sandbox.harness.platforms`: all layers, then the
layers a pod or an older kernel takes away), one confined run of
`tests.sandbox.harness.runner` (under `tests.sandbox.harness.confine`, in `unshare --pid
--fork --mount-proc`) attacks the sandbox with every program of
`hostile_programs.PROGRAMS`, built by the sandbox's g++ the C++ ones of
`hostile_native.NATIVE`, and one program in each other language found here
(`hostile_scripts.SCRIPTS`: C, Ruby, PHP, Perl, Lua, TypeScript, R, Verilog, Scala, Kotlin,
C#, D, Racket); the tests below read its report; the profiles' runs go two at a time from
the module's start (`tests.sandbox.harness.campaigns`). Nothing hostile runs unless the
confinement probe passed first. A program that took its runner down (a hole) is retried
in a fresh confined run with the programs left.
`python -m tests.sandbox.harness.summary DIR` tables a run's reports by program and profile.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.sandbox.harness import campaigns, confine, platforms
from tests.sandbox.harness.hostile_native import NATIVE
from tests.sandbox.harness.hostile_programs import BY_NAME, PROGRAMS, Hostile, Target, served_source
from tests.sandbox.harness.hostile_scripts import SCRIPTS
from tests.sandbox.harness.platforms import PROFILES
from tests.sandbox.harness.runner import Listeners, files_outside

REPO = Path(__file__).resolve().parents[2]
DEADLINE_S = 120.0
ATTEMPTS = 3
CAMPAIGNS_WAIT_S = len(PROFILES) * (DEADLINE_S + 30)
"""A profile's first run may wait for every earlier one to end at its deadline."""

pytestmark = [
    pytest.mark.heavy,
    pytest.mark.skipif(confine.unavailable() is not None, reason=str(confine.unavailable())),
]


@dataclass
class Attack:
    """What the confined runs reported: the confinement's events and the runner's."""

    outer: dict[str, list[dict[str, Any]]]
    inner: dict[str, list[dict[str, Any]]]
    logs: str

    def programs(self) -> dict[str, dict[str, Any]]:
        return {event["name"]: event for event in self.inner.get("program", [])}


def _confined_run(tmp: Path, profile: str, attempt: int, only: list[str] | None) -> Attack:
    report, results = tmp / f"confine-{attempt}.jsonl", tmp / f"results-{attempt}.jsonl"
    inner = [sys.executable, "-m", "tests.sandbox.harness.runner", "--results", str(results)]
    inner = platforms.command(profile, [*inner, "--profile", profile])
    if only is not None:
        inner += ["--only", *only]
    env = {**os.environ, **confine.canaries()}
    done = subprocess.run(
        confine.command(report, inner, DEADLINE_S),
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=DEADLINE_S + 30,
    )
    logs = f"exit {done.returncode}\nstdout:\n{done.stdout[-3000:]}\nstderr:\n{done.stderr[-3000:]}"
    return Attack(confine.read_report(report), confine.read_report(results), logs)


@pytest.fixture(scope="module")
def first_runs(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[campaigns.Campaigns[tuple[Path, Attack]]]:
    """Every selected profile's first confined run, a few at a time from the module's start.
    Their directories are made here: pytest's first `mktemp` of a worker makes its base
    directory afresh, which two threads at once would race for."""
    profiles = campaigns.selected(request.session, Path(__file__), "attacks")
    tmps = {profile: tmp_path_factory.mktemp(f"hostile-{profile}") for profile in profiles}

    def first(profile: str) -> tuple[Path, Attack]:
        return tmps[profile], _confined_run(tmps[profile], profile, 0, None)

    with campaigns.Campaigns(first, profiles, CAMPAIGNS_WAIT_S) as started:
        yield started


@pytest.fixture(
    scope="module",
    params=[p if p == "full" else pytest.param(p, marks=pytest.mark.slow) for p in PROFILES],
)
def attacks(
    request: pytest.FixtureRequest, first_runs: campaigns.Campaigns[tuple[Path, Attack]]
) -> Iterator[list[Attack]]:
    """A profile's confined runs: the first runs all programs, later ones what one left."""
    profile: str = request.param
    if reason := platforms.unavailable(profile):
        pytest.skip(reason)
    tmp, attack = first_runs.result(profile)
    runs: list[Attack] = []
    left = [program.name for program in (*PROGRAMS, *NATIVE, *SCRIPTS)]
    for attempt in range(ATTEMPTS):
        if attempt > 0:
            attack = _confined_run(tmp, profile, attempt, left)
        runs.append(attack)
        if not attack.outer.get("probe", [{}])[0].get("ok") or "layers" not in attack.inner:
            break
        left = [name for name in left if name not in attack.programs()]
        if not left:
            break
        left = left[1:]  # the first program left is the one its run did not survive
    yield runs


@pytest.mark.parametrize("program", PROGRAMS, ids=[p.name for p in PROGRAMS])
def test_every_hostile_program_compiles(program: Hostile) -> None:
    """A program that cannot compile would end `runtime_error` and pass without attacking."""
    target = Target("hostile-compile", 1, 2, 3, 4, "unix", "/repo", "/home", "/site")
    compile(program.source(target), program.name, "exec")
    compile(served_source(program, target), program.name, "exec")


def test_outer_namespace_is_proven_before_anything_runs(attacks: list[Attack]) -> None:
    """The confined runner is PID 1 of its own PID and mount namespaces, alone in /proc."""
    for attack in attacks:
        probe = attack.outer.get("probe", [{}])[0]
        assert probe.get("ok"), f"confinement probe failed: {probe}\n{attack.logs}"


def test_sandbox_reports_its_layers(attacks: list[Attack]) -> None:
    """The sandbox starts with every layer the profile leaves it, and names them."""
    attack = attacks[0]
    started = attack.inner.get("layers", [{}])[0]
    layers, profile = started.get("layers"), started.get("profile")
    assert layers, f"no layers reported\n{attack.logs}"
    taken = set(PROFILES[profile])
    expected = {"process", "rlimits", "seccomp", "exec_once", "landlock", "namespaces"} - taken
    if not taken:
        expected.add("uid")
    assert expected <= set(layers), layers
    if "namespaces" in PROFILES[profile]:
        assert not {"netns", "mountns", "pidns"} & set(layers), layers


def test_the_native_programs_are_started_by_the_run_launcher(attacks: list[Attack]) -> None:
    """On every profile the compiled programs' runs (and builds) go through the launcher
    that production uses, not the forked path, so the attacks above test it."""
    attack = attacks[0]
    launcher = attack.inner.get("launcher", [{}])[0]
    assert launcher.get("status") == "on", f"{launcher}\n{attack.logs}"


def test_a_sandboxed_run_signals_nothing_outside(attacks: list[Attack]) -> None:
    """From inside a run, kill(-1, 0) finds no process to signal."""
    probe = attacks[0].inner.get("sandbox_probe", [{}])[0]
    assert probe.get("ok"), f"the harmless probe program failed: {probe}\n{attacks[0].logs}"
    assert probe["kill_minus_1_sig0"] != "reached at least one process", probe


def _missing(language: str) -> str:
    """Why `language`'s toolchain is not here, or ''."""
    from reward_service.sandbox.toolchains import discover
    from reward_service.scorers.code.settings import DEFAULT_TOOLCHAIN_PATH

    found = discover(DEFAULT_TOOLCHAIN_PATH, [language])[language]
    return f"{language}: {found}" if isinstance(found, str) else ""


NAMES: list[Any] = [program.name for program in PROGRAMS]
NAMES += [
    pytest.param(program.name, marks=pytest.mark.needs_tool(_missing(program.language)))
    for program in (*NATIVE, *SCRIPTS)
]


@pytest.mark.parametrize("name", NAMES)
def test_hostile_program_achieves_nothing(
    attacks: list[Attack], name: str, request: pytest.FixtureRequest
) -> None:
    """The program ends with a right kind and leaves no trace: no hole of any kind (where reads
    are unconfined, the documented read gap and nothing more)."""
    results = [attack.programs()[name] for attack in attacks if name in attack.programs()]
    assert results, f"{name}: no result, its runner died while it ran\n{attacks[-1].logs}"
    result = results[0]
    if result.get("closed"):
        pytest.skip(f"{name}: its language is closed on this platform: {result['closed']}")
    unconfined = request.node.callspec.params["attacks"] == platforms.UNCONFINED_READS
    if unconfined and result["holes"] and name in platforms.READ_GAPS:
        assert all("secret" in hole for hole in result["holes"]), result["holes"]
        pytest.xfail(f"documented gap: {name} reads a secret where reads are unconfined")
    assert not result["holes"], f"{name}: {result['holes']}\n{result}"


def test_no_late_file_and_no_survivor(attacks: list[Attack]) -> None:
    """Every run reached its late checks: nothing a daemon wrote late appears outside scratch,
    no process lingers after the set."""
    for attack in attacks:
        assert attack.inner.get("late"), f"the runner never made its late checks\n{attack.logs}"
        for late in attack.inner["late"]:
            assert not late["files"], late
            assert not late["survivors"], late


def test_nothing_of_the_sandbox_outlives_close(attacks: list[Attack]) -> None:
    """After Sandbox.close() and the runner's exit (each reported) nothing is left, and no
    watchdog fired."""
    for attack in attacks:
        assert not attack.outer.get("watchdog"), attack.outer["watchdog"]
        assert attack.inner.get("closed"), f"the runner never reported its close\n{attack.logs}"
        assert attack.outer.get("leftovers"), f"no leftovers report\n{attack.logs}"
        for closed in attack.inner["closed"]:
            assert not closed["processes"], closed
        for leftovers in attack.outer["leftovers"]:
            assert not leftovers["processes"], leftovers


CONTROLS = ("connect_loopback_listener", "connect_ipv6_loopback", "udp_send_loopback")
CONTROLS += ("unix_abstract_socket", "print_environ", "write_tmp", "daemon_escape")


def test_the_attacks_work_where_no_sandbox_stops_them(tmp_path: Path) -> None:
    """Without the sandbox (still confined) the attacks reach the listeners, print the canary,
    leave a file in /tmp and a daemon behind: the harness sees a hole when there is one."""
    listeners = Listeners()
    try:
        target = Target(
            f"hostile-control-{os.getpid()}",
            listeners.service,
            listeners.tcp,
            listeners.tcp6,
            listeners.udp,
            listeners.unix_name,
            repo=str(tmp_path),
            home=str(tmp_path),
            site=str(tmp_path),
        )
        env = {**os.environ, **confine.canaries(), "PYTHONPATH": str(REPO)}
        printed, reports = "", {}
        for name in CONTROLS:
            reports[name] = tmp_path / f"{name}.jsonl"
            source = BY_NAME[name].source(target)
            command = confine.command(
                reports[name], [sys.executable, "-c", source], 30, private_tmp=False
            )
            printed += subprocess.run(
                command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60
            ).stdout
        time.sleep(0.2)
    finally:
        listeners.close()
        left = files_outside(target, [])
    reached = {name for name, hits in listeners.hits.items() if hits}
    assert reached == {"tcp", "tcp6", "udp", "unix"}, listeners.hits
    assert env["HOSTILE_ENV_CANARY"] in printed
    assert f"/tmp/{target.run_id}" in left and f"/tmp/{target.run_id}-daemon" in left, left
    daemon = confine.read_report(reports["daemon_escape"])["leftovers"][0]["processes"]
    assert any("hx-daemon" in line for line in daemon), daemon
