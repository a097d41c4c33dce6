"""`gpqa`: SLIME's `--rm-type gpqa`, multiple choice graded leniently.

Only the answer region is read (`scorers.reasoning`; SLIME reads what follows
the last `</think>`, `think=after`). The predicted letter is the
first match of `answer|option|choice [is|:] X`, else of `X is [the] correct`,
else of `final answer|option [is|:] X` (each case-insensitive, so `the answer
is about` reads as A); failing those, the last lone capital letter. Only
valid letters count: `valid_letters` if given, else the first letters for the
given `choices`, else A-J.

The gold letter is `correct_letter`, else a one-letter label, else a numeric
label as an index (`true` is 1), else the choice whose text equals the label.
A prediction and a gold letter settle the reward. Otherwise the response
earns 1.0 when the gold choice's text, `correct_answer`, `answer_text` or a
label that is not a letter occurs in it as whole words, and a prediction
without a gold letter earns 1.0 when it equals the stripped label.

Options (label-object keys, where SLIME reads sample metadata): `choices` (a
list, or an object whose values are the choices), `valid_letters`,
`correct_letter`, `correct_answer`, `answer_text`. A label object holding any
of them and neither `scorer` nor `answer` (`{"choices": [...], "correct_letter":
"B"}`) is read the same way when gpqa grades it.

Rewards are SLIME's, with five deliberate differences:

- where SLIME raises (a `choices` or `valid_letters` that is a number, a
  matched choice past the valid letters, an infinite or NaN index) the answer
  is `error`;
- a label that designates nothing (no gold letter and no text, e.g. null or a
  list) is `error`; both get the service's fallback reward, 0.0 by default as
  in SLIME, and count as failures;
- a one-letter gold label is never matched as a raw substring: SLIME adds the
  label to the texts it looks for and finds each anywhere in the normalised
  response, so it rewards "no idea" when the gold is A or D (the `a` and the
  `d` of `idea`). Here a letter label counts only against a predicted letter,
  and the texts (the gold choice's, `correct_answer`, `answer_text`, a label
  that is not a letter) match as whole words;
- a response naming more than one option is `no_answer`, never paid: an
  answer statement listing letters (`the answer is A, B or C`, where SLIME
  reads A), or, when no letter decides, a text naming two or more of the
  `choices` (`nitrogen, oxygen, carbon or helium`, which SLIME pays whatever
  the gold) (`scorers.multiple_choice`);
- a reasoning block that never closed, or closed twice, is `no_answer`
  (`scorers.reasoning`; `think=after` restores SLIME's reading).
"""

from __future__ import annotations

import re
import string
from collections.abc import Mapping, Sequence
from typing import ClassVar

from reward_service.scorers.base import JSON, Score, Scorer, Status
from reward_service.scorers.multiple_choice import (
    MORE_THAN_ONE,
    any_listed,
    lists_more_letters,
    named_options,
)
from reward_service.scorers.reasoning import THINK_MODES, Unanswered, final_answer

DEFAULT_LETTERS = tuple(string.ascii_uppercase[:10])
"""Letters accepted when neither `valid_letters` nor `choices` is given."""

_NON_WORD = re.compile(r"[^a-z0-9]+")
# SLIME's patterns, with possessive whitespace runs: a letter can never match
# inside a run of spaces, so the matches are the same, found in linear time.
_STATEMENTS = tuple(
    re.compile(pattern, re.IGNORECASE)
    for pattern in (
        r"(?:answer|option|choice)\s*+(?:is|:)?\s*+([A-Z])",
        r"([A-Z])\s*+is\s*+(?:the)?\s*+correct",
        r"final\s*+(?:answer|option)\s*+(?:is|:)?\s*+([A-Z])",
    )
)
_LONE_CAPITAL = re.compile(r"\b([A-Z])\b")
_TEXT_KEYS = ("correct_answer", "answer_text")
_OWN_KEYS = frozenset({"choices", "valid_letters", "correct_letter", *_TEXT_KEYS})
"""A label object holding any of these is gpqa's own: its keys are read as the options."""


def normal_text(text: str) -> str:
    """Lower case, each run of other than `a-z0-9` a space: `"Nitric-Oxide!"` -> `nitric oxide`."""
    return _NON_WORD.sub(" ", text.lower()).strip()


