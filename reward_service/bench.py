"""`reward-service bench`: the service against plain math_verify, side by side.

Both sides grade a fresh GRPO-shaped workload of the same shape in one run
on this machine: (a) plain math_verify `parse` + `verify` in as many
processes as CPUs, (b) the service over HTTP with a SLIME-like client (one
aiohttp session, 64 connections). It prints both throughputs and b / a.
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing
import time
from typing import Any

from reward_service.cpus import available_cpus
from reward_service.workload import grpo_workload, request_body

_plain_state: dict[str, Any] = {}


def _plain_init() -> None:
    from math_verify import ExprExtractionConfig, LatexExtractionConfig, parse, verify

    _plain_state.update(
        parse=parse,
        verify=verify,
        answer=(
            LatexExtractionConfig(boxed_match_priority=0, try_extract_without_anchor=False),
            ExprExtractionConfig(try_extract_without_anchor=False),
        ),
        gold=(LatexExtractionConfig(), ExprExtractionConfig()),
    )


def _plain_grade(item: dict[str, Any]) -> float:
    """What a peer does per answer: parse both sides with math_verify and verify."""
    parse, verify = _plain_state["parse"], _plain_state["verify"]
    label = item["label"]
    text = str(int(label)) if isinstance(label, float) and label.is_integer() else str(label)
    gold = parse(f"\\boxed{{{text}}}", _plain_state["gold"], extraction_mode="first_match")
    answer = parse(item["response"], _plain_state["answer"], extraction_mode="first_match")
    return 1.0 if verify(gold, answer) else 0.0


def run_plain(items: list[dict[str, Any]], processes: int) -> tuple[float, int]:
    """Seconds for plain math_verify in `processes` processes, and wrong verdicts."""
    with multiprocessing.get_context("forkserver").Pool(processes, _plain_init) as pool:
        pool.map(_plain_grade, items[: processes * 2], chunksize=1)
        started = time.perf_counter()
        rewards = pool.map(_plain_grade, items, chunksize=4)
        elapsed = time.perf_counter() - started
    wrong = sum(r != item["expected"] for r, item in zip(rewards, items, strict=True))
    return elapsed, wrong


async def _post_all(url: str, items: list[dict[str, Any]], connections: int) -> list[float]:
    import aiohttp

    connector = aiohttp.TCPConnector(limit=connections)
    timeout = aiohttp.ClientTimeout(total=120)
    async with aiohttp.ClientSession(connector=connector, timeout=timeout) as session:

        async def post(item: dict[str, Any]) -> float:
            async with session.post(url, json=request_body(item)) as resp:
                resp.raise_for_status()
                reward: float = await resp.json()
                return reward

        return await asyncio.gather(*(post(item) for item in items))


def run_service(items: list[dict[str, Any]], workers: int, connections: int) -> tuple[float, int]:
    """Seconds for the service over HTTP with a SLIME-like client, and wrong rewards."""
    from reward_service.testing import live_server

    with live_server(workers=workers) as server:
        url = f"{server.url}/score"
        asyncio.run(_post_all(url, items[: workers * 2], connections))
        started = time.perf_counter()
        rewards = asyncio.run(_post_all(url, items, connections))
        elapsed = time.perf_counter() - started
    wrong = sum(r != item["expected"] for r, item in zip(rewards, items, strict=True))
    return elapsed, wrong


def _bench(args: argparse.Namespace) -> None:
    workers = args.workers or available_cpus()
    print(f"bench: {args.answers} answers per side, {workers} processes, seed {args.seed}")
    plain_items = grpo_workload(args.seed, args.answers)
    service_items = grpo_workload(args.seed + 1, args.answers)
    plain_s, plain_wrong = run_plain(plain_items, workers)
    plain_rate = args.answers / plain_s
    print(
        f"plain math_verify, {workers} processes: {args.answers} answers in {plain_s:.2f} s "
        f"= {plain_rate:.1f} answers/s (wrong verdicts: {plain_wrong})"
    )
    service_s, service_wrong = run_service(service_items, workers, args.connections)
    service_rate = args.answers / service_s
    print(
        f"service /score, {workers} workers, {args.connections} connections: {args.answers} "
        f"answers in {service_s:.2f} s = {service_rate:.1f} answers/s "
        f"(wrong rewards: {service_wrong})"
    )
    print(f"ratio service / plain: {service_rate / plain_rate:.2f}")


def register(commands: Any) -> None:
    """Add the `bench` command to the CLI."""
    bench = commands.add_parser("bench", help="benchmark the service against plain math_verify")
    bench.add_argument("--answers", type=int, default=2000, help="answers per side")
    bench.add_argument("--workers", type=int, help="processes per side (default: usable CPUs)")
    bench.add_argument("--connections", type=int, default=64, help="client connections")
    bench.add_argument("--seed", type=int, default=20261130, help="workload seed")
    bench.set_defaults(run=_bench)
