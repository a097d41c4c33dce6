"""A math_verify scorer warmed in its worker grades its first answers at full speed; the workers'
forkserver warms math_verify once for them all."""

from __future__ import annotations

import ast
import subprocess
import sys

from reward_service.scorers.math_verify.scorer import GradingStats, MathVerifyScorer

FIRST_ANSWERS = """
import sys, time
from reward_service.scorers.math_verify.scorer import MathVerifyScorer
scorer = MathVerifyScorer()
if sys.argv[1] == "warm":
    scorer.warm()
answers = [("so $\\\\boxed{\\\\sqrt{8}}$.", "2\\\\sqrt{2}"), ("so $\\\\boxed{(2, 5]}$.", "(2,5]"),
           ("so $\\\\boxed{\\\\frac{\\\\pi}{6}}$.", "\\\\pi/6"), ("so $\\\\boxed{x+1}$.", "1+x")]
started = time.thread_time()
for response, label in answers:
    scorer.score(None, response, label, {})
print(time.thread_time() - started)
"""


def _first_answers_cpu_s(mode: str) -> float:
    """CPU seconds a fresh process spends on its first four region answers."""
    run = subprocess.run(
        [sys.executable, "-c", FIRST_ANSWERS, mode], capture_output=True, text=True, check=True
    )
    return float(run.stdout)


def test_warming_takes_the_first_use_cost_off_the_first_answers() -> None:
    """Cold, the first region answers pay math_verify's lazy set-up (~0.2 s); warmed, not."""
    cold = min(_first_answers_cpu_s("cold") for _ in range(2))
    warm = min(_first_answers_cpu_s("warm") for _ in range(2))
    assert warm < cold / 2, f"cold {cold:.3f} s, warm {warm:.3f} s"


def test_warming_leaves_no_trace() -> None:
    """After `warm` the caches are empty and every counter is zero."""
    scorer = MathVerifyScorer()
    scorer.warm()
    assert scorer.stats == GradingStats()
    assert (len(scorer._golds), len(scorer._verdicts)) == (0, 0)


FORKED = """
import multiprocessing
from reward_service.scorers import GradingLimits
from reward_service.scorers.registry import ScorerRegistry
if __name__ == "__main__":
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(ScorerRegistry.discover(GradingLimits()).modules())
    with context.Pool(1) as pool:
        print(pool.apply(eval, ("[m in __import__('sys').modules for m in ('sympy', "
            "'math_verify')], __import__('math_verify').parser.parse_latex_cached.cache_info()"
            ".currsize, __import__('gc').get_freeze_count()",)))
"""


def test_the_forkserver_warms_math_verify_once_for_every_worker() -> None:
    """The registry's preload names `warm_up`: a process forked from the forkserver, before any
    set-up of its own, has math_verify and sympy imported, the warm-up's parses cached, and
    the heap they made frozen (so the forkserver's exit does not walk it)."""
    run = subprocess.run(
        [sys.executable, "-c", FORKED], capture_output=True, text=True, check=True, timeout=120
    )
    imported, parsed, frozen = ast.literal_eval(run.stdout)
    assert imported == [True, True]
    assert parsed > 0, "the forkserver imported math_verify but never ran the warm-up"
    assert frozen > 100_000, frozen
