"""What each `judge_on` setting of `math_judge` costs (judge calls) and saves (misses recovered),
measured on realistic misses: equivalent forms math_verify cannot read, beside plainly wrong
answers and answers it reads, graded by the real math_verify and a judge that knows which forms
it is shown mean the gold. The figures are docs/judge.md's:

    python -m pytest tests/scorers/llm_judge/test_judge_on.py -q
"""

from __future__ import annotations

from typing import Any, NamedTuple

import pytest

from reward_service.bench.chat_stand_in import (
    ChatStandIn,
    Reply,
    completion,
    prompt_of,
    section,
    verdict_form,
)
from reward_service.scorers.base import GradingLimits, Status
from reward_service.scorers.llm_judge.scorers import MathJudgeScorer
from reward_service.scorers.llm_judge.settings import JudgeSettings
from tests.scorers.llm_judge.test_judge_hacks import RuleInProcess

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


class Case(NamedTuple):
    response: str
    gold: str
    means_gold: frozenset[str] = frozenset()
    """What the judge may be shown of this answer that means the gold (empty: a wrong answer)."""


def _same(*forms: str) -> frozenset[str]:
    return frozenset(forms)


EQUIVALENT_BOXED = [
    Case("\\boxed{\\text{five}}", "5", _same("\\text{five}")),
    Case("\\boxed{\\text{twenty-four}}", "24", _same("\\text{twenty-four}")),
    Case("\\boxed{\\text{a half}}", "\\frac{1}{2}", _same("\\text{a half}")),
    Case("\\boxed{\\text{50 percent}}", "\\frac{1}{2}", _same("\\text{50\\%}")),
    Case(
        "\\boxed{\\text{all real numbers greater than 2}}",
        "(2, \\infty)",
        _same("\\text{all real numbers greater than 2}"),
    ),
    Case("\\boxed{x \\geq 2}", "[2, \\infty)", _same("x \\geq 2")),
    Case("\\boxed{2 \\le x \\le 5}", "[2, 5]", _same("2 \\le x \\le 5")),
    Case("\\boxed{\\text{no solution}}", "\\emptyset", _same("\\text{no solution}")),
    Case("\\boxed{\\pi/2 \\text{ radians}}", "90^\\circ", _same("\\pi/2")),
    Case("\\boxed{3 \\text{ hours and } 30 \\text{ minutes}}", "3.5", _same("3 hours and 30")),
    Case("\\boxed{90 \\text{ degrees}}", "\\frac{\\pi}{2}", _same("90 degrees")),
    Case("\\boxed{150 \\text{ cents}}", "1.5", _same("150 cents")),
]
"""Right answers math_verify reads and finds `wrong`: words, sets and intervals it cannot
compare, units. The last three it reads without their units (`pred` 3, 90, 150), so a judge
shown `pred` alone cannot see they are right."""
EQUIVALENT_UNBOXED = [
    Case("The answer is five.", "5", _same("the answer is five")),
    Case(
        "So the probability is one half.", "\\frac{1}{2}", _same("so the probability is one half")
    ),
    Case(
        "x can be any real number greater than 2.",
        "(2, \\infty)",
        _same("x can be any real number greater than 2"),
    ),
    Case("It takes three and a half hours.", "3.5", _same("it takes three and a half hours")),
    Case("Therefore x = 3.", "3", _same("therefore x = 3")),
    Case("The length is 0.5 m.", "\\frac{1}{2}", _same("the length is 0.5 m")),
]
"""Right answers with no box or anchor: math_verify finds no answer (`no_answer`)."""
WRONG = [
    Case("\\boxed{41}", "42"),
    Case("\\boxed{7}", "5"),
    Case("\\boxed{\\frac{1}{3}}", "\\frac{1}{2}"),
    Case("\\boxed{(3, \\infty)}", "(2, \\infty)"),
    Case("\\boxed{x = 4}", "3"),
    Case("\\boxed{\\text{six}}", "5"),
    Case("\\boxed{4 \\text{ hours}}", "3.5"),
    Case("\\boxed{[2, 6]}", "[2, 5]"),
    Case("\\boxed{\\text{Monday}}", "\\text{Tuesday}"),
    Case("\\boxed{\\text{two}}", "\\frac{1}{2}"),
    Case("\\boxed{0}", "1"),
    Case("\\boxed{-3}", "3"),
    Case("The answer is seven.", "5"),
    Case("I could not finish the computation.", "12"),
    Case("Therefore x = 4.", "3"),
    Case("So the probability is one third.", "\\frac{1}{2}"),
]
"""Plainly wrong answers: twelve math_verify reads (`wrong`), four it finds none in."""
READ = [
    Case("\\boxed{42}", "42"),
    Case("\\boxed{\\frac{1}{2}}", "0.5"),
    Case("\\boxed{x = 3}", "3"),
    Case("\\boxed{0.5 m}", "\\frac{1}{2}"),
    Case("Final answer: x = 3", "3"),
    Case("\\boxed{(2,\\infty)}", "(2, \\infty)"),
]
"""Right answers math_verify reads (`ok`): never sent to the judge."""
CASES = [*EQUIVALENT_BOXED, *EQUIVALENT_UNBOXED, *WRONG, *READ]


