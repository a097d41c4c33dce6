"""The `code-cpp` workload: generated C++ tasks, and the naive baseline that grades them.

Each task has ten standard input/output tests and four kinds of solutions,
as the Python `code` workload has (correct, wrong on one test, crashing on
one, spinning on one until its time limit), written as competitive
programmers write C++: `#include <bits/stdc++.h>`, `-O2 -std=c++17`. Every
answer's source is distinct (its own identifier in a comment and in a
name), so no side reuses a build or a cached verdict. The `code-cpp-headers`
workload (`cpp_header_mix_workload`) is the same with half of the answers
listing the standard headers they use instead (`HEADER_LIST`), as many
contest programs do.

The baseline is what a code-RL reward function commonly does for C++: the
source in a file, `subprocess.run(["g++", "-O2", "-std=c++17", ...])` once,
then a fresh `subprocess.run` of the binary per test (`NaiveCompiler` under
the `code` scorer, so extraction and comparison are the service's), in as
many processes as the service has workers.
"""

from __future__ import annotations

import random
import subprocess
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from reward_service.bench.code_workload import (
    GROUP_SIZE,
    TESTS_PER_TASK,
    TIME_LIMIT_S,
    grade_item,
    kind_counts,
    run_once,
)
from reward_service.sandbox import Execution, Kind, Limits, Outcome, Program
from reward_service.scorers.base import GradingLimits
from reward_service.scorers.code.scorer import CodeScorer

COMPILE = ("g++", "-O2", "-std=c++17")
_COMPILE_TIMEOUT_S = 30.0
_READ = "int n; cin >> n; vector<long long> xs(n); for (auto &x : xs) cin >> x;"


@dataclass(frozen=True)
class CppTask:
    """A problem: its answer as text, and the solution's body around a `{guard}` slot."""

    name: str
    """`sum` or `sorted`: what the answer prints."""
    body: str
    wrong: str


TASKS = (
    CppTask(
        "sum",
        "{guard}    cout << accumulate(xs.begin(), xs.end(), 0LL) << '\\n';\n",
        "cout << accumulate(xs.begin(), xs.end(), 1LL) << '\\n'; return 0;",
    ),
    CppTask(
        "sorted",
        "{guard}    sort(xs.begin(), xs.end());\n"
        '    for (size_t i = 0; i < xs.size(); i++) cout << xs[i] << " \\n"[i + 1 == xs.size()];\n',
        "cout << 0 << '\\n'; return 0;",
    ),
)


HEADER_LIST = (
    "#include <iostream>\n#include <vector>\n#include <algorithm>\n#include <numeric>\n"
    "#include <string>\n#include <map>\n#include <set>\n#include <cmath>\n#include <stdexcept>\n"
)
"""The headers a `code-cpp-headers` answer lists in place of `bits/stdc++.h`."""


def _source(
    task: CppTask,
    kind: str,
    trigger: list[int],
    tag: str,
    headers: str = "#include <bits/stdc++.h>\n",
) -> str:
    literal = "{" + ", ".join(map(str, trigger)) + "}"
    condition = f"xs == vector<long long>{literal}"
    action = {
        "wrong": task.wrong,
        "crash": 'throw runtime_error("bad input");',
        "slow": "volatile long long spin = 0; for (;;) spin++;",
    }
    guard = "" if kind == "correct" else f"    if ({condition}) {{ {action[kind]} }}\n"
    body = task.body.format(guard=guard)
    return (
        f"{headers}using namespace std;\n// answer {tag}\n"
        f"static int solve_{tag}() {{\n    {_READ}\n{body}    return 0;\n}}\n"
        f"int main() {{ ios::sync_with_stdio(false); cin.tie(nullptr); return solve_{tag}(); }}\n"
    )


def _expected(task: CppTask, xs: list[int]) -> str:
    return f"{sum(xs)}\n" if task.name == "sum" else " ".join(map(str, sorted(xs))) + "\n"


