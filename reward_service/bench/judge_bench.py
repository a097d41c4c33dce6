"""`reward-service bench --workload judge`: the judge scorer against its endpoint's capacity.

A stand-in judge (`chat_stand_in`) answers after `--judge-latency-s`, at most
`--judge-capacity` requests at a time, so its capacity is capacity / latency
answers a second. In one run:

* endpoint: that capacity as measured, distinct prompts straight at the
  stand-in from `--judge-capacity` connections (what any client could get);
* /score/judge/batch: the service grading as many distinct answers (chunks of
  64, eight in flight), its concurrency cap set to the endpoint's capacity,
  and the ratio of the two rates;
* GRPO: groups of 8 answers per prompt, whose final answers repeat as a
  policy's do (the gold about half the time, one of two wrong values
  otherwise), through SLIME's client shape at /score/judge: the judge calls
  made and the verdict cache's hit rate, from the service's /metrics.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import time
from typing import Any

from reward_service.bench.chat_stand_in import chat_stand_in
from reward_service.bench.measure import (
    CpuShare,
    Run,
    hit_rates,
    post_each,
    post_in_chunks,
    report_line,
    service_counters,
)

GROUP = 8


def add_options(bench: argparse.ArgumentParser) -> None:
    """The judge workload's own options."""
    bench.add_argument(
        "--judge-latency-s", type=float, default=0.5, help="judge workload: the endpoint's latency"
    )
    bench.add_argument(
        "--judge-capacity", type=int, default=64, help="judge workload: requests it serves at once"
    )


def _answers(seed: int, count: int, distinct: bool) -> list[dict[str, Any]]:
    """Items with known rewards: distinct final answers, or GRPO groups whose answers repeat."""
    rng = random.Random(seed)
    items = []
    for n in range(count):
        group = n if distinct else n // GROUP
        gold = 10 + group % 90
        if distinct:
            answer = gold if n % 2 else gold + 1 + n
        else:
            answer = rng.choices([gold, gold + 1, gold + 2], weights=[5, 3, 2])[0]
        reasoning = " ".join(rng.choice(("so", "then", "thus", "we add")) for _ in range(40))
        items.append(
            {
                "prompt": f"Question {seed}-{group}: what is the value?",
                "response": f"<think>{reasoning}</think>{answer}",
                "label": str(gold),
                "expected": 1.0 if answer == gold else 0.0,
            }
        )
    return items


async def _endpoint_rate(base_url: str, count: int, connections: int) -> tuple[int, float]:
    """`count` distinct chat completions straight at the endpoint: (answers, seconds)."""
    import aiohttp

    connector = aiohttp.TCPConnector(limit=connections)
    async with aiohttp.ClientSession(connector=connector) as session:

        async def ask(n: int) -> None:
            body = {"model": "judge", "messages": [{"role": "user", "content": f"prompt {n}"}]}
            async with session.post(f"{base_url}/chat/completions", json=body) as resp:
                resp.raise_for_status()
                await resp.read()

        started = time.perf_counter()
        await asyncio.gather(*(ask(n) for n in range(count)))
        return count, time.perf_counter() - started


def run(args: argparse.Namespace) -> None:
    """The judge workload's three lines (see the module docstring)."""
    from reward_service.local_server import live_server

    latency, capacity = args.judge_latency_s, args.judge_capacity
    print(
        f"workload judge: endpoint {capacity} at once x {latency:.2f} s = "
        f"{capacity / latency:.1f} answers/s capacity, {args.answers} answers per side",
        flush=True,
    )
    with chat_stand_in(latency, capacity) as endpoint:
        env = {
            "REWARD_JUDGE__BASE_URL": endpoint.base_url,
            "REWARD_JUDGE__MODEL": "judge",
            "REWARD_JUDGE__CONCURRENCY": str(capacity),
            "REWARD_MAX_QUEUE": str(max(2048, 2 * args.answers)),
            "REWARD_ACCESS_LOG": "off",
        }
        with live_server(workers=1, env=env) as server:
            answers, seconds = asyncio.run(
                _endpoint_rate(endpoint.base_url, args.answers, capacity)
            )
            plain = Run(answers, seconds, 0)
            print(report_line("endpoint", plain, None), flush=True)
            items = _answers(args.seed, args.answers, distinct=True)
            cpu = CpuShare()
            with cpu.measure(server, len(items)):
                batch = asyncio.run(post_in_chunks(server.url, items, 64, 8, "/score/judge/batch"))
            line = report_line("/score/judge/batch", batch, plain)
            print(line.replace("vs plain", "of the endpoint") + cpu.text, flush=True)
            before, calls = service_counters(server.url), endpoint.calls
            grpo_items = _answers(args.seed + 1, args.answers, distinct=False)
            grpo = asyncio.run(post_each(server.url, grpo_items, args.connections, "/score/judge"))
            print(report_line("GRPO", grpo, None), flush=True)
            print(
                f"  GRPO ({GROUP} answers per prompt): {endpoint.calls - calls} judge calls "
                f"for {grpo.answers} answers; "
                f"{hit_rates(before, service_counters(server.url))}",
                flush=True,
            )
