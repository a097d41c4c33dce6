"""Throughput through Ray Serve and the direct path against plain `reward-service serve`, one run.

Every side gets the same worker count (the replicas' whole CPUs) and the same
GRPO-shaped answers (`bench.workload`), new to all each round, driven by a
SLIME-like client, the sides taking turns first so that drift on a shared
machine hits all. Serve's cost is its proxy: every request crosses the proxy
actor's own event loop and a Ray actor call into the replica, on the same
cores as the grading. The direct path's requests reach `reward-service serve`
itself; its actors only hold the servers.

`slime_rewards` is that client: one aiohttp session, 64 connections, 120 s
per attempt, 10 attempts, any exception, status >= 400 or non-JSON answer
retried after SLIME's backoff (scaled by `backoff_scale`, for tests).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import random
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from reward_service.bench.workload import grpo_workload, request_body
from reward_service.rayserve.cluster import Dashboard
from reward_service.rayserve.direct_cluster import direct_status
from reward_service.rayserve.direct_spec import ACTOR_CLASS
from reward_service.rayserve.spec import DEPLOYMENT_NAME, RayServeError

SLIME_BACKOFF_S = (1.0, 2.0, 4.0, 8.0, 16.0, 30.0, 30.0, 30.0, 30.0)
SLIME_ATTEMPTS = 10


class RewardLost(RayServeError):
    """A sample failed all of SLIME's attempts: SLIME would stop training."""


@dataclass(frozen=True)
class Rewards:
    rewards: list[float]
    retries: int
    elapsed_s: float


async def slime_rewards(
    url: str,
    bodies: Sequence[dict[str, Any]],
    *,
    connections: int = 64,
    backoff_scale: float = 1.0,
) -> Rewards:
    """Post each body as SLIME's remote_rm does, with its retries; `RewardLost` past the 10th."""
    import aiohttp

    retries = 0
    connector = aiohttp.TCPConnector(limit=connections)
    timeout = aiohttp.ClientTimeout(total=120)
    async with aiohttp.ClientSession(connector=connector, timeout=timeout) as session:

        async def post(body: dict[str, Any]) -> float:
            nonlocal retries
            for attempt in range(SLIME_ATTEMPTS):
                try:
                    async with session.post(url, json=body) as resp:
                        resp.raise_for_status()
                        reward: float = await resp.json()
                        return reward
                except Exception as exc:  # SLIME retries whatever fails
                    if attempt == SLIME_ATTEMPTS - 1:
                        raise RewardLost(
                            f"{SLIME_ATTEMPTS} attempts failed, last: {exc!r}"
                        ) from exc
                    retries += 1
                    wait = SLIME_BACKOFF_S[attempt] * backoff_scale
                    await asyncio.sleep(wait + random.uniform(0, wait / 4))
            raise AssertionError("unreachable")

        started = time.perf_counter()
        rewards = await asyncio.gather(*(post(body) for body in bodies))
    return Rewards(list(rewards), retries, time.perf_counter() - started)


_ROLES = {
    "ray::ProxyActor": "proxy",
    "haproxy": "proxy",
    "ray::ServeReplica": "replicas",
    f"ray::{ACTOR_CLASS}": "actors",
}
"""Command lines, by role; `haproxy` is Serve's C ingress (RAY_SERVE_ENABLE_HA_PROXY=1).
A direct-path actor's descendants (its `reward-service serve` and workers) are `servers`."""
SIDES = {
    "direct": ("direct",),
    "serve": ("proxy", "replicas"),
    "ray-direct": ("servers", "actors"),
}
"""What each side of the bench is (plain serve here, Ray Serve, the direct path): its roles."""


def _processes() -> dict[int, tuple[int, str, float]]:
    """Every process here: pid -> (parent pid, command line start, CPU seconds so far)."""
    tick = os.sysconf("SC_CLK_TCK")
    found = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError, ValueError, IndexError):
            fields = stat.read_text().rsplit(")", 1)[1].split()
            command = (stat.parent / "cmdline").read_bytes()[:64].decode(errors="replace")
            cpu = (int(fields[11]) + int(fields[12])) / tick
            found[int(stat.parent.name)] = (int(fields[1]), command, cpu)
    return found


def cpu_by_role(direct_pid: int) -> dict[str, float]:
    """CPU seconds so far of each role (`_ROLES`, `servers`, the direct server), with children."""
    processes = _processes()
    roots = {
        pid: role
        for pid, (_, cmd, _) in processes.items()
        for pattern, role in _ROLES.items()
        if pattern in cmd
    }
    roots[direct_pid] = "direct"
    totals = dict.fromkeys(["proxy", "replicas", "actors", "servers", "direct"], 0.0)
    for pid, (_, _, cpu) in processes.items():
        ancestor, seen = pid, 0
        while ancestor not in roots and ancestor in processes and seen < 64:
            ancestor, seen = processes[ancestor][0], seen + 1
        if ancestor in roots:
            role = roots[ancestor]
            totals["servers" if role == "actors" and pid != ancestor else role] += cpu
    return totals


def _items(seed: int, answers: int) -> list[dict[str, Any]]:
    return grpo_workload(seed=seed, answers=answers)


@dataclass(frozen=True)
class _Measured:
    rate: float
    wrong: int
    cpu_ms: dict[str, float]
    """CPU milliseconds per answer, by role."""


