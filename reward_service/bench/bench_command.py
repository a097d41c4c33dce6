"""`reward-service bench`: the service against plain math_verify, side by side.

For each workload in `WORKLOADS` (mixed answer kinds; integer-only labels
as in DAPO-Math and GSM8K), or the one `--workload` names, every side
grades a GRPO-shaped set of answers fresh to it (its own seed: labels unique
per group, 8 answers per group, ~10% truncated), in one run on this machine:

* plain: the workload's plain grader (math_verify `parse` + `verify`; for
  `code`, a fresh subprocess per test, `bench/code_workload.py`; for `code-cpp`, g++ once
  per answer then a fresh subprocess per test, `bench/cpp_workload.py`, and so for
  `code-cpp-headers`, half of whose answers list their headers; for `ifeval`, the
  same checkers through if-verifiable's own API, `bench/instruction_workload.py`) in as
  many processes as CPUs, what a peer does in-process;
* /score: the service over HTTP with a SLIME-like client (one aiohttp
  session, 64 connections);
* /score/batch: the service, chunks of 64 answers, eight chunks in flight.

The math workloads' sides grade sets of one shape (`workload.matched_workloads`: the same
kinds of problem, group by group), and each is timed twice: first a fresh RL step of
`--step-answers` answers (256) on a server just started, its workers just warm, then
`--answers` answers on the bench's long-running server, whose caches by then hold the
labels the workload repeats.

It prints throughputs, ratios to plain, p50/p99 latency, wrong verdicts and
the service's cache and fast-path hit rates (from its /metrics); the clients,
counters and lines are `bench/measure.py`'s, shared with `--workload judge`.
`--memory-answers N` then streams N more answers and compares the service's
resident memory (all processes) with its size after warm-up.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import itertools
import multiprocessing
import time
from collections.abc import Iterator
from typing import Any

from reward_service.bench import group_bench, judge_bench, run_code_bench
from reward_service.bench.code_workload import code_workload, grade_naive, warm_naive
from reward_service.bench.cpp_workload import (
    cpp_header_mix_workload,
    cpp_workload,
    grade_naive_cpp,
    warm_naive_cpp,
)
from reward_service.bench.instruction_workload import grade_plain, instruction_workload, warm_plain
from reward_service.bench.measure import (
    CpuShare,
    Run,
    hit_rates,
    post_each,
    post_in_chunks,
    report_line,
    rounds_of,
    service_counters,
    wrong,
)
from reward_service.bench.workload import Workload, grpo_workload, matched_workloads
from reward_service.cpus import available_cpus
from reward_service.subcommands import Subparsers

_SEEDS_PER_WORKLOAD = 4
"""Fresh answer sets per workload: plain, the server's warm-up, /score, /score/batch."""
_STEP_SEEDS = 10_000
"""How far a fresh step's seeds sit from its workload's, so that no answer is shared."""
STEP_ANSWERS = 256
"""A fresh step's answers by default: 32 prompts x 8, a small GRPO step."""


def _plain_init() -> None:
    import reward_service.bench.reference  # noqa: F401  (math_verify, warm)


def _plain_grade(item: dict[str, Any]) -> float:
    """What a peer does per answer: parse both sides with math_verify and verify."""
    from reward_service.bench.reference import Case, plain_grade

    return plain_grade(Case(item["response"], item["label"], "bench"))[0]


def _integer_answers(seed: int, answers: int) -> list[dict[str, Any]]:
    return grpo_workload(seed, answers, kinds=("integer",))


def _mixed_sets(seed: int, answers: int, sets: int) -> list[list[dict[str, Any]]]:
    return matched_workloads(seed, answers, sets)


def _integer_sets(seed: int, answers: int, sets: int) -> list[list[dict[str, Any]]]:
    return matched_workloads(seed, answers, sets, kinds=("integer",))


