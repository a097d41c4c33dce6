"""The `code` workload: generated programming tasks, and the naive baseline that grades them.

Each task has ten tests, standard input/output (APPS style) or call-based
(`fn_name`, one of them LeetCode's `class Solution`), and four kinds of
solutions: correct, wrong (fails one test), crashing (raises on one test) and
slow (loops forever on one test, so that test ends at its time limit). A
GRPO-shaped group is eight answers to one task; labels are label objects
`{"scorer": "code", "answer": {...}, "time_limit_s": ...}`, so `/score` and
`/score/batch` route them to the `code` scorer.

The baseline is what a code-RL reward function commonly does: a fresh
`subprocess.run([python, file])` per test, with the same extraction and
comparison (`NaiveSandbox` under the `code` scorer), in as many processes as
the service has workers.
"""

from __future__ import annotations

import random
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from reward_service.contracts.slime import sample_from_json
from reward_service.sandbox import Execution, Kind, Limits, Outcome, Program
from reward_service.scorers.base import GradingLimits
from reward_service.scorers.code.scorer import CodeScorer

TESTS_PER_TASK = 10
GROUP_SIZE = 8
TIME_LIMIT_S = 0.5
"""Per test, in every label: a slow solution costs this much CPU on both sides, so the
share of slow solutions bounds the ratio (at 5%, 25 ms per answer on average either way)."""
_STDERR_TAIL = 1024


@dataclass(frozen=True)
class Task:
    """A generated problem: how to draw a test input, the reference answer, a solution.

    `solution` is correct source with a `{guard}` slot (indented `indent`),
    where the wrong (`wrong_action`, wrong on any input), crashing and slow
    variants misbehave on one test's input, singled out by `trigger(input)`.
    """

    fn_name: str
    draw: Callable[[random.Random], Any]
    answer: Callable[[Any], Any]
    solution: str
    indent: str
    wrong_action: str
    trigger: Callable[[Any], str]

    def source(self, kind: str, test_input: Any) -> str:
        """The `kind` solution (`KINDS`), misbehaving on `test_input`."""
        condition = self.trigger(test_input)
        action = {"wrong": self.wrong_action, "crash": "raise ValueError('bad input')"}
        if kind == "correct":
            guard = ""
        elif kind == "slow":
            guard = f"{self.indent}while {condition}:\n{self.indent}    pass\n"
        else:
            guard = f"{self.indent}if {condition}:\n{self.indent}    {action[kind]}\n"
        return self.solution.format(guard=guard)


def _numbers(rng: random.Random) -> list[int]:
    return [rng.randint(-1000, 1000) for _ in range(rng.randint(1, 30))]


def _stdin_numbers(numbers: list[int]) -> str:
    return f"{len(numbers)}\n{' '.join(map(str, numbers))}\n"


def _max_profit(args: list[list[int]]) -> int:
    prices = args[0]
    return max([0] + [b - a for i, a in enumerate(prices) for b in prices[i + 1 :]])


_READ = "n = int(input())\nxs = list(map(int, input().split()))\n"
_GAIN = (
    "        best, low = 0, prices[0]\n        for p in prices:\n"
    "            low = min(low, p)\n            best = max(best, p - low)\n        return best\n"
)
TASKS = (
    Task(
        "",
        _numbers,
        lambda xs: str(sum(xs)),
        _READ + "{guard}print(sum(xs))\n",
        "",
        "print(sum(xs) + 1); raise SystemExit",
        lambda xs: f"xs == {xs!r}",
    ),
    Task(
        "",
        _numbers,
        lambda xs: " ".join(map(str, sorted(xs))),
        _READ + "{guard}print(*sorted(xs))\n",
        "",
        "print(*sorted(xs), 0); raise SystemExit",
        lambda xs: f"xs == {xs!r}",
    ),
    Task(
        "add",
        lambda rng: [rng.randint(-(10**6), 10**6), rng.randint(-(10**6), 10**6)],
        lambda args: args[0] + args[1],
        "def add(a, b):\n{guard}    return a + b\n",
        "    ",
        "return a + b + 1",
        lambda args: f"(a, b) == {tuple(args)!r}",
    ),
    Task(
        "maxProfit",
        lambda rng: [[rng.randint(1, 100) for _ in range(rng.randint(1, 40))]],
        _max_profit,
        "class Solution:\n    def maxProfit(self, prices: List[int]) -> int:\n{guard}" + _GAIN,
        "        ",
        "return -1",
        lambda args: f"prices == {args[0]!r}",
    ),
)
"""Two standard input/output tasks, two call-based (one LeetCode-style)."""
KINDS = ("correct", "wrong", "crash", "slow")
KIND_WEIGHTS = (0.5, 0.3, 0.15, 0.05)


def _label(task: Task, tests: list[Any]) -> dict[str, Any]:
    if task.fn_name:
        spec: dict[str, Any] = {
            "inputs": tests,
            "outputs": [task.answer(args) for args in tests],
            "fn_name": task.fn_name,
        }
    else:
        spec = {
            "inputs": [_stdin_numbers(xs) for xs in tests],
            "outputs": [task.answer(xs) + "\n" for xs in tests],
        }
    return {"scorer": "code", "answer": spec, "time_limit_s": TIME_LIMIT_S}


