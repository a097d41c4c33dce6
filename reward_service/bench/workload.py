"""GRPO-shaped workloads with known rewards, for tests, benchmarks and load tests.

A workload is a list of groups; each group is `n` answers sharing one label
(as GRPO samples them), interleaved the way SLIME streams them. Every item
carries the reward a correct grader must give it.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

_FILLER = (
    "first consider the equation and simplify both sides so that the terms collect "
    "we substitute the value back to check each case carefully then the product of "
    "roots follows from the coefficients hence the sum must be positive note that "
    "dividing by two keeps the ratio which gives us the bound we need here"
)
_WORDS = tuple(_FILLER.split(" "))


@dataclass(frozen=True)
class Problem:
    """A gold answer, as a label, and ways to write it right and wrong."""

    label: Any
    correct: tuple[str, ...]
    equivalent: tuple[str, ...]
    wrong: tuple[str, ...]


def _integer(rng: random.Random) -> Problem:
    n = rng.randint(-50, 5000)
    label: Any = n if rng.random() < 0.5 else str(n)
    return Problem(label, (str(n),), (f"{n}.0",), (str(n + rng.randint(1, 9)), str(-n - 1)))


def _fraction(rng: random.Random) -> Problem:
    p, q = rng.choice([(1, 2), (3, 4), (1, 4), (3, 8), (5, 8), (7, 20)])
    k = rng.randint(1, 3)
    return Problem(
        rng.choice([f"\\frac{{{p}}}{{{q}}}", p / q]),
        (f"\\frac{{{p}}}{{{q}}}",),
        (f"{p / q:g}", f"{p}/{q}", f"\\frac{{{p * k}}}{{{q * k}}}"),
        (f"\\frac{{{q}}}{{{p}}}", f"{p / q + 1:g}"),
    )


def _radical(rng: random.Random) -> Problem:
    a, b = rng.choice([(2, 3), (2, 2), (3, 2), (2, 5), (3, 3)])
    return Problem(
        f"\\sqrt{{{a * a * b}}}",
        (f"\\sqrt{{{a * a * b}}}",),
        (f"{a}\\sqrt{{{b}}}", f"{a}\\sqrt{b}"),
        (f"{a + 1}\\sqrt{{{b}}}", f"\\sqrt{{{b}}}"),
    )


def _pi(rng: random.Random) -> Problem:
    q = rng.choice([2, 3, 4, 6])
    return Problem(
        f"\\frac{{\\pi}}{{{q}}}",
        (f"\\frac{{\\pi}}{{{q}}}",),
        (f"\\pi/{q}", f"\\frac{{1}}{{{q}}}\\pi"),
        (f"\\frac{{\\pi}}{{{q + 1}}}", f"{q}\\pi"),
    )


def _interval(rng: random.Random) -> Problem:
    a = rng.randint(-9, 5)
    b = a + rng.randint(1, 9)
    return Problem(
        f"[{a}, {b})",
        (f"[{a}, {b})",),
        (f"[{a},{b})",),
        (f"({a}, {b}]", f"[{a}, {b + 1})"),
    )


PROBLEM_KINDS = {
    "integer": _integer,
    "fraction": _fraction,
    "radical": _radical,
    "pi": _pi,
    "interval": _interval,
}


def chain_of_thought(rng: random.Random, min_chars: int, max_chars: int) -> str:
    """Reasoning-like filler of a random length, free of answer anchors."""
    target = rng.randint(min_chars, max_chars)
    lines: list[str] = []
    size = 0
    while size < target:
        line = " ".join(rng.choice(_WORDS) for _ in range(rng.randint(8, 20)))
        line += f" so $x_{{{rng.randint(1, 9)}}} = {rng.randint(2, 99)} + y$."
        lines.append(line)
        size += len(line) + 1
    return "\n".join(lines)


def _answer(rng: random.Random, problem: Problem, cot: str) -> tuple[str, float]:
    roll = rng.random()
    if roll < 0.10:
        return cot[: len(cot) // 2], 0.0
    if roll < 0.45:
        return f"{cot}\nThus the answer is $\\boxed{{{rng.choice(problem.correct)}}}$.", 1.0
    if roll < 0.70:
        return f"{cot}\nThus the answer is $\\boxed{{{rng.choice(problem.equivalent)}}}$.", 1.0
    return f"{cot}\nThus the answer is $\\boxed{{{rng.choice(problem.wrong)}}}$.", 0.0


def grpo_workload(
    seed: int,
    answers: int,
    group_size: int = 8,
    kinds: tuple[str, ...] = tuple(PROBLEM_KINDS),
    min_chars: int = 1_000,
    max_chars: int = 20_000,
    plan: Sequence[str] = (),
) -> list[dict[str, Any]]:
    """`answers` items `{prompt, response, label, expected}`, groups interleaved; with
    `plan`, group g's problem is of kind `plan[g]` instead of one drawn from `kinds`."""
    rng = random.Random(seed)
    groups: list[list[dict[str, Any]]] = []
    for g in range((answers + group_size - 1) // group_size):
        kind = plan[g] if plan else rng.choice(kinds)
        problem = PROBLEM_KINDS[kind](rng)
        prompt: Any = f"Problem {seed}-{g}: solve it and box the answer."
        if rng.random() < 0.3:
            prompt = [{"role": "user", "content": prompt}]
        group = []
        for _ in range(group_size):
            response, expected = _answer(rng, problem, chain_of_thought(rng, min_chars, max_chars))
            group.append(
                {
                    "prompt": prompt,
                    "response": response,
                    "label": problem.label,
                    "expected": expected,
                }
            )
        groups.append(group)
    items = [item for group in groups for item in group]
    rng.shuffle(items)
    return items[:answers]


def matched_workloads(
    seed: int,
    answers: int,
    sets: int,
    group_size: int = 8,
    kinds: tuple[str, ...] = tuple(PROBLEM_KINDS),
) -> list[list[dict[str, Any]]]:
    """`sets` GRPO workloads of `answers` items, none sharing an answer, whose groups follow
    one plan of problem kinds: at 256 answers (32 groups) two independent draws can differ
    by a handful of interval or radical groups, which cost many times an integer group, so
    sides compared on independent draws compare different work."""
    rng = random.Random(seed)
    plan = [rng.choice(kinds) for _ in range((answers + group_size - 1) // group_size)]
    return [
        grpo_workload(seed * 100 + index, answers, group_size, kinds, plan=plan)
        for index in range(1, sets + 1)
    ]


@dataclass(frozen=True)
class Workload:
    """What the bench times: fresh answers with known rewards, and the plain grader to beat.

    `items(seed, answers)` builds a set no side has seen; `plain` grades one
    item in a process of the plain side once `warm` ran there (both
    module-level functions, so they reach those processes by reference).
    """

    items: Callable[[int, int], list[dict[str, Any]]]
    plain: Callable[[dict[str, Any]], float]
    warm: Callable[[], None]
    matched: Callable[[int, int, int], list[list[dict[str, Any]]]] | None = None
    """`matched(seed, answers, sets)`: `sets` fresh sets of one shape (`matched_workloads`),
    used instead of `items` where given, so the sides grade work of the same cost."""
    steps: bool = False
    """Whether `bench` also times a fresh step (`--step-answers`) on a just-started server."""


def request_body(item: dict[str, Any]) -> dict[str, Any]:
    """The body SLIME would post for a workload item (no `expected`)."""
    return {"prompt": item["prompt"], "response": item["response"], "label": item["label"]}


HOSTILE_ANSWERS = (
    "\\boxed{9^{9^{9^{9}}}}",
    "\\boxed{(10^{100})!}",
    "\\boxed{" + "{" * 50 + "1" + "}" * 50 + "}",
    "\\boxed{" + "(" * 50 + "1" + ")" * 50 + "}",
    "\\boxed{2^{2^{40}}}",
    "\\boxed{10^{10^{7}}}",
)
"""Short answers that would stall a symbolic grader; a correct service gives each 0.0."""


def hostile_workload(
    seed: int, answers: int, min_chars: int = 200, max_chars: int = 2_000
) -> list[dict[str, Any]]:
    """`answers` items whose boxed answer is hostile; each expects the reward 0.0."""
    rng = random.Random(seed)
    items = []
    for i in range(answers):
        label: Any = rng.randint(1, 999)
        cot = chain_of_thought(rng, min_chars, max_chars)
        items.append(
            {
                "prompt": f"Problem {seed}-h{i}: solve it and box the answer.",
                "response": f"{cot}\nThus the answer is ${rng.choice(HOSTILE_ANSWERS)}$.",
                "label": label if rng.random() < 0.5 else str(label),
                "expected": 0.0,
            }
        )
    return items


def chat_prompt(rng: random.Random, text: str) -> list[dict[str, Any]]:
    """`text` as a chat-message list, sometimes with typed content parts."""
    user: Any = text if rng.random() < 0.5 else [{"type": "text", "text": text}]
    return [
        {"role": "system", "content": "Reason step by step; put the answer in \\boxed{}."},
        {"role": "user", "content": user},
    ]
