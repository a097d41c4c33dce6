"""`choice`: multiple-choice letter answers, GPQA / MMLU style.

Only the answer region is read (`scorers.reasoning`: what follows the
`</think>`; a reasoning block never closed or closed twice is `no_answer`;
`think=after` reads after the last `</think>`, as this scorer once did). The letter
is the last explicit answer statement (`Answer: B`, `the answer is (B)`,
`correct option is **B**`, `\\boxed{B}`); failing that, the last bold
(`**B**`), parenthesised (`(B)`) or lone-line letter. Only letters of the
choices count: A-D for four choices, A-J when the choices are not given.

The label is a letter (`"B"`, `"b"`, `"(B)"`), a 0-based index (`1` is B),
or, when `options["choices"]` lists the choices, the text of one of them.

An explicit statement that lists several letters (`Answer: A, B or D`) names
no option: `no_answer` (`scorers.multiple_choice`).
"""

from __future__ import annotations

import re
import string
from collections.abc import Mapping, Sequence
from typing import ClassVar, NamedTuple

from reward_service.scorers.base import JSON, Score, Scorer
from reward_service.scorers.multiple_choice import MORE_THAN_ONE, any_listed, lists_more_letters
from reward_service.scorers.reasoning import THINK_MODES, Unanswered, final_answer

DEFAULT_LETTERS = "ABCDEFGHIJ"
"""Letters accepted when the choices are not given (MMLU-Pro has ten)."""

# Each wrapper character has exactly one way to match, so long runs cost linear time.
_WRAPPERS = r"(?:\\(?:boxed|text|textbf|mathbf|mathrm)\{|\\[(\[]|[\s*_$(\[{:=])*"
_EXPLICIT = (
    re.compile(
        r"(?i:answer|(?:correct|right|best)\s+(?:option|choice))(?:\s+is)?"
        + _WRAPPERS
        + r"([A-Z])(?![A-Za-z0-9])"
    ),
    re.compile(r"\\boxed\{\s*(?:\\text(?:bf)?\{\s*)?\(?([A-Za-z])\)?\s*\}"),
)
_IMPLICIT = (
    re.compile(r"\*\*\(?([A-Z])\)?[.:]?\*\*"),
    re.compile(r"\(([A-Z])\)"),
    re.compile(r"(?m)^[ \t*>#-]*([A-Z])[.)]?[ \t]*$"),
)


class _Found(NamedTuple):
    start: int
    letter: str
    end: int


_LABEL_LETTER = re.compile(r"[(\[]?\s*([A-Za-z])\s*[)\].]?")
_NON_WORD = re.compile(r"[^a-z0-9]+")


def _found(text: str, patterns: Sequence[re.Pattern[str]], letters: str) -> list[_Found]:
    """Each valid letter matched in `text` by any of `patterns`, in the order they start."""
    found = [
        _Found(match.start(), match.group(1).upper(), match.end(1))
        for pattern in patterns
        for match in pattern.finditer(text)
        if match.group(1).upper() in letters
    ]
    return sorted(found)


def extract_letter(answer: str, letters: str) -> str | None:
    """The option letter an answer commits to (the last of the explicit statements, else of
    the implicit marks); `MORE_THAN_ONE` when the deciding statement, or any implicit mark,
    lists further letters; None when it names none."""
    explicit = _found(answer, _EXPLICIT, letters)
    if explicit:
        last = explicit[-1]
        listed = lists_more_letters(answer, last.end, last.letter, letters)
        return MORE_THAN_ONE if listed else last.letter
    implicit = _found(answer, _IMPLICIT, letters)
    if any_listed(answer, [(mark.letter, mark.end) for mark in implicit], letters):
        return MORE_THAN_ONE
    return implicit[-1].letter if implicit else None


def _normal_text(text: str) -> str:
    return _NON_WORD.sub(" ", text.lower()).strip()


def _choice_texts(options: Mapping[str, JSON]) -> list[str] | None:
    """The listed choices, None when none are given; ValueError when unusable."""
    choices = options.get("choices")
    if choices is None:
        return None
    if not isinstance(choices, list) or not 0 < len(choices) <= len(string.ascii_uppercase):
        raise ValueError("choices must be a list of 1 to 26 options")
    return [str(choice) for choice in choices]


def gold_letter(label: JSON, letters: str, choices: list[str] | None) -> str:
    """The letter a label designates; ValueError saying why when it designates none."""
    if isinstance(label, float) and label.is_integer():
        label = int(label)
    if isinstance(label, int) and not isinstance(label, bool):
        if not 0 <= label < len(letters):
            raise ValueError(f"label index {label} is outside 0..{len(letters) - 1}")
        return letters[label]
    if not isinstance(label, str):
        raise ValueError(f"label of type {type(label).__name__} names no choice")
    letter = _LABEL_LETTER.fullmatch(label.strip())
    if letter:
        if letter[1].upper() not in letters:
            raise ValueError(f"label letter {letter[1]!r} is not among {letters}")
        return letter[1].upper()
    if choices is None:
        raise ValueError("label is not a letter and no choices were given")
    wanted = _normal_text(label)
    for index, choice in enumerate(choices):
        if _normal_text(choice) == wanted:
            return letters[index]
    raise ValueError("label matches none of the choices")


class ChoiceScorer(Scorer):
    """1.0 when the response's option letter is the label's, else 0.0."""

    name = "choice"
    correct_is_label = True
    options: ClassVar[Mapping[str, frozenset[str] | None]] = {
        "choices": None,
        "think": THINK_MODES,
    }
    """`choices`: the list of choice texts (a label object's key; a URL's value is text)."""

    def score(self, prompt: JSON, response: str, label: JSON, options: Mapping[str, JSON]) -> Score:
        try:
            choices = _choice_texts(options)
            letters = string.ascii_uppercase[: len(choices)] if choices else DEFAULT_LETTERS
            gold = gold_letter(label, letters, choices)
        except ValueError as exc:
            return Score.error(str(exc))
        answer = final_answer(response, options)
        if isinstance(answer, Unanswered):
            return answer.score(gold=gold)
        pred = extract_letter(answer, letters)
        if pred is None:
            return Score.no_answer("no option letter found", gold=gold)
        if pred == MORE_THAN_ONE:
            return Score.no_answer(MORE_THAN_ONE, gold=gold)
        return Score.verdict(pred == gold, pred=pred, gold=gold)