def _response(rng: random.Random, source: str) -> str:
    thinking = "<think>\nRead the input, compute, print.\n</think>\n" if rng.random() < 0.5 else ""
    return f"{thinking}Here is my solution.\n\n```python\n{source}\n```\n"


def kind_counts(answers: int) -> dict[str, int]:
    """How many answers of each kind a workload of `answers` holds: `KIND_WEIGHTS` exactly
    (rounded; correct takes the remainder), so every side of a bench grades the same mix."""
    shares = zip(KINDS, KIND_WEIGHTS, strict=True)
    counts = {kind: round(answers * weight) for kind, weight in shares}
    counts[KINDS[0]] += answers - sum(counts.values())
    return counts


def code_workload(seed: int, answers: int, group_size: int = GROUP_SIZE) -> list[dict[str, Any]]:
    """`answers` items `{prompt, response, label, expected, kind}`, groups interleaved.

    The kinds come in `kind_counts`, shuffled among the groups. Drawn at random they gave
    the three sides of a 400-answer bench 19 to 27 slow solutions, each one time limit of
    work: 4 s of a side's time between seeds, on either side."""
    rng = random.Random(seed)
    kinds = [kind for kind, count in kind_counts(answers).items() for _ in range(count)]
    rng.shuffle(kinds)
    items: list[dict[str, Any]] = []
    for g in range((answers + group_size - 1) // group_size):
        task = rng.choice(TASKS)
        tests = [task.draw(rng) for _ in range(TESTS_PER_TASK)]
        label = _label(task, tests)
        prompt = f"Task {seed}-{g}: solve it in Python."
        for kind in kinds[g * group_size : (g + 1) * group_size]:
            source = task.source(kind, rng.choice(tests))
            items.append(
                {
                    "prompt": prompt,
                    "response": _response(rng, source),
                    "label": label,
                    "expected": 1.0 if kind == "correct" else 0.0,
                    "kind": kind,
                }
            )
    rng.shuffle(items)
    return items


class NaiveSandbox:
    """The common way: the program in a file, a fresh `subprocess.run` per test, no confinement."""

    layers: Sequence[str] = ("subprocess",)

    def execute(
        self,
        program: Program,
        stdins: Sequence[bytes],
        limits: Limits,
        budget_s: float,
        *,
        stop_at_first_failure: bool = True,
        build_time_s: float | None = None,
        build_memory_mb: int | None = None,
        fetch: Sequence[str] = (),
        fetch_bytes: int = 0,
    ) -> Execution:
        """Run `program` once per stdin, each a new interpreter; stops as `Sandbox.execute`
        does (nothing to build, nothing fetched)."""
        started = time.monotonic()
        outcomes: list[Outcome] = []
        with tempfile.TemporaryDirectory() as scratch:
            path = Path(scratch, "main.py")
            path.write_text(program.source)
            for stdin in stdins:
                if time.monotonic() - started + limits.time_s > budget_s:
                    break
                outcomes.append(run_once([sys.executable, str(path)], path.parent, stdin, limits))
                if stop_at_first_failure and outcomes[-1].kind is not Kind.OK:
                    break
        return Execution(None, outcomes)

    def close(self) -> None:
        """Nothing outlives a run."""


def run_once(argv: list[str], cwd: Path, stdin: bytes, limits: Limits) -> Outcome:
    """One fresh `subprocess.run` of `argv` on `stdin`, its outcome as the sandbox reports one."""
    started = time.monotonic()
    try:
        done = subprocess.run(
            argv,
            input=stdin,
            capture_output=True,
            timeout=limits.time_s,
            cwd=cwd,
            check=False,
        )
    except subprocess.TimeoutExpired as exc:
        stdout = exc.stdout or b""
        return Outcome(Kind.TIME_LIMIT, stdout[: limits.output_bytes], "", None, limits.time_s)
    stderr = done.stderr.decode("utf-8", "replace")[-_STDERR_TAIL:]
    if len(done.stdout) > limits.output_bytes:
        kind = Kind.OUTPUT_LIMIT
    elif done.returncode == 0:
        kind = Kind.OK
    else:
        kind = Kind.MEMORY_LIMIT if "MemoryError" in stderr else Kind.RUNTIME_ERROR
    exit_code = done.returncode if done.returncode >= 0 else None
    elapsed = time.monotonic() - started
    return Outcome(kind, done.stdout[: limits.output_bytes], stderr, exit_code, elapsed)


_naive: CodeScorer | None = None


def warm_naive() -> None:
    """Build this process's `code` scorer over the naive sandbox."""
    global _naive
    _naive = CodeScorer(GradingLimits(), sandbox_factory=lambda _: NaiveSandbox())


def grade_naive(item: dict[str, Any]) -> float:
    """The naive baseline's reward for one workload item, read as the service reads its body."""
    assert _naive is not None, "warm_naive() first"
    return grade_item(_naive, item)


def grade_item(scorer: CodeScorer, item: dict[str, Any]) -> float:
    """`scorer`'s reward for one workload item, its body read as the service reads it."""
    sample = sample_from_json(
        {"prompt": item["prompt"], "response": item["response"], "label": item["label"]}
    )
    return scorer.score(sample.prompt, sample.response, sample.label, sample.options).reward
