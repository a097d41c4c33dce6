"""`random`: SLIME's `--rm-type random`, a fair coin for smoke-testing pipelines.

The reward is 0 or 1 at random (`random.randint(0, 1)`, as SLIME), whatever
the response and label: status `ok` for 1, `wrong` for 0. Use it to check
that rewards flow end to end, never to train.
"""

from __future__ import annotations

import random
from collections.abc import Mapping

from reward_service.scorers.base import JSON, Score, Scorer


class RandomScorer(Scorer):
    """1.0 or 0.0 with equal chance, ignoring the answer."""

    name = "random"
    deterministic = False

    def score(self, prompt: JSON, response: str, label: JSON, options: Mapping[str, JSON]) -> Score:
        # the random module reseeds itself in each forked worker
        return Score.verdict(random.randint(0, 1) == 1)
