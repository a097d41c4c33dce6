"""Pure grading: the `Scorer` interface, its registry and the built-ins, grouped by family.

The modules at this level are the contract and what every scorer shares: `base` (the
interface), `registry`, `labels` (gold labels), `reasoning` (the answer region every
scorer reads), `boxed` (SLIME's `boxed_` prefix) and `multiple_choice` (an answer naming
several options, shared by `choice` and `gpqa`). Every scorer lives in a package named for
its family, so a new scorer's room is found from the folder names alone:

    slime/         SLIME's `--rm-type` ports (`math`, `deepscaler`, `dapo`, `f1`, `gpqa`,
                   `random`) and their helper `math_dataset`
    answers/       our own answer checks, `exact` and `choice`: no dependency, no SLIME twin
    reward_model/  the `reward_model` scorer (the `rm` extra: torch, transformers), a
                   package of its own so the heavy family is not mistaken for the contract
    math_verify/   the `math_verify` scorer and its fast paths
    code/          programs run in the sandbox: `code`, `run_code` and their settings
    instructions/  `ifeval` and `ifbench`
    llm_judge/     `judge` and `math_judge`, a model deciding equivalence

`exact`, `choice` and `reward_model` left the top level so that it holds only what every
scorer may import: a module there is never a scorer.
"""

from reward_service.scorers.base import JSON, GradingLimits, Score, Scorer, Status
from reward_service.scorers.registry import ScorerRegistry

__all__ = ["JSON", "GradingLimits", "Score", "Scorer", "ScorerRegistry", "Status"]
