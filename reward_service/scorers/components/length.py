"""Length-shaped rewards: open-r1's cosine-scaled length and DAPO's soft overlong penalty.

Lengths are characters of the response: the service sees text, not the trainer's tokens
(about four characters a token for English prose; set the lengths accordingly).

* `cosine_scaled` (open-r1, after "Demystifying Long Chain-of-Thought Reasoning"): a correct
  answer earns from `max_value_correct` at length 0 down to `min_value_correct` at
  `max_length`, a wrong one from `min_value_wrong` at length 0 up to `max_value_wrong`
  (shorter correct answers paid more, longer wrong ones penalised less). open-r1 does not
  stop the cosine at `max_length`, so past it the curve turns back: a correct answer padded
  to twice `max_length` earns the full `max_value_correct` again. Here progress stops at 1:
  past `max_length` every answer earns its value at `max_length`.
* `soft_overlong` (DAPO): 0 up to `max_length - buffer`, then falling linearly to `-factor` at
  `max_length`, and `-factor` beyond (the paper's reading; verl's keeps falling).
"""

from __future__ import annotations

import math


def cosine_scaled(
    length: int,
    correct: bool,
    *,
    max_length: int = 1000,
    min_value_correct: float = 0.5,
    max_value_correct: float = 1.0,
    min_value_wrong: float = -1.0,
    max_value_wrong: float = -0.5,
) -> float:
    """open-r1's cosine-scaled length reward, with progress held at 1 past `max_length`."""
    progress = min(length / max_length, 1.0)
    shrink = 0.5 * (1.0 + math.cos(progress * math.pi))  # 1 at length 0, 0 at max_length
    if correct:
        return min_value_correct + (max_value_correct - min_value_correct) * shrink
    return max_value_wrong + (min_value_wrong - max_value_wrong) * shrink


def soft_overlong(length: int, *, max_length: int, buffer: int, factor: float = 1.0) -> float:
    """DAPO's soft overlong punishment: 0, then linear to `-factor` over the last `buffer`."""
    excess = length - (max_length - buffer)
    if excess <= 0:
        return 0.0
    return -factor * min(excess / buffer, 1.0)
