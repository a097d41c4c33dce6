"""The base of the scorers that run programs: their budget, their one sandbox, its close."""

from __future__ import annotations

import base64

import pytest

from reward_service.sandbox import Kind, Outcome, Program
from reward_service.scorers.base import GradingLimits, Status
from reward_service.scorers.code.run_code import RunCodeScorer
from reward_service.scorers.code.sandboxed import SandboxedScorer
from reward_service.scorers.code.scorer import CodeScorer
from reward_service.scorers.code.settings import CodeSettings
from reward_service.testing import RecordingSandbox

SCORERS = [CodeScorer, RunCodeScorer]


@pytest.mark.parametrize("scorer_class", SCORERS)
@pytest.mark.parametrize(("deadline_s", "budget_s"), [(30.0, 28.5), (1.2, 1.0)])
def test_the_budget_leaves_the_margin_inside_the_deadline(
    scorer_class: type[SandboxedScorer], deadline_s: float, budget_s: float
) -> None:
    """An answer's programs get its deadline less the margin, and never under one second."""
    limits = GradingLimits(deadlines={scorer_class.name: deadline_s})
    scorer = scorer_class(limits, CodeSettings(budget_margin_s=1.5))
    assert scorer.budget_s == budget_s


@pytest.mark.parametrize("scorer_class", SCORERS)
def test_one_sandbox_starts_at_first_use_and_stops_with_the_scorer(
    scorer_class: type[SandboxedScorer],
) -> None:
    """Building starts nothing; the first use starts the one sandbox, close stops it, and
    a use after close starts another."""
    built: list[RecordingSandbox] = []

    def factory(settings: CodeSettings) -> RecordingSandbox:
        built.append(RecordingSandbox())
        return built[-1]

    scorer = scorer_class(sandbox_factory=factory)
    assert built == []
    assert scorer.sandbox is scorer.sandbox is built[0]
    scorer.close()
    scorer.close()
    assert built[0].closed and len(built) == 1
    assert scorer.sandbox is built[1]


def test_run_code_runs_through_the_port() -> None:
    """`run_code` asks any `Sandbox` for its run, its build time and its files, and reports
    the run and the sandbox's layers."""

    def answer(program: Program, stdin: bytes) -> Outcome:
        return Outcome(Kind.OK, stdin[::-1], "", 0, 0.5, {"out.txt": b"done"})

    sandbox = RecordingSandbox(answer=answer)
    scorer = RunCodeScorer(sandbox_factory=lambda settings: sandbox)
    label = {"language": "python", "stdin": "abc", "compile_timeout": 3, "fetch_files": ["out.txt"]}
    score = scorer.score(None, "print(input()[::-1])", label, {})
    assert (score.status, score.details["run"]["stdout"]) == (Status.OK, "cba")
    assert score.details["files"] == {"out.txt": base64.b64encode(b"done").decode()}
    assert score.details["sandbox"] == ["recording"]
    (call,) = sandbox.calls
    assert (call.program.source, call.stdins, call.build_time_s) == (
        "print(input()[::-1])",
        [b"abc"],
        3.0,
    )
    assert (call.fetch, call.budget_s) == (("out.txt",), scorer.budget_s)