WORKLOADS: dict[str, Workload] = {
    "mixed": Workload(grpo_workload, _plain_grade, _plain_init, _mixed_sets, steps=True),
    "integer": Workload(_integer_answers, _plain_grade, _plain_init, _integer_sets, steps=True),
    "code": Workload(code_workload, grade_naive, warm_naive),
    "ifeval": Workload(instruction_workload, grade_plain, warm_plain),
    "code-cpp": Workload(cpp_workload, grade_naive_cpp, warm_naive_cpp),
    "code-cpp-headers": Workload(cpp_header_mix_workload, grade_naive_cpp, warm_naive_cpp),
}
"""The workloads `bench` runs, in order; a new one is one entry here."""


@contextlib.contextmanager
def _plain_pool(workload: Workload, warm_up: list[dict[str, Any]], processes: int) -> Iterator[Any]:
    """`processes` warm plain graders (each has graded answers of `warm_up`)."""
    with multiprocessing.get_context("forkserver").Pool(processes, workload.warm) as pool:
        pool.map(workload.plain, warm_up[: processes * 2], chunksize=1)
        yield pool


def _plain_round(pool: Any, workload: Workload, items: list[dict[str, Any]]) -> Run:
    """`items` graded by the plain graders of `pool`, timed."""
    started = time.perf_counter()
    rewards = pool.map(workload.plain, items, chunksize=4)
    elapsed = time.perf_counter() - started
    return Run(len(items), elapsed, wrong(rewards, items))


def _compare_sides(
    server: Any,
    workload: Workload,
    seeds: Iterator[int],
    workers: int,
    args: argparse.Namespace,
    answers: int,
) -> None:
    """One workload's lines: plain, then /score and /score/batch with their CPU, then hit rates.

    With `--rounds N` each side's answers are graded in N parts, the sides taking turns
    (plain, /score, /score/batch, plain, ...), so that a change in the machine's other load
    falls on every side alike; each side's line sums its rounds."""

    if workload.matched is not None:
        plain_items, warm_set, single_items, batch_items = workload.matched(next(seeds), answers, 4)
    else:
        plain_items, warm_set, single_items, batch_items = (
            workload.items(next(seeds), answers) for _ in range(4)
        )
    warm_up = warm_set[: workers * 4]
    parts = zip(
        *(rounds_of(items, args.rounds) for items in (plain_items, single_items, batch_items)),
        strict=True,
    )
    plain = single = batch = Run(0, 0.0, 0)
    single_cpu, batch_cpu = CpuShare(), CpuShare()
    with _plain_pool(workload, plain_items, workers) as pool:
        asyncio.run(post_each(server.url, warm_up, args.connections))
        before = service_counters(server.url)
        for plain_part, single_part, batch_part in parts:
            plain += _plain_round(pool, workload, plain_part)
            with single_cpu.measure(server, len(single_part)):
                single += asyncio.run(post_each(server.url, single_part, args.connections))
            with batch_cpu.measure(server, len(batch_part)):
                batch += asyncio.run(post_in_chunks(server.url, batch_part, 64, 8))
    print(report_line("plain", plain, None), flush=True)
    print(report_line("/score", single, plain) + single_cpu.text, flush=True)
    print(report_line("/score/batch", batch, plain) + batch_cpu.text, flush=True)
    if rates := hit_rates(before, service_counters(server.url)):  # none for code: no cache
        print(f"  service: {rates}", flush=True)


