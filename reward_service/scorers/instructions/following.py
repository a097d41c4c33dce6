"""Whether a response follows its instructions, strictly and loosely, as IFEval defines it.

Strict: the checker accepts the response as it is. Loose: it accepts the
response or one of seven variants (the first line, the last line or both
removed, each with and without `*`), which forgives a preamble, a closing
remark and Markdown emphasis. A checker is built from the instruction's
arguments, and rebuilt with the prompt when it quotes the prompt, exactly as
the reference graders (IFEval's and IFBench's `evaluation_lib`) build it.
The loose check of an instruction the strict check failed runs the checker up
to seven more times, so it runs only when asked for (`loose=True`); a strict
pass is a loose pass, so that verdict costs nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from reward_service.errors import RewardServiceError
from reward_service.scorers.instructions.checkers import Checkers
from reward_service.scorers.instructions.inputs import Instructions


@dataclass(frozen=True)
class Followed:
    """One instruction's verdicts."""

    instruction_id: str
    strict: bool
    loose: bool | None
    """None when not computed: the strict check failed and no loose verdict was asked for."""

    def detail(self) -> dict[str, object]:
        return {"id": self.instruction_id, "strict": self.strict, "loose": self.loose}


class CannotCheck(RewardServiceError):
    """An instruction cannot be checked: unknown, its data missing, or bad arguments."""


def loose_variants(response: str) -> list[str]:
    """The response and the seven variants the loose check also tries."""
    lines = response.split("\n")
    cut = ["\n".join(lines[1:]).strip(), "\n".join(lines[:-1]).strip()]
    cut.append("\n".join(lines[1:-1]).strip())
    return [response, response.replace("*", ""), *cut, *(text.replace("*", "") for text in cut)]


def _passes(checker: Any, text: str) -> bool:
    return bool(text.strip()) and bool(checker.check_following(text))


def follow(
    checkers: Checkers, instructions: Instructions, response: str, *, loose: bool
) -> list[Followed]:
    """Each instruction's strict verdict on `response`, and its loose one where `loose` asks or
    the strict check passed; `CannotCheck` naming why they cannot be had."""
    unknown = [i for i in instructions.ids if i not in checkers.registry]
    if unknown:
        raise CannotCheck(f"unknown {checkers.benchmark} instruction id(s): {', '.join(unknown)}")
    variants: list[str] | None = None
    followed = []
    for instruction_id, kwargs in zip(instructions.ids, instructions.kwargs, strict=True):
        missing = checkers.missing_for(instruction_id)
        if missing:
            raise CannotCheck(
                f"{instruction_id} needs NLTK data not installed here: {', '.join(missing)}"
            )
        try:
            checker = checkers.registry[instruction_id](instruction_id)
            checker.build_description(**kwargs)
            args = checker.get_instruction_args()
            if args and "prompt" in args:
                checker.build_description(prompt=instructions.prompt_text)
            strict = _passes(checker, response)
            loosely: bool | None = True if strict else None
            if not strict and loose:
                variants = loose_variants(response)[1:] if variants is None else variants
                loosely = any(_passes(checker, text) for text in variants)
        except Exception as exc:  # a checker's failure is this instruction's, named
            raise CannotCheck(f"{instruction_id}: {type(exc).__name__}: {exc}") from exc
        followed.append(Followed(instruction_id, strict, loosely))
    return followed