def cpp_workload(
    seed: int, answers: int, group_size: int = GROUP_SIZE, listing: int = 0
) -> list[dict[str, Any]]:
    """`answers` items `{prompt, response, label, expected, kind}`, groups interleaved, each
    answer's source distinct; the kinds in `kind_counts`, as the Python workload's; `listing`
    of them, drawn at random, list `HEADER_LIST` instead of including `bits/stdc++.h`."""
    rng = random.Random(seed)
    kinds = [kind for kind, count in kind_counts(answers).items() for _ in range(count)]
    rng.shuffle(kinds)
    lists = set(rng.sample(range(answers), min(listing, answers)))
    items: list[dict[str, Any]] = []
    for g in range((answers + group_size - 1) // group_size):
        task = rng.choice(TASKS)
        tests = [
            [rng.randint(-1000, 1000) for _ in range(rng.randint(1, 30))]
            for _ in range(TESTS_PER_TASK)
        ]
        label = {
            "scorer": "code",
            "answer": {
                "inputs": [f"{len(xs)}\n{' '.join(map(str, xs))}\n" for xs in tests],
                "outputs": [_expected(task, xs) for xs in tests],
            },
            "time_limit_s": TIME_LIMIT_S,
        }
        prompt = f"Task {seed}-{g}: solve it in C++."
        for i, kind in enumerate(kinds[g * group_size : (g + 1) * group_size]):
            tag = f"s{seed}g{g}a{i}"
            listed = g * group_size + i in lists
            source = _source(task, kind, rng.choice(tests), tag, *([HEADER_LIST] if listed else []))
            items.append(
                {
                    "prompt": prompt,
                    "response": f"Here is my solution.\n\n```cpp\n{source}```\n",
                    "label": label,
                    "expected": 1.0 if kind == "correct" else 0.0,
                    "kind": kind,
                }
            )
    rng.shuffle(items)
    return items


def cpp_header_mix_workload(seed: int, answers: int) -> list[dict[str, Any]]:
    """`cpp_workload` with half of the answers listing their headers (`HEADER_LIST`)."""
    return cpp_workload(seed, answers, listing=answers // 2)


class NaiveCompiler:
    """The common way for C++: g++ once per program (in a temporary directory), then a fresh
    `subprocess.run` of the binary per test; no confinement."""

    layers: Sequence[str] = ("subprocess",)

    def __init__(self) -> None:
        self._scratch = tempfile.TemporaryDirectory()
        self._built: tuple[str, Path | str] | None = None
        """The last source and its binary (or the compiler's message): the scorer asks for
        an answer's tests in several calls, and the baseline compiles once per answer too."""

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
        """Compile `program` (once), then run it once per stdin as `Sandbox.execute` does
        (the compiler's limits its own, nothing fetched)."""
        started = time.monotonic()
        binary = self._build(program.source)
        built = time.monotonic() - started
        if isinstance(binary, str):
            return Execution(Outcome(Kind.RUNTIME_ERROR, b"", binary, 1, built), [])
        outcomes: list[Outcome] = []
        for stdin in stdins:
            if time.monotonic() - started + limits.time_s > budget_s:
                break
            outcomes.append(run_once([str(binary)], binary.parent, stdin, limits))
            if stop_at_first_failure and outcomes[-1].kind is not Kind.OK:
                break
        return Execution(Outcome(Kind.OK, b"", "", 0, built), outcomes)

    def _build(self, source: str) -> Path | str:
        if self._built is not None and self._built[0] == source:
            return self._built[1]
        folder = Path(tempfile.mkdtemp(dir=self._scratch.name))
        (folder / "main.cpp").write_text(source)
        built: Path | str = folder / "main"
        try:
            done = subprocess.run(
                [*COMPILE, "main.cpp", "-o", "main"],
                cwd=folder,
                capture_output=True,
                timeout=_COMPILE_TIMEOUT_S,
                check=False,
            )
        except subprocess.TimeoutExpired:
            built = f"g++ ran past {_COMPILE_TIMEOUT_S:g} s"
        else:
            if done.returncode != 0:
                built = done.stderr.decode("utf-8", "replace")[:4096]
        self._built = (source, built)
        return built

    def close(self) -> None:
        self._scratch.cleanup()


_naive: CodeScorer | None = None


def warm_naive_cpp() -> None:
    """Build this process's `code` scorer over the naive compiler (closing the one before:
    both C++ workloads warm it, and its scratch directory goes with it)."""
    global _naive
    if _naive is not None:
        _naive.close()
    _naive = CodeScorer(GradingLimits(), sandbox_factory=lambda _: NaiveCompiler())


def grade_naive_cpp(item: dict[str, Any]) -> float:
    """The naive baseline's reward for one workload item, read as the service reads its body."""
    assert _naive is not None, "warm_naive_cpp() first"
    return grade_item(_naive, item)
