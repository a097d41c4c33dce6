"""What makes a multiple-choice answer no answer at all: naming several options.

A policy paid for a multiple-choice answer learns to hedge if hedging pays:
one statement listing several letters (`Answer: A, B or D`), or a text that
names every option (`it could be nitrogen, oxygen, carbon or helium`). The
`choice` and `gpqa` scorers read such a response as naming no option
(`no_answer`): an answer is one option. Both checks are linear in the text.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

MORE_THAN_ONE = "names more than one option"
"""The reason given for a response read as naming several options."""

_SEPARATOR = r"[ \t]*(?:[,/&]|\bor\b|\band\b)"
_MORE_LETTERS = re.compile(
    rf"[)*}}\]]*{_SEPARATOR}[ \t]*[(*\[]*([A-Z])(?=[)*}}\]]*(?:{_SEPARATOR}|[ \t]*[.;]|[ \t]*$))",
    re.MULTILINE,
)
"""A further letter listed right after an answer's letter: `, B`, ` or (C)`, `/D`, each
followed by a separator or the end of the line (so `B, I think` lists nothing)."""


def lists_more_letters(text: str, end: int, letter: str, letters: Sequence[str]) -> bool:
    """Whether the answer letter `letter`, ending at `end` in `text`, is followed by another
    valid letter in a list (`A, B`, `A or B`, `A/B`)."""
    more = _MORE_LETTERS.match(text, end)
    return more is not None and more[1] != letter and more[1] in letters


def any_listed(text: str, found: Sequence[tuple[str, int]], letters: Sequence[str]) -> bool:
    """Whether any of the letters `found` in `text` (each with where it ends) is followed by
    another valid letter in a list: the reading when the last of several letters decides."""
    return any(lists_more_letters(text, end, letter, letters) for letter, end in found)


def named_options(answer: str, texts: Sequence[str]) -> set[int]:
    """The indexes of the option `texts` that occur in `answer` as whole words.

    Both are normalised (`a-z0-9` words, one space apart). Longer texts are
    looked for first and their occurrences blanked, so `liquid oxygen` names
    one option, not also `oxygen`.
    """
    found: set[int] = set()
    spaced = _spaced(answer)
    for index in sorted(range(len(texts)), key=lambda i: -len(texts[i])):
        target = _spaced(texts[index])
        if texts[index] and target in spaced:
            found.add(index)
            spaced = spaced.replace(target, " | ")
    return found


def _spaced(text: str) -> str:
    """`text` with each word between spaces of its own, so occurrences never share one."""
    return " " + text.replace(" ", "  ") + " "