def _bench(args: argparse.Namespace) -> None:
    from reward_service.local_server import live_server

    if args.against and args.workload != "run_code":
        raise SystemExit("--against is the run_code workload's (--workload run_code)")
    if args.workload == "judge":
        judge_bench.run(args)
        return
    if args.workload == "grpo":
        group_bench.run(args)
        return
    if args.workload == "run_code":
        run_code_bench.run(args)
        return

    workers = args.workers or available_cpus()
    rounds = f", {args.rounds} rounds taking turns" if args.rounds > 1 else ""
    print(
        f"bench: {args.answers} answers per side and workload, {workers} processes per side, "
        f"seed {args.seed}{rounds}",
        flush=True,
    )
    with live_server(workers=workers) as server:
        # Seeds follow a workload's place in WORKLOADS, so one run alone grades
        # the same answers as its part of a run of all.
        for position, (name, workload) in enumerate(WORKLOADS.items()):
            if args.workload in ("all", name):
                first = args.seed + 1 + position * _SEEDS_PER_WORKLOAD
                if workload.steps and args.step_answers not in (0, args.answers):
                    _fresh_step(name, workload, first + _STEP_SEEDS, workers, args)
                print(f"workload {name}:", flush=True)
                _compare_sides(
                    server, workload, itertools.count(first), workers, args, args.answers
                )
        if args.memory_answers:
            _memory(server, args.memory_answers, args.seed + len(WORKLOADS) * _SEEDS_PER_WORKLOAD)


def _fresh_step(
    name: str, workload: Workload, seed: int, workers: int, args: argparse.Namespace
) -> None:
    """`workload`'s sides on a fresh RL step: `--step-answers` answers, on a server just
    started (its workers warm, as they are before they say ready), nothing cached."""
    from reward_service.local_server import live_server

    with live_server(workers=workers) as server:
        print(
            f"workload {name}, a fresh step of {args.step_answers} answers "
            "(a server just started):",
            flush=True,
        )
        _compare_sides(server, workload, itertools.count(seed), workers, args, args.step_answers)


def _memory(server: Any, answers: int, seed: int) -> None:
    warm = server.rss_bytes()
    done = 0
    started = time.perf_counter()
    while done < answers:
        seed += 1
        items = grpo_workload(seed, min(4096, answers - done), max_chars=8_000)
        asyncio.run(post_in_chunks(server.url, items, 64, 8))
        done += len(items)
    after = server.rss_bytes()
    print(
        f"memory: {warm / 2**20:.0f} MiB after warm-up, {after / 2**20:.0f} MiB after {done} "
        f"more answers ({time.perf_counter() - started:.0f} s): x{after / warm:.2f}",
        flush=True,
    )


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} is not a positive number of rounds")
    return value


def register(commands: Subparsers) -> None:
    """Add the `bench` command to the CLI."""
    bench = commands.add_parser("bench", help="benchmark the service against plain math_verify")
    bench.add_argument("--answers", type=int, default=2000, help="answers per side and workload")
    bench.add_argument("--workers", type=int, help="processes per side (default: usable CPUs)")
    bench.add_argument("--connections", type=int, default=64, help="client connections")
    bench.add_argument("--seed", type=int, default=20261130, help="first workload seed")
    bench.add_argument(
        "--rounds",
        type=_positive,
        default=1,
        help="grade each side's answers in this many parts, the sides taking turns (default 1)",
    )
    bench.add_argument(
        "--workload",
        choices=[*WORKLOADS, "judge", "grpo", "run_code", "all"],
        default="all",
        help="measure this workload alone (default: all but judge, grpo and run_code, in turn); "
        "grpo: groups through /score/group against /score/batch; run_code: /run_code Python "
        "(or C++) runs, some sleeping past their timeout, with spare workers off and by default "
        "(REWARD_WAITING_WORKERS), and optionally against another SandboxFusion-compatible "
        "server",
    )
    judge_bench.add_options(bench)
    run_code_bench.add_options(bench)
    bench.add_argument(
        "--step-answers",
        type=int,
        default=STEP_ANSWERS,
        help="math and grpo workloads: first time a fresh step of this many answers on a "
        f"server just started (default {STEP_ANSWERS}; 0, or --answers' value: no step)",
    )
    bench.add_argument(
        "--memory-answers", type=int, default=0, help="then stream this many answers, check RSS"
    )
    bench.set_defaults(run=_bench)
