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
import random
import time
from collections.abc import Sequence
from dataclasses import dataclass
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


def _items(seed: int, answers: int) -> list[dict[str, Any]]:
    return grpo_workload(seed=seed, answers=answers)


def _run(url: str, items: list[dict[str, Any]]) -> tuple[float, int]:
    """Answers per second, and how many rewards differ from the known ones."""
    result = asyncio.run(slime_rewards(url, [request_body(item) for item in items]))
    wrong = sum(r != item["expected"] for r, item in zip(result.rewards, items, strict=True))
    return len(items) / result.elapsed_s, wrong


def _replica_workers(dashboard: Dashboard) -> tuple[str, int, int]:
    """The running application's endpoint, replica count, and workers per replica."""
    status = dashboard.status()
    if status is None or not status.running:
        raise RayServeError("deploy the application first: reward-service ray deploy ...")
    app = dashboard.details()["applications"]["reward-service"]
    options = app["deployments"][DEPLOYMENT_NAME]["deployment_config"]["ray_actor_options"]
    running = sum(r.state == "RUNNING" for r in status.replicas)
    return status.endpoint, running, max(1, int(float(options.get("num_cpus", 1))))


def compare(address: str, *, answers: int, seed: int, rounds: int) -> list[float]:
    """Print both sides' throughput per round and the Serve/direct ratio; return the ratios."""
    from reward_service.testing import live_server

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
        for url in (direct_url, serve_url):
            _run(url, _items(seed - 1, min(answers, 256)))
        for r in range(rounds):
            order = [("direct", direct_url), ("serve", serve_url)]
            measured: dict[str, float] = {}
            items = _items(seed + r, answers)
            for name, url in order if r % 2 == 0 else order[::-1]:
                rate, wrong = _run(url, items)
                measured[name] = rate
                print(
                    f"  round {r + 1} {name:<6} {rate:8.1f} answers/s  wrong: {wrong}", flush=True
                )
            ratios.append(measured["serve"] / measured["direct"])
            print(f"  round {r + 1} serve/direct: x{ratios[-1]:.2f}", flush=True)
    print(f"serve/direct throughput: x{min(ratios):.2f}-x{max(ratios):.2f}", flush=True)
    return ratios