def _lenient(text: str) -> str:
    return " ".join(text.replace("\\text{", "").replace("}", "").lower().split()).rstrip(".")


def knowing_judge(request: dict[str, Any]) -> Reply:
    """A judge that knows, for each case, which forms it may be shown mean the gold."""
    prompt = prompt_of(request)
    case = CASES[int(prompt.partition("Question ")[2].partition(":")[0])]
    shown = _lenient(section(prompt, "Candidate's final answer:"))
    correct = any(shown == _lenient(form) for form in case.means_gold)
    return completion(f"{verdict_form(prompt)}{'CORRECT' if correct else 'INCORRECT'}")


class Figures(NamedTuple):
    calls: int
    recovered_boxed: int
    recovered_unboxed: int
    wrong_paid: int
    read_kept: int


async def _measure(stand_in: ChatStandIn, judge_on: str) -> Figures:
    stand_in.reset(knowing_judge)
    settings = JudgeSettings(base_url=stand_in.base_url, model="judge", max_retries=0)
    scorer = MathJudgeScorer(GradingLimits(deadlines={"math_judge": 60.0}), settings)
    scorer.use_workers(RuleInProcess())
    await scorer.open()
    try:
        rewards = [
            (
                await scorer.score(
                    f"Question {n}: what is it?", case.response, case.gold, {"judge_on": judge_on}
                )
            ).reward
            for n, case in enumerate(CASES)
        ]
    finally:
        await scorer.close()
    paid = dict(zip(map(id, CASES), rewards, strict=True))
    return Figures(
        stand_in.calls,
        sum(paid[id(case)] == 1.0 for case in EQUIVALENT_BOXED),
        sum(paid[id(case)] == 1.0 for case in EQUIVALENT_UNBOXED),
        sum(paid[id(case)] > 0 for case in WRONG),
        sum(paid[id(case)] == 1.0 for case in READ),
    )


async def test_the_cases_are_the_misses_they_stand_for() -> None:
    """math_verify finds the boxed equivalents and twelve plain wrongs `wrong`, the unboxed and
    four plain wrongs `no_answer`, and reads the rest right."""
    rule = RuleInProcess()
    statuses = {
        case.response: (await rule("math_verify", ("q", case.response, case.gold, {}))).status
        for case in CASES
    }
    assert {statuses[c.response] for c in EQUIVALENT_BOXED} == {Status.WRONG}
    assert {statuses[c.response] for c in EQUIVALENT_UNBOXED} == {Status.NO_ANSWER}
    assert [statuses[c.response] for c in WRONG] == [Status.WRONG] * 12 + [Status.NO_ANSWER] * 4
    assert {statuses[c.response] for c in READ} == {Status.OK}


@pytest.mark.parametrize(
    ("judge_on", "figures"),
    [
        (
            "wrong",
            Figures(calls=24, recovered_boxed=9, recovered_unboxed=0, wrong_paid=0, read_kept=6),
        ),
        (
            "no_answer",
            Figures(calls=10, recovered_boxed=0, recovered_unboxed=6, wrong_paid=0, read_kept=6),
        ),
        (
            "both",
            Figures(calls=34, recovered_boxed=9, recovered_unboxed=6, wrong_paid=0, read_kept=6),
        ),
    ],
)
async def test_what_each_judge_on_costs_and_saves(
    stand_in: ChatStandIn, judge_on: str, figures: Figures
) -> None:
    """Each setting calls the judge once per rule miss it looks at again and recovers the right
    answers among them it may show the judge, never paying a wrong one."""
    assert await _measure(stand_in, judge_on) == figures
