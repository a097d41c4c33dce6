"""Per-answer cost of plain math_verify against the `math_verify` scorer, in one process.

Both sides grade the same freshly generated workload: groups of answers
sharing a label (GRPO style), shuffled so that groups interleave as SLIME
streams them. Each answer is timed on every side in turn, so load from
other processes weighs on all sides alike; math_verify's own 20-entry
caches are cleared before each call, or they would carry one side's
parses into the next side's call. Plain math_verify parses the boxed gold
and the response and verifies, per answer, as peers do. The scorer is run
whole and with techniques switched off, to show what each contributes:

* full only: gold cache, but every response parsed whole;
* + region: `\\boxed{<content>}` parsed instead of the response;
* + exact: plain numbers read without antlr (no verdict cache);
* scorer: everything, the verdict cache included.

Usage: python bench/math_fast.py [--groups 150] [--group-size 8] [--seed N]
"""

from __future__ import annotations

import argparse
import random
import time
import types
import warnings
from collections.abc import Callable
from typing import Any, cast

from math_verify.parser import parse_expr_cached, parse_latex_cached

from reward_service.scorers import math_verify_answer
from reward_service.scorers.base import GradingLimits
from reward_service.scorers.math_verify import MathVerifyScorer, _BoundedCache
from reward_service.scorers.math_verify_cases import Case, generate_cases, plain_grade

Grader = Callable[[Case], float]


def _ablated(**replaced: object) -> types.SimpleNamespace:
    """`math_verify_answer` with some functions swapped out."""
    return types.SimpleNamespace(**{**vars(math_verify_answer), **replaced})


def _scorers() -> dict[str, MathVerifyScorer]:
    variants = {name: MathVerifyScorer(GradingLimits()) for name in ("full", "region", "exact")}
    cast(Any, variants["full"])._answer = _ablated(final_box=lambda response: None)
    cast(Any, variants["region"])._answer = _ablated(
        exact_value=lambda latex: None, plain_integer=lambda latex: None
    )
    for name in ("full", "region", "exact"):
        variants[name]._verdicts = _BoundedCache(0)
    variants["scorer"] = MathVerifyScorer(GradingLimits())
    return variants


def _scorer_grader(scorer: MathVerifyScorer) -> Grader:
    def grade(case: Case) -> float:
        return scorer.score(None, case.response, case.label, {}).reward

    return grade


def _workload(name: str, cases: list[Case]) -> None:
    graders: dict[str, Grader] = {"plain": lambda case: plain_grade(case)[0]}
    scorers = _scorers()
    graders.update({label: _scorer_grader(scorer) for label, scorer in scorers.items()})
    seconds = dict.fromkeys(graders, 0.0)
    rewards: dict[str, list[float]] = {label: [] for label in graders}
    for case in cases:
        for label, grade in graders.items():
            parse_latex_cached.cache_clear()
            parse_expr_cached.cache_clear()
            start = time.perf_counter()
            rewards[label].append(grade(case))
            seconds[label] += time.perf_counter() - start
    ms = {label: total / len(cases) * 1000 for label, total in seconds.items()}
    print(f"\n{name}: {len(cases)} answers, plain math_verify {ms['plain']:.3f} ms/answer")
    print(f"  {'variant':<12}{'ms/answer':>10}{'speed-up':>10}{'verdicts differ':>17}")
    for label in scorers:
        differ = sum(a != b for a, b in zip(rewards["plain"], rewards[label], strict=True))
        print(f"  {label:<12}{ms[label]:>10.3f}{ms['plain'] / ms[label]:>9.2f}x{differ:>17}")
    stats = scorers["scorer"].stats
    graded = stats.fast + stats.region + stats.full + stats.verdict_hits
    shares = {key: f"{value / max(graded, 1):.0%}" for key, value in stats.as_dict().items()}
    print(f"  scorer paths and caches (share of answers): {shares}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--groups", type=int, default=150)
    parser.add_argument("--group-size", type=int, default=8)
    parser.add_argument("--seed", type=int, default=random.SystemRandom().randrange(10**6))
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    count = args.groups * args.group_size
    print(f"seed {args.seed}, {args.groups} groups of {args.group_size}, groups interleaved")
    for name, integer_only in (("integer-only", True), ("mixed", False)):
        cases = generate_cases(args.seed, count, integer_only, args.group_size)
        random.Random(args.seed).shuffle(cases)
        _workload(name, cases)


if __name__ == "__main__":
    main()
