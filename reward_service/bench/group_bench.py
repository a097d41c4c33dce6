"""`reward-service bench --workload grpo`: one prompt's group per request, two ways.

GRPO-shaped answers (the mixed workload, `workload.grpo_workload`) in groups of 8 and
then 16, each group posted as one request, `IN_FLIGHT` requests at once, as SLIME's batch
adapter does with `--group-rm`, in one run against one service:

* /score/batch: the group's answers as a batch, each answer its own grading task;
* /score/group: the group endpoint, which grades a group of math_verify answers in one
  worker task, so each distinct final answer is graded once (the verdict cache holds
  the rest), and answers the group's facts.

Each side grades answers fresh to it, of one shape (`workload.matched_workloads`), in
`--rounds` parts taking turns; each group size is timed twice: a fresh RL step of
`--step-answers` answers (256) on a server just started, then `--answers` answers on the
bench's long-running server.
Lines: throughput, the group side's ratio to the batch side, p50/p99 per request,
wrong verdicts, CPU per answer (`measure.CpuShare`), and the verdict cache's hits and
the grading paths from /metrics; the group side also counts the gradings it made.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from typing import Any

from reward_service.bench.measure import (
    CpuShare,
    Run,
    hit_rates,
    post_in_chunks,
    report_line,
    service_counters,
    timed,
    wrong,
)
from reward_service.bench.workload import matched_workloads
from reward_service.cpus import available_cpus

GROUP_SIZES = (8, 16)
IN_FLIGHT = 16
"""Group requests in flight at once on each side."""
_SEEDS_PER_SIZE = 3
"""Seeds per group size (one is used now: `matched_workloads` makes the three sets)."""
_STEP_SEEDS = 10_000
"""How far the fresh steps' seeds sit from the others, so that no answer is shared."""


def grouped(items: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """`items` (as `grpo_workload` shuffles them) back in their groups, in first-seen order:
    a group is the answers of one prompt."""
    groups: dict[str, list[dict[str, Any]]] = {}
    for item in items:
        groups.setdefault(json.dumps(item["prompt"]), []).append(item)
    return list(groups.values())


def group_body(group: list[dict[str, Any]]) -> dict[str, Any]:
    """The group endpoint's body for one group (no `expected`)."""
    return {
        "prompt": group[0]["prompt"],
        "label": group[0]["label"],
        "responses": [item["response"] for item in group],
        "k": [1, len(group)],
    }


async def post_groups(
    url: str, groups: list[list[dict[str, Any]]], in_flight: int
) -> tuple[Run, int]:
    """Each group posted to `/score/group`, `in_flight` at once: the run and the gradings
    the service made."""
    import aiohttp

    latencies: list[float] = []
    gate = asyncio.Semaphore(in_flight)
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=300)) as session:

        async def post(group: list[dict[str, Any]]) -> dict[str, Any]:
            body = group_body(group)
            async with gate, session.post(f"{url}/score/group", json=body) as resp:
                resp.raise_for_status()
                answer: dict[str, Any] = await resp.json()
                return answer

        started = time.perf_counter()
        answers = await asyncio.gather(*(timed(post(group), latencies) for group in groups))
        elapsed = time.perf_counter() - started
    rewards = [r for answer in answers for r in answer["rewards"]]
    items = [item for group in groups for item in group]
    gradings = sum(int(answer["group"]["gradings"]) for answer in answers)
    return Run(len(items), elapsed, wrong(rewards, items), tuple(latencies)), gradings


def _rounds(groups: list[list[dict[str, Any]]], rounds: int) -> list[list[list[dict[str, Any]]]]:
    rounds = max(1, min(rounds, len(groups)))
    return [groups[i::rounds] for i in range(rounds)]


def _moved(total: dict[str, float], before: dict[str, float], after: dict[str, float]) -> None:
    """Add the counters' change from `before` to `after` to `total`."""
    for key, value in after.items():
        total[key] = total.get(key, 0.0) + value - before.get(key, 0.0)


def _compare(
    server: Any,
    size: int,
    seed: int,
    workers: int,
    args: argparse.Namespace,
    answers: int,
    title: str = "",
) -> None:
    """One group size's two lines, each with the service's hit rates on that side."""
    answers = -(-answers // size) * size  # whole groups: each batch request is one group
    warm_up, batch_groups, group_groups = (
        grouped(items) for items in matched_workloads(seed, answers, 3, group_size=size)
    )
    asyncio.run(post_groups(server.url, warm_up[:workers], IN_FLIGHT))
    batch = group = Run(0, 0.0, 0)
    gradings = 0
    batch_cpu, group_cpu = CpuShare(), CpuShare()
    batch_counts: dict[str, float] = {}
    group_counts: dict[str, float] = {}
    for batch_part, group_part in zip(
        _rounds(batch_groups, args.rounds), _rounds(group_groups, args.rounds), strict=True
    ):
        items = [item for part in batch_part for item in part]
        before = service_counters(server.url)
        with batch_cpu.measure(server, len(items)):
            batch += asyncio.run(post_in_chunks(server.url, items, size, IN_FLIGHT))
        middle = service_counters(server.url)
        with group_cpu.measure(server, sum(map(len, group_part))):
            run, made = asyncio.run(post_groups(server.url, group_part, IN_FLIGHT))
        group += run
        gradings += made
        _moved(batch_counts, before, middle)
        _moved(group_counts, middle, service_counters(server.url))
    ratio = f"  x{group.rate / batch.rate:.2f} vs /score/batch"
    print(f"groups of {size}{title}:", flush=True)
    print(report_line("/score/batch", batch, None) + batch_cpu.text, flush=True)
    print(f"    service: {hit_rates({}, batch_counts)}", flush=True)
    print(report_line("/score/group", group, None) + ratio + group_cpu.text, flush=True)
    print(
        f"    service: {hit_rates({}, group_counts)}; {gradings} gradings for {group.answers} "
        "answers",
        flush=True,
    )


def run(args: argparse.Namespace) -> None:
    """The grpo workload's lines, for each group size (see the module docstring)."""
    from reward_service.local_server import live_server

    workers = args.workers or available_cpus()
    print(
        f"workload grpo: {args.answers} answers per side and group size, {workers} workers, "
        f"{IN_FLIGHT} group requests in flight, seed {args.seed}",
        flush=True,
    )
    step = args.step_answers not in (0, args.answers)
    for position, size in enumerate(GROUP_SIZES):
        if not step:
            break
        with live_server(workers=workers) as server:
            seed = args.seed + _STEP_SEEDS + position
            title = f", a fresh step of {args.step_answers} answers (a server just started)"
            _compare(server, size, seed, workers, args, args.step_answers, title)
    with live_server(workers=workers) as server:
        for position, size in enumerate(GROUP_SIZES):
            seed = args.seed + 1 + position * _SEEDS_PER_SIZE
            _compare(server, size, seed, workers, args, args.answers)