def extract_letter(text: str, letters: Sequence[str]) -> str | None:
    """The option letter SLIME reads in an answer `text`; `MORE_THAN_ONE` when the statement
    that gives it lists further letters; None when there is none."""
    valid = {letter.upper() for letter in letters}
    for pattern in _STATEMENTS:
        match = pattern.search(text)
        if match and match.group(1).upper() in valid:
            letter = match.group(1).upper()
            listed = lists_more_letters(text, match.end(1), letter, sorted(valid))
            return MORE_THAN_ONE if listed else letter
    lone = [(m[1], m.end(1)) for m in _LONE_CAPITAL.finditer(text) if m[1] in valid]
    if any_listed(text, lone, sorted(valid)):
        return MORE_THAN_ONE
    return lone[-1][0] if lone else None


def _choices(options: Mapping[str, JSON]) -> list[JSON] | None:
    """The choices, as SLIME lists them (an object's values, a string's characters)."""
    choices = options.get("choices")
    if isinstance(choices, dict):
        return list(choices.values())
    if choices is None:
        return None
    if isinstance(choices, list | str):
        return list(choices)
    raise ValueError(f"choices of type {type(choices).__name__} cannot be listed")


def _letters(options: Mapping[str, JSON], choices: list[JSON] | None) -> list[str]:
    given = options.get("valid_letters")
    if given:
        if not isinstance(given, list | str | dict):
            raise ValueError(f"valid_letters of type {type(given).__name__} cannot be listed")
        return [str(letter).upper() for letter in given]
    if choices:
        return list(string.ascii_uppercase[: len(choices)])
    return list(DEFAULT_LETTERS)


def _is_letter(text: str, letters: Sequence[str]) -> bool:
    return len(text) == 1 and text.upper() in letters


class GpqaScorer(Scorer):
    """1.0 when the response picks the gold option (by letter or text), else 0.0."""

    name = "gpqa"
    correct_is_label = True
    options: ClassVar[Mapping[str, frozenset[str] | None]] = {
        "choices": None,
        "valid_letters": None,
        "correct_letter": None,
        "correct_answer": None,
        "answer_text": None,
        "think": THINK_MODES,
    }

    def score(self, prompt: JSON, response: str, label: JSON, options: Mapping[str, JSON]) -> Score:
        if isinstance(label, Mapping) and _OWN_KEYS & label.keys():
            options = {**{k: v for k, v in label.items() if k in self.options}, **options}
            label = None
        try:
            choices = _choices(options)
            letters = _letters(options, choices)
        except ValueError as exc:
            return Score.error(str(exc))
        given = options.get("correct_letter")
        gold = given.strip().upper() if isinstance(given, str) else None
        texts = {key: options.get(key) for key in _TEXT_KEYS}
        label_text = None
        if isinstance(label, str):
            label_text = label.strip()
            if _is_letter(label_text, letters) and not gold:
                gold = label_text.upper()
        elif isinstance(label, int | float):
            try:
                index = int(label)
            except (ValueError, OverflowError):
                return Score.error("label index is not a finite number")
            if 0 <= index < len(letters):
                gold = letters[index]
        if not gold and choices and label_text:
            wanted = normal_text(label_text)
            for index, choice in enumerate(choices):
                if normal_text(str(choice)) == wanted:
                    if index >= len(letters):
                        return Score.error(f"choice {index} has no valid letter")
                    gold = letters[index]
                    if "correct_answer" not in options:
                        texts["correct_answer"] = choice
                    break
        region = final_answer(response, options)
        if isinstance(region, Unanswered):
            return region.score(gold=gold)
        pred = extract_letter(region, letters)
        if pred == MORE_THAN_ONE:
            return Score.no_answer(MORE_THAN_ONE, gold=gold)
        if pred and gold:
            return Score.verdict(pred == gold, pred=pred, gold=gold)
        candidates: list[str] = []
        if gold and choices and gold in letters and letters.index(gold) < len(choices):
            candidates.append(str(choices[letters.index(gold)]))
        candidates += [str(value) for value in texts.values() if value]
        if label_text and not _is_letter(label_text, letters):
            candidates.append(label_text)
        if not (gold or candidates or label_text):
            return Score.error(
                "label designates no option: give correct_letter, a letter, a 0-based index, "
                "correct_answer, answer_text, or the text of one of choices",
                pred=pred,
            )
        answer = normal_text(region)
        details: dict[str, JSON] = {"pred": pred, "gold": gold or [*candidates, label_text][0]}
        if choices and len(named_options(answer, [normal_text(str(c)) for c in choices])) > 1:
            return Score.no_answer(MORE_THAN_ONE, **details)
        answer = f" {answer} "
        if any(target and f" {target} " in answer for target in map(normal_text, candidates)):
            return Score(1.0, Status.OK, details)
        if pred and not gold and label_text:
            return Score.verdict(pred == label_text.upper(), **details)
        if pred:
            return Score(0.0, Status.WRONG, details)
        return Score.no_answer("no option letter or answer text found", **details)
