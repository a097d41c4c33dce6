"""The answer region: what a reader sees after a response's reasoning, read one way by
every scorer that grades a final answer.

Option `think` says how (`THINK_MODES`):

* `strict` (the default): a response with one `</think>` answers with what follows it;
  one with none answers with all of it. A `<think>` that never closes (none of
  `</think>` at all, or a `<think>` after the last one) is a truncated answer, and
  more than one `</think>` is a malformed reasoning block: both are `no_answer`, so
  nothing hidden inside reasoning is ever graded as if it were the answer.
* `required`: as `strict`, and a response with no `</think>` at all is truncated too:
  for prompts whose chat template opens `<think>` itself (Qwen3, DeepSeek-R1), where
  a response that never closed its reasoning holds no `<think>` to show it.
* `after`: what follows the last `</think>`, else all of it (SLIME's `gpqa`,
  `ifbench` and `deepscaler`, the service's readings before `strict`).
* `keep`: the whole response, reasoning included (math_verify's `parse`, SLIME's
  `math` and `dapo`).

`after` and `keep` exist for parity runs against the reference graders; each
scorer's reference is in docs/scorers.md. Everything here is linear in the
response: it runs in the server process too (screens).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from reward_service.scorers.base import JSON, Score

THINK_OPEN = "<think>"
THINK_END = "</think>"
STRICT = "strict"
REQUIRED = "required"
AFTER = "after"
KEEP = "keep"
THINK_MODES = frozenset({STRICT, REQUIRED, AFTER, KEEP})
"""The values of option `think`."""


@dataclass(frozen=True)
class Unanswered:
    """Why a response holds no answer region: a truncated or malformed reasoning block."""

    reason: str

    def score(self, reward: float = 0.0, **details: JSON) -> Score:
        """The `no_answer` score a scorer gives such a response."""
        return Score.no_answer(self.reason, reward, **details)


TRUNCATED = Unanswered("the reasoning never ended (<think> without </think>): a truncated answer")
MALFORMED = Unanswered("more than one </think>: a malformed reasoning block")


def think_mode(options: Mapping[str, JSON]) -> str:
    """Option `think`'s mode; `strict` when unset or unknown (the registry refuses unknown
    values from URLs and settings; a label object's are read as the default)."""
    mode = options.get("think", STRICT)
    return mode if isinstance(mode, str) and mode in THINK_MODES else STRICT


def answer_region(response: str, mode: str = STRICT) -> str | Unanswered:
    """The part of `response` that is its answer, read as `mode` reads it."""
    if mode == KEEP:
        return response
    head, ended, tail = response.rpartition(THINK_END)
    if mode == AFTER:
        return tail
    if not ended:
        return TRUNCATED if mode == REQUIRED or THINK_OPEN in response else response
    if THINK_END in head:
        return MALFORMED
    if THINK_OPEN in tail:
        return TRUNCATED
    return tail


def final_answer(response: str, options: Mapping[str, JSON]) -> str | Unanswered:
    """`answer_region` in the mode `options` ask for."""
    return answer_region(response, think_mode(options))
