"""Imported by the grading workers' forkserver (`MathVerifyScorer.preload`), never by the
server: math_verify and sympy imported, and their lazy set-up done by grading the warm-up
answers once (`MathVerifyScorer.warm`), before the forkserver forks any worker.

Each worker inherits both instead of paying them itself: ~0.8 CPU-s, and as long in wall
time, per worker, a replacement or spare one too; its own `warm` then costs ~0.02 s, and
its readiness still means warm. Whatever fails here is left for the workers to meet and
report as they did before: the forkserver, which ignores only an ImportError in its preload,
must not die of it.

Then every object alive is frozen (`gc.freeze`), out of the collector's reach: the
forkserver's exit, whose final collection would otherwise walk sympy's heap (0.18 s, over a
second at load: it outlived the server it served), and the workers' collections, which would
touch (and so copy) the pages they share with it, skip them.
"""

from __future__ import annotations

import contextlib
import gc

from reward_service.scorers.math_verify.scorer import MathVerifyScorer

with contextlib.suppress(Exception):
    MathVerifyScorer().warm()
gc.freeze()
