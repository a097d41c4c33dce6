"""Which hard deadline each scorer gets: a setting naming it (or, for `boxed_<type>`, naming
`<type>`), else its own `deadline_s`, else `REWARD_DEADLINE_S`."""

from __future__ import annotations

import json

import pytest

from reward_service.errors import InvalidSetting
from reward_service.grading.deadlines import resolve_deadlines
from reward_service.scorers import GradingLimits, ScorerRegistry
from reward_service.scorers.answers.exact import ExactScorer
from reward_service.scorers.code.run_code import RunCodeScorer
from reward_service.scorers.code.scorer import CodeScorer
from reward_service.scorers.composite import OPEN_R1, CompositeDefinition
from reward_service.scorers.llm_judge.scorers import JudgeScorer
from reward_service.scorers.llm_judge.settings import JudgeSettings
from reward_service.scorers.registry import BUILTINS
from reward_service.settings import Settings

NAMED = {"code": 45, "boxed_f1": 7, "math_verify": 5, "judge": 90, "boxed_math_judge": 100}
"""`REWARD_SCORER_DEADLINES` of the last case below."""
FAKE = "reward_service.testing:FakeScorer"


def _table(rest: float, **special: float) -> dict[str, float]:
    """Every built-in scorer's deadline: `special`'s, else `rest`."""
    return {name: special.get(name, rest) for name in ScorerRegistry(BUILTINS).names()}


OWN = {"code": 30.0, "boxed_code": 30.0, "run_code": 30.0, "boxed_run_code": 30.0}
OWN |= {"judge": 60.0, "boxed_judge": 60.0, "math_judge": 60.0, "boxed_math_judge": 60.0}


def _resolved(settings: Settings) -> dict[str, float]:
    """The deadline of every built-in scorer as the engine resolves it."""
    return resolve_deadlines(settings, ScorerRegistry(BUILTINS))


def _limits(settings: Settings) -> GradingLimits:
    """The limits the engine hands its scorers."""
    return GradingLimits(deadlines=_resolved(settings))


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({}, _table(10.0, **OWN)),
        ({"REWARD_DEADLINE_S": "20"}, _table(20.0, **OWN)),
        (
            {"REWARD_DEADLINE_S": "20", "REWARD_SCORER_DEADLINES": json.dumps(NAMED)},
            _table(
                20.0,
                **OWN
                | {"code": 45, "boxed_code": 45, "boxed_f1": 7}
                | {"math_verify": 5, "boxed_math_verify": 5}
                | {"judge": 90, "boxed_judge": 90, "boxed_math_judge": 100},
            ),
        ),
    ],
    ids=["defaults", "deadline_s", "per-scorer"],
)
def test_each_built_in_scorer_has_the_deadline_it_always_had(
    monkeypatch: pytest.MonkeyPatch, env: dict[str, str], expected: dict[str, float]
) -> None:
    """The resolved deadline of every built-in scorer, under default settings, under
    `REWARD_DEADLINE_S` and under per-scorer `REWARD_SCORER_DEADLINES`."""
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert _resolved(Settings()) == expected


def test_scorers_that_spend_their_deadline_get_the_resolved_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The code scorers' budgets end a margin inside the engine's deadline; the judge's own
    deadline must stay below it."""
    monkeypatch.setenv("REWARD_SCORER_DEADLINES", json.dumps(NAMED))
    limits = _limits(Settings())
    assert CodeScorer(limits).budget_s == 44
    assert RunCodeScorer(limits).budget_s == 29
    assert JudgeScorer.startup_check(JudgeSettings(deadline_s=89), limits) is not None
    with pytest.raises(InvalidSetting, match=r"judge's deadline \(90"):
        JudgeScorer.startup_check(JudgeSettings(deadline_s=90), limits)


def test_a_scorer_built_outside_an_engine_has_its_own_deadline() -> None:
    """A test or a bench building a code scorer alone gets its declared 30 s."""
    assert CodeScorer(GradingLimits()).budget_s == 29
    assert RunCodeScorer(GradingLimits()).budget_s == 29


def test_a_boxed_scorer_keeps_its_inner_scorers_deadline_unless_it_has_its_own() -> None:
    """`boxed_math_verify` gets `math_verify`'s setting; `boxed_f1` its own; `boxed_exact` the
    service's."""
    settings = Settings(scorer_deadlines={"math_verify": 20, "boxed_f1": 7})
    deadlines = resolve_deadlines(settings, ScorerRegistry(BUILTINS))
    assert deadlines["boxed_math_verify"] == 20
    assert (deadlines["boxed_f1"], deadlines["f1"]) == (7, settings.deadline_s)
    assert deadlines["boxed_exact"] == settings.deadline_s


def test_a_scorers_own_deadline_applies_unless_a_setting_names_it() -> None:
    """`code`'s own 30 s beats `REWARD_DEADLINE_S`; a setting naming it beats both."""
    registry = ScorerRegistry(BUILTINS)
    assert resolve_deadlines(Settings(deadline_s=20), registry)["code"] == 30
    assert resolve_deadlines(Settings(scorer_deadlines={"code": 45}), registry)["code"] == 45


def test_a_scorer_named_with_the_prefix_is_not_a_boxed_variant() -> None:
    """A plugin registered as `boxed_fake` is a scorer of its own: `fake`'s setting is not its."""
    registry = ScorerRegistry({"fake": FAKE, "boxed_fake": FAKE})
    deadlines = resolve_deadlines(Settings(scorer_deadlines={"fake": 3}), registry)
    assert (deadlines["fake"], deadlines["boxed_fake"]) == (3, Settings().deadline_s)


def test_a_scorer_declaring_no_deadline_has_none_outside_an_engine() -> None:
    """Outside an engine only a declared deadline is known: no number is made up."""
    with pytest.raises(LookupError, match="no deadline for scorer 'exact'"):
        GradingLimits().deadline_for(ExactScorer)
    assert GradingLimits(deadlines={"exact": 4.0}).deadline_for(ExactScorer) == 4.0


def test_a_composite_gets_the_longest_deadline_of_its_scorers() -> None:
    """A composite grades each scorer component in turn: the longest of their deadlines,
    unless a setting names the composite itself."""
    mixed = CompositeDefinition.model_validate(
        {"components": {"a": {"scorer": "math_verify"}, "c": {"scorer": "code"}}}
    )
    registry = ScorerRegistry(BUILTINS, composites={"mixed": mixed, "open_r1": OPEN_R1})
    resolved = resolve_deadlines(Settings(scorer_deadlines={"math_verify": 5}), registry)
    assert (resolved["mixed"], resolved["open_r1"]) == (30.0, 5.0)
    named = resolve_deadlines(Settings(scorer_deadlines={"open_r1": 12}), registry)
    assert named["open_r1"] == 12.0
