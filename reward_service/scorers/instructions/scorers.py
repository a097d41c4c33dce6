"""`ifeval` and `ifbench`: does the response follow the instructions its label lists?

The instructions come as SLIME's `ifbench` reads them from sample metadata
(`inputs.py`), here from the label object's keys or the label
itself. The response graded is its answer region, read as every scorer reads it
(`scorers.reasoning`: a reasoning block never closed or closed twice is
`no_answer`; option `think=after`, SLIME's reading: what follows the last
`</think>`; `think=keep`: all of it). Option `reward`: `strict` (the default, SLIME's
reward: 1.0 when every instruction passes the strict check, else 0.0),
`loose` (every one passes the loose check), `partial` and `partial_loose`
(the fraction that pass). `?detail=1` lists each instruction's strict and loose
verdicts; the loose check runs only for the loose rewards (up to seven more checks
of each instruction the strict check failed), so under `strict` and `partial` a
loose verdict is given only where the strict one passed. An unknown instruction
id, arguments a checker refuses and data a checker lacks are `error`, naming them,
never a silent 0.0.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

from reward_service.scorers.base import (
    JSON,
    GradingLimits,
    Score,
    Scorer,
    ScorerSettings,
    StartupCheck,
    Status,
)
from reward_service.scorers.instructions.checkers import (
    NEEDS,
    Checkers,
    ChecksUnavailable,
    installed,
    load,
    warm,
)
from reward_service.scorers.instructions.following import CannotCheck, follow
from reward_service.scorers.instructions.inputs import FIELDS, read_instructions
from reward_service.scorers.reasoning import STRICT, THINK_MODES, Unanswered, answer_region

REWARDS = frozenset({"strict", "loose", "partial", "partial_loose"})
NOT_INSTALLED = "needs the ifeval extra: pip install 'reward-service[ifeval]'"
LOOSE_REWARDS = frozenset({"loose", "partial_loose"})
NOT_COMPUTED = "not computed where the strict check failed: reward=loose or partial_loose does"
"""The details' `loose_verdicts` under a strict reward, whose loose verdicts are null there."""


class InstructionScorer(Scorer):
    """The reward for following one benchmark's instructions; subclasses name the benchmark."""

    benchmark: ClassVar[str]
    options: ClassVar[Mapping[str, frozenset[str] | None]] = {
        **dict.fromkeys(FIELDS),
        "reward": REWARDS,
        "think": THINK_MODES,
    }

    def __init__(
        self, limits: GradingLimits | None = None, settings: ScorerSettings | None = None
    ) -> None:
        super().__init__(limits, settings)
        self._checkers: Checkers | str | None = None

    def checkers(self) -> Checkers | str:
        """The checkers, loaded by this worker's first instruction answer (~1 s, ~125 MiB:
        a worker that never grades one pays neither), or why they cannot be."""
        if self._checkers is None and not installed():
            self._checkers = f"{self.benchmark} {NOT_INSTALLED}"
        if self._checkers is None:
            try:
                self._checkers = load(self.benchmark)
                warm()
            except ChecksUnavailable as exc:
                self._checkers = f"{self.benchmark} checkers unavailable: {exc}"
        return self._checkers

    @classmethod
    def startup_check(
        cls, settings: ScorerSettings | None, limits: GradingLimits
    ) -> StartupCheck | None:
        if not installed():
            return StartupCheck(
                False,
                f"{cls.benchmark} {NOT_INSTALLED}; until then answers are errors",
                configured=False,
            )
        try:
            checkers = load(cls.benchmark)
        except ChecksUnavailable as exc:
            return StartupCheck(False, f"checkers unavailable; answers grade as errors: {exc}")
        affected = {
            instruction: [name for name in needs if name in checkers.missing]
            for instruction, needs in NEEDS[cls.benchmark].items()
            if checkers.missing.intersection(needs)
        }
        count = len(checkers.registry)
        missing = sorted({name for names in affected.values() for name in names})
        details = {"instructions": count, "missing_data": missing}
        if not affected:
            return StartupCheck(
                True, f"{count} instruction checkers, all data found", False, details
            )
        listed = "; ".join(f"{i} (needs {', '.join(names)})" for i, names in affected.items())
        return StartupCheck(
            True,
            f"{count - len(affected)} of {count} instruction checkers ready; NLTK data missing, "
            f"so these grade as errors: {listed}",
            False,
            {**details, "unavailable": sorted(affected)},
            degraded=True,
        )

    def score(self, prompt: JSON, response: str, label: JSON, options: Mapping[str, JSON]) -> Score:
        checkers = self.checkers()
        if isinstance(checkers, str):
            return Score.error(checkers)
        reward = options.get("reward", "strict")
        think = options.get("think", STRICT)
        if not all(isinstance(v, str) for v in (reward, think)) or not (
            reward in REWARDS and think in THINK_MODES
        ):
            return Score.error(f"unknown option value: reward={reward!r}, think={think!r}")
        instructions = read_instructions(label, options)
        if instructions is None:
            return Score.error("no instruction ids (instruction_id_list) in the label")
        text = answer_region(response, str(think))
        if isinstance(text, Unanswered):
            return text.score(record_id=instructions.record_id)
        if not text.strip():
            return Score.no_answer("empty response", record_id=instructions.record_id)
        loose = reward in LOOSE_REWARDS
        try:
            followed = follow(checkers, instructions, text, loose=loose)
        except CannotCheck as exc:
            return Score.error(str(exc), record_id=instructions.record_id)
        passed = [bool(f.loose) if loose else f.strict for f in followed]
        everything = all(passed)
        value = sum(passed) / len(passed) if reward.startswith("partial") else float(everything)
        details = {
            "instructions": [f.detail() for f in followed],
            **({} if loose else {"loose_verdicts": NOT_COMPUTED}),
            "record_id": instructions.record_id,
        }
        return Score(value, Status.OK if everything else Status.WRONG, details)


class IfEvalScorer(InstructionScorer):
    """IFEval's 25 instruction types (Google's checkers)."""

    name = "ifeval"
    benchmark = "ifeval"


class IfBenchScorer(InstructionScorer):
    """IFBench's 58 instruction types (AllenAI's checkers), SLIME's `--rm-type ifbench`."""

    name = "ifbench"
    benchmark = "ifbench"