def _run(url: str, items: list[dict[str, Any]], direct_pid: int) -> _Measured:
    """Answers per second, rewards that differ from the known ones, CPU per answer by role."""
    before = cpu_by_role(direct_pid)
    result = asyncio.run(slime_rewards(url, [request_body(item) for item in items]))
    after = cpu_by_role(direct_pid)
    wrong = sum(r != item["expected"] for r, item in zip(result.rewards, items, strict=True))
    cpu_ms = {role: 1000 * (after[role] - before[role]) / len(items) for role in after}
    return _Measured(len(items) / result.elapsed_s, wrong, cpu_ms)


@dataclass(frozen=True)
class _RaySide:
    name: str
    url: str
    replicas: int
    per_replica: int


def _serve_side(dashboard: Dashboard) -> _RaySide | None:
    """The Serve application's endpoint and sizes, or None when it is not deployed."""
    status = dashboard.status()
    if status is None:
        return None
    if not status.settled:
        raise RayServeError(f"the Serve application is not settled:\n{status.describe()}")
    app = dashboard.details()["applications"]["reward-service"]
    options = app["deployments"][DEPLOYMENT_NAME]["deployment_config"]["ray_actor_options"]
    running = sum(r.state == "RUNNING" for r in status.replicas)
    per_replica = max(1, int(float(options.get("num_cpus", 1))))
    return _RaySide("serve", f"{status.endpoint}/score", running, per_replica)


def _direct_side(dashboard: Dashboard) -> _RaySide | None:
    """The direct path's busiest URL and the replicas behind it, or None when none is alive."""
    status = direct_status(dashboard)
    if not status.serving:
        return None
    url = status.endpoint
    behind = [r for r in status.replicas if r.state == "ALIVE" and r.url == url]
    return _RaySide("ray-direct", f"{url}/score", len(behind), min(r.workers for r in behind))


def _with_token(url: str, token: str) -> str:
    """`http://host:port/score` in the token path form, `/t/<token>/score`."""
    base, _, path = url.rpartition("/score")
    return f"{base}/t/{token}/score{path}"


def _sides(address: str) -> list[_RaySide]:
    with Dashboard(address) as dashboard:
        sides = [side for side in (_serve_side(dashboard), _direct_side(dashboard)) if side]
    if not sides:
        raise RayServeError(
            "deploy the service first: reward-service ray deploy ... (Serve) "
            "and/or reward-service ray direct deploy ... (direct)"
        )
    if len({side.replicas * side.per_replica for side in sides}) > 1:
        shown = ", ".join(f"{s.name} {s.replicas} x {s.per_replica}" for s in sides)
        raise RayServeError(f"the paths hold different worker counts ({shown}): deploy alike")
    return sides


def compare(address: str, *, answers: int, seed: int, rounds: int) -> dict[str, list[float]]:
    """Print each side's throughput and CPU per answer per round, and each Ray path's ratios
    to plain `reward-service serve`; return the throughput ratios by path."""
    from reward_service.local_server import live_server

    ray_sides = _sides(address)
    workers = ray_sides[0].replicas * ray_sides[0].per_replica
    shown = ", ".join(f"{s.name}: {s.replicas} replica(s) x {s.per_replica}" for s in ray_sides)
    print(
        f"ray bench: {answers} answers per side and round, {workers} grading worker(s) per side "
        f"({shown}), seed {seed}",
        flush=True,
    )
    ratios: dict[str, list[float]] = {side.name: [] for side in ray_sides}
    cpu_ratios: dict[str, list[float]] = {side.name: [] for side in ray_sides}
    token = os.environ.get("REWARD_API_TOKEN")
    with live_server(workers=workers) as server:
        pid = server.process.pid
        order = [("direct", f"{server.url}/score")] + [(s.name, s.url) for s in ray_sides]
        if token:  # every side asks for it: the local server reads the same variable
            order = [(name, _with_token(url, token)) for name, url in order]
        for _, url in order:
            _run(url, _items(seed - 1, min(answers, 256)), pid)
        for r in range(rounds):
            rate: dict[str, float] = {}
            cpu: dict[str, float] = {}
            items = _items(seed + r, answers)
            for name, url in order[r % len(order) :] + order[: r % len(order)]:
                run = _run(url, items, pid)
                rate[name] = run.rate
                cpu[name] = sum(run.cpu_ms[role] for role in SIDES[name])
                by_role = ", ".join(f"{role} {run.cpu_ms[role]:.2f}" for role in SIDES[name])
                print(
                    f"  round {r + 1} {name:<10} {run.rate:8.1f} answers/s  wrong: {run.wrong}"
                    f"  cpu ms per answer: {by_role}",
                    flush=True,
                )
            for side in ray_sides:
                ratios[side.name].append(rate[side.name] / rate["direct"])
                cpu_ratios[side.name].append(cpu[side.name] / max(cpu["direct"], 1e-9))
                print(
                    f"  round {r + 1} {side.name}/direct: throughput x{ratios[side.name][-1]:.2f}"
                    f", cpu per answer x{cpu_ratios[side.name][-1]:.2f}",
                    flush=True,
                )
    for name, found in ratios.items():
        cpus = cpu_ratios[name]
        print(
            f"{name}/direct throughput: x{min(found):.2f}-x{max(found):.2f}, "
            f"cpu per answer: x{min(cpus):.2f}-x{max(cpus):.2f}",
            flush=True,
        )
    return ratios
