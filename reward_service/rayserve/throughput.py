"""Throughput through Ray Serve against plain `reward-service serve`, same cores, one run.

Both sides get the same worker count (the replicas' whole CPUs) and the same
GRPO-shaped answers (`bench.workload`), new to both each round, driven by a SLIME-like client, the
sides alternating so that drift on a shared machine hits both. Serve's cost
is its proxy: every request crosses the proxy actor's own event loop and a
Ray actor call into the replica, on the same cores as the grading.

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


_ROLES = {"ray::ProxyActor": "proxy", "haproxy": "proxy", "ray::ServeReplica": "replicas"}
"""Command lines, by role; `haproxy` is Serve's C ingress (RAY_SERVE_ENABLE_HA_PROXY=1)."""


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
    """CPU seconds so far of Serve's proxies, its replicas and the direct server (with children)."""
    processes = _processes()
    roots = {
        pid: role
        for pid, (_, cmd, _) in processes.items()
        for pattern, role in _ROLES.items()
        if pattern in cmd
    }
    roots[direct_pid] = "direct"
    totals = dict.fromkeys(["proxy", "replicas", "direct"], 0.0)
    for pid, (_, _, cpu) in processes.items():
        ancestor, seen = pid, 0
        while ancestor not in roots and ancestor in processes and seen < 64:
            ancestor, seen = processes[ancestor][0], seen + 1
        if ancestor in roots:
            totals[roots[ancestor]] += cpu
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


def _replica_workers(dashboard: Dashboard) -> tuple[str, int, int]:
    """The running application's endpoint, replica count, and workers per replica."""
    status = dashboard.status()
    if status is None or not status.settled:
        raise RayServeError("deploy the application first: reward-service ray deploy ...")
    app = dashboard.details()["applications"]["reward-service"]
    options = app["deployments"][DEPLOYMENT_NAME]["deployment_config"]["ray_actor_options"]
    running = sum(r.state == "RUNNING" for r in status.replicas)
    return status.endpoint, running, max(1, int(float(options.get("num_cpus", 1))))


def compare(address: str, *, answers: int, seed: int, rounds: int) -> list[float]:
    """Print both sides' throughput per round and the Serve/direct ratio; return the ratios."""
    from reward_service.local_server import live_server

    with Dashboard(address) as dashboard:
        endpoint, replicas, per_replica = _replica_workers(dashboard)
    workers = replicas * per_replica
    serve_url = f"{endpoint}/score"
    print(
        f"ray bench: {answers} answers per side and round, {workers} grading worker(s) per side "
        f"({replicas} replica(s) x {per_replica}), seed {seed}",
        flush=True,
    )
    ratios = []
    with live_server(workers=workers) as server:
        direct_url = f"{server.url}/score"
        pid = server.process.pid
        for url in (direct_url, serve_url):
            _run(url, _items(seed - 1, min(answers, 256)), pid)
        for r in range(rounds):
            order = [
                ("direct", direct_url, ("direct",)),
                ("serve", serve_url, ("proxy", "replicas")),
            ]
            measured: dict[str, float] = {}
            items = _items(seed + r, answers)
            for name, url, roles in order if r % 2 == 0 else order[::-1]:
                run = _run(url, items, pid)
                measured[name] = run.rate
                cpu = ", ".join(f"{role} {run.cpu_ms[role]:.2f}" for role in roles)
                print(
                    f"  round {r + 1} {name:<6} {run.rate:8.1f} answers/s  wrong: {run.wrong}"
                    f"  cpu ms per answer: {cpu}",
                    flush=True,
                )
            ratios.append(measured["serve"] / measured["direct"])
            print(f"  round {r + 1} serve/direct: x{ratios[-1]:.2f}", flush=True)
    print(f"serve/direct throughput: x{min(ratios):.2f}-x{max(ratios):.2f}", flush=True)
    return ratios
