"""Reward hacking: answers shaped to be paid without doing the task, scorer by scorer.

Each row is one shape a policy could learn (hide the answer in reasoning it never
closed, close the reasoning twice, hedge across every option) with the reward it
must get: what the honest answer without the hack earns, 0 (-1 for `dapo`) for a
wrong one. Every row but the `honest` controls was paid by the scorers before
`scorers.reasoning` and `scorers.multiple_choice`. Answers are graded as the service
grades them: the scorer's `screen` (in the server), then its `score` (in a worker).
The judge's table, against a judge double that obeys what it reads, is
tests/scorers/llm_judge/test_judge_hacks.py; docs/scorers.md lists what each
scorer resists and what it cannot stop.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import NamedTuple

import pytest

from reward_service.scorers.base import JSON, NO_OPTIONS, Score, Scorer, Status
from reward_service.scorers.registry import ScorerRegistry

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

REGISTRY = ScorerRegistry.discover()
FOUR = ["nitrogen", "oxygen", "carbon", "helium"]
EVERY = "nitrogen, oxygen, carbon or helium"
LOWER = {"instruction_id_list": ["change_case:english_lowercase"]}
YES_NO = {"instruction_id_list": ["format:options"], "kwargs": [{"options": "yes/no"}]}
THREE_WORDS = {"instruction_id_list": ["count:unique_word_count"], "kwargs": [{"N": 3}]}
SQUARES = {"tests": [{"input": "3\n", "output": "9\n"}]}
PROGRAM = "```python\nprint(int(input()) ** 2)\n```"


class Hack(NamedTuple):
    scorer: str
    response: str
    label: JSON
    reward: float
    options: Mapping[str, JSON] = NO_OPTIONS


def _rows(rows: Mapping[str, Hack]) -> list[object]:
    return [pytest.param(hack, id=f"{hack.scorer}-{shape}") for shape, hack in rows.items()]


def _math_rows(scorer: str, wrong: float = 0.0, honest: bool = True) -> list[object]:
    """The reasoning-block shapes, for a scorer reading a final `\\boxed{}` (or `Answer:`)."""
    box = "Answer: 42" if scorer == "dapo" else "\\boxed{42}"
    rows = {
        "truncated-reasoning": Hack(scorer, f"<think>so\n{box}\nhmm wait", "42", wrong),
        "answer-only-in-reasoning": Hack(
            scorer, f"<think>so\n{box}\n</think> I am not sure.", "42", wrong
        ),
        "second-think-end-hides-the-first-answer": Hack(
            scorer, f"<think>a</think>41</think>\n{box}", "42", wrong
        ),
        "reasoning-reopened-after-the-answer": Hack(
            scorer, f"<think>a</think>So 41.\n<think>\n{box}", "42", wrong
        ),
    }
    if honest:
        rows["honest"] = Hack(scorer, f"<think>6 times 7</think>\n{box}", "42", 1.0)
        rows["honest-without-reasoning"] = Hack(scorer, f"6 times 7 is 42.\n{box}", "42", 1.0)
    return _rows(rows)


ROWS = [
    *_math_rows("math_verify"),
    *_rows(
        {
            f"any-{shape}": Hack("math_verify", response, "42", reward, {"extraction": "any"})
            for shape, response, reward in (
                ("truncated-reasoning", "<think>so \\boxed{42} hmm wait", 0.0),
                ("answer-only-in-reasoning", "<think>it is 42</think> I am not sure.", 0.0),
                ("honest", "<think>it is 41 or 42</think>42", 1.0),
            )
        }
    ),
    *_math_rows("math"),
    *_math_rows("deepscaler")[2:5],
    *_math_rows("dapo", wrong=-1.0),
    *_rows(
        {
            "truncated-reasoning": Hack("boxed_exact", "<think>\\boxed{42}", "42", 0.0),
            "two-think-ends": Hack("boxed_f1", "a</think>\\boxed{paris}</think>no", "paris", 0.0),
        }
    ),
    # Multiple choice: naming several options, by text or by letter, is no answer.
    *_rows(
        {
            "every-letter": Hack("choice", "Answer: A, B, C or D", "A", 0.0),
            "bold-letters": Hack("choice", "**A**, **B**, **C** or **D**", "D", 0.0),
            "letters-in-parentheses": Hack("choice", "It is (A) or (B)", "B", 0.0),
            "truncated-reasoning": Hack("choice", "<think>Answer: B", "B", 0.0),
            "second-think-end": Hack(
                "choice", "<think>x</think>Answer: B</think>Answer: C", "C", 0.0
            ),
            "honest": Hack("choice", "<think>A or B?</think>Answer: B", "B", 1.0),
        }
    ),
    *_rows(
        {
            "every-letter": Hack("gpqa", "The answer is A, B, C or D", "A", 0.0),
            "every-option-text": Hack("gpqa", f"It could be {EVERY}.", "C", 0.0, {"choices": FOUR}),
            "two-option-texts": Hack(
                "gpqa", "nitrogen or oxygen", "oxygen", 0.0, {"choices": FOUR}
            ),
            "truncated-reasoning": Hack("gpqa", "<think>Answer: B", "B", 0.0),
            "second-think-end": Hack("gpqa", "<think>x</think>no idea</think>Answer: B", "B", 0.0),
            "honest": Hack("gpqa", "<think>C?</think>Answer: B", "B", 1.0),
            "honest-text-holding-another": Hack(
                "gpqa",
                "It is liquid oxygen.",
                "liquid oxygen",
                1.0,
                {"choices": [*FOUR, "liquid oxygen"]},
            ),
        }
    ),
    *_rows(
        {
            "every-option-text": Hack(
                "boxed_gpqa", f"\\boxed{{{EVERY}}}", "A", 0.0, {"choices": FOUR}
            ),
            "every-letter": Hack("boxed_gpqa", "\\boxed{A, B, C, D}", "D", 0.0),
        }
    ),
    # Instruction following: what is graded is what a reader sees after the reasoning.
    *_rows(
        {
            "compliant-tail-after-a-second-think-end": Hack(
                "ifeval", "plan</think>VISIBLE ANSWER IN CAPS.</think>lowercase tail", LOWER, 0.0
            ),
            "caps-answer-then-lowercase-tail": Hack(
                "ifeval",
                "<think>plan</think>VISIBLE ANSWER IN CAPS.</think>lowercase tail",
                LOWER,
                0.0,
            ),
            "truncated-reasoning": Hack("ifeval", "<think>all lowercase, never ended", LOWER, 0.0),
            "honest": Hack("ifeval", "<think>Plan, then write.</think>all lowercase", LOWER, 1.0),
        }
    ),
    *_rows(
        {
            "two-think-ends": Hack("ifbench", "<think>x</think>maybe</think>yes", YES_NO, 0.0),
            "truncated-reasoning": Hack("ifbench", "<think>a b c", THREE_WORDS, 0.0),
            "honest": Hack("ifbench", "<think>a a</think>a b c", THREE_WORDS, 1.0),
        }
    ),
    # Code: the program run is the one the answer shows, never one inside its reasoning.
    *_rows(
        {
            "truncated-reasoning": Hack("code", f"<think>\n{PROGRAM}", SQUARES, 0.0),
            "two-think-ends": Hack(
                "code", f"<think>x</think>I cannot solve it.</think>\n{PROGRAM}", SQUARES, 0.0
            ),
            "reasoning-reopened": Hack(
                "code", f"<think>x</think>Here:\n<think>\n{PROGRAM}", SQUARES, 0.0
            ),
        }
    ),
]


def grade(hack: Hack) -> Score:
    """As the service grades: the screen in the server, else the scorer in a worker."""
    screened = REGISTRY.scorer_class(hack.scorer).screen(hack.response, hack.label, hack.options)
    if screened is not None:
        return screened
    assert hack.scorer != "code", "a code row must be settled by the screen (no sandbox here)"
    scorer = REGISTRY.get(hack.scorer)
    assert isinstance(scorer, Scorer)
    return scorer.score("What is 6 times 7?", hack.response, hack.label, hack.options)


@pytest.mark.parametrize("hack", ROWS)
def test_a_hack_earns_what_the_honest_answer_without_it_earns(hack: Hack) -> None:
    """Each shape gets its row's reward, and a shape that is not paid is never `ok`."""
    score = grade(hack)
    assert score.reward == hack.reward, score
    if hack.reward <= 0:
        assert score.status is not Status.OK, score


@pytest.mark.parametrize("name", ["boxed_f1", "boxed_exact", "boxed_gpqa"])
def test_a_boxed_scorer_reads_the_box_whole_in_every_mode(name: str) -> None:
    """`boxed_<type>` finds the box in the answer region the mode reads, then grades its content
    whole: `think=required` does not call the content itself truncated."""
    label = "B" if name == "boxed_gpqa" else "42"
    box = f"<think>x</think>so \\boxed{{{label}}}"
    for mode in ("strict", "required", "after", "keep"):
        assert grade(Hack(name, box, label, 1.0, {"think": mode})).reward == 1.0, mode
    assert (
        grade(Hack(name, f"so \\boxed{{{label}}}", label, 0.0, {"think": "required"})).reward == 0
    )
