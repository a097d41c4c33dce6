"""Linear-time verdicts for six checkers that cost quadratic time.

IFEval's `detectable_content:number_placeholders`, `detectable_format:number_bullet_lists`
and `detectable_content:postscript`, and IFBench's `custom:mcq_count_length`, search
with patterns that backtrack over a run of `[`, spaces or newlines once per position
in it: 40 kB of them held a worker for seconds. IFBench's `format:line_indent` and
`format:newline` remove blank or empty lines with `list.remove`, a scan from the list's
start for each one: 300 kB of `x` and blank lines held a worker for 35 s.

The scorers use the official classes (their arguments, descriptions and errors) with
`check_following` replaced by a function here that gives the same verdict in one pass
(`checkers.load`); `tests/scorers/instructions/test_linear_checkers.py` compares each
with the official one on the published data and on generated adversarial shapes.
"""

from __future__ import annotations

import re
import string
from collections import deque
from collections.abc import Callable, Mapping
from itertools import pairwise
from typing import Any

_NOT_SPACE = re.compile(r"\S")


def count_placeholders(text: str) -> int:
    """The official count of `[...]` placeholders: each `[` closed by the first `]` after it
    on its line, the search going on after that `]`; a `[` with no `]` left on its line
    ends that line's count (every later `[` on it has none either)."""
    count = 0
    for line in text.split("\n"):
        opened = line.find("[")
        while opened != -1:
            closed = line.find("]", opened + 1)
            if closed == -1:
                break
            count += 1
            opened = line.find("[", closed + 1)
    return count


def _star_bullet_end(text: str, first: int) -> int:
    """Where a `*` bullet starting at `first` ends (its line's end), or -1: a `*` then one
    character that is not `*` (a newline included, which carries it to the next line)."""
    if text[first : first + 1] != "*" or first + 1 >= len(text) or text[first + 1] == "*":
        return -1
    return _line_end(text, first + 2)


def _dash_bullet_end(text: str, first: int) -> int:
    """Where a `-` bullet starting at `first` ends (its line's end), or -1."""
    return _line_end(text, first + 1) if text[first : first + 1] == "-" else -1


def _line_end(text: str, position: int) -> int:
    end = text.find("\n", position)
    return len(text) if end == -1 else end


def _count_bullets(text: str, bullet_end: Callable[[str, int], int]) -> int:
    """How many bullets a multiline `^\\s*<bullet>.*$` finds, without its backtracking.

    From a line start the pattern's `\\s*` can only end where the whitespace run ends
    (any shorter run leaves whitespace where the bullet must be), and that run may
    cross newlines: every line start inside it ends there too, so one look serves them
    all. The next search begins at the first line start after the run, or after the
    bullet's own line.
    """
    count, start = 0, 0
    while True:
        found = _NOT_SPACE.search(text, start)
        first = len(text) if found is None else found.start()
        end = bullet_end(text, first)
        if end != -1:
            count += 1
        newline = text.find("\n", first if end == -1 else end)
        if newline == -1:
            return count
        start = newline + 1


def count_bullets(text: str) -> int:
    """The official count of Markdown bullets: lines starting `* x` plus lines starting `-`."""
    return _count_bullets(text, _star_bullet_end) + _count_bullets(text, _dash_bullet_end)


_POSTSCRIPT_PATTERNS = {"P.P.S": r"p\.\s?p\.\s?s", "P.S.": r"p\.\s?s\."}
"""The two markers the official checker spells loosely (optional spaces, any case)."""


def has_postscript(text: str, marker: Any) -> bool:
    """Whether the lowercased text holds the official postscript pattern for `marker`.

    The official pattern is `\\s*<marker>.*$`, searched at every position: inside a
    whitespace run every start backtracks over the rest of the run. A match from
    inside a run is also one from the run's first character (`\\s*` can stop anywhere
    in the run, or runs through it when possessive), so searching only where no
    whitespace precedes (`(?<!\\s)`) finds a match exactly when the official does.
    A marker other than the two is the label's regular expression, as for the official
    checker (compiled as the official one is first, so a bad one fails alike).
    """
    lowered = text.lower()
    body = _POSTSCRIPT_PATTERNS.get(marker) if isinstance(marker, str) else None
    pattern = r"\s*" + (marker.lower() if body is None else body) + r".*$"
    re.compile(pattern, re.MULTILINE)
    return re.search(r"(?<!\s)" + pattern, lowered, re.MULTILINE) is not None


_QUESTION = re.compile(r"Question \d+[.|):;]?\s*")
_OPTION = re.compile(r"[A-Ea-e][.|)]\s*\w+")


def split_questions(text: str) -> list[str]:
    """The official split of `text` at `\\n*Question <number>[.|):;]? <spaces>` separators.

    The leftmost separator starts at the leftmost `Question <number>` found, taking the
    newlines just before it back to where the search started; the search goes on after
    it. Found this way, a run of newlines is read once, not once per newline in it.
    """
    pieces: list[str] = []
    kept = searched = 0
    while (found := _QUESTION.search(text, searched)) is not None:
        cut = found.start()
        while cut > searched and text[cut - 1] == "\n":
            cut -= 1
        pieces.append(text[kept:cut])
        kept = searched = found.end()
    pieces.append(text[kept:])
    return pieces


def follows_mcq(text: str) -> bool:
    """IFBench's four-questions check: the text starts at `Question`, holds four questions of
    five `A.`-`E.` options each, and each question's text is longer than the one before."""
    if text[text.find("Question") :] != text:  # an explanation before the first question
        return False
    questions = split_questions(text)
    if questions[0] == "":
        questions = questions[1:]
    questions = [q.strip() for q in questions if q.strip()]
    if len(questions) != 4:
        return False
    lengths = []
    for question in questions:
        asked: list[str] = []
        options = 0
        for line in question.split("\n"):
            if _OPTION.match(line.strip()):
                options += 1
            elif not options:
                asked.append(" " + line.strip())
        if options != 5:
            return False
        lengths.append(len("".join(asked).strip()))
    return all(shorter < longer for shorter, longer in pairwise(lengths))


def follows_stairs(text: str) -> bool:
    """IFBench's `format:line_indent`: each line kept indented by more spaces than the one
    before. The official loop removes blank lines (`not line.strip()`) from the list it is
    iterating over, by `list.remove`: that deletes the *first* line equal to the blank one,
    and the iteration then skips the line after it. So a skipped blank line stays, unless a
    later equal one's `remove` takes it first. Here the same lines are kept in one pass, with
    a queue per blank string of its lines still in the list, oldest first."""
    lines = text.split("\n")
    kept = [True] * len(lines)
    remaining: dict[str, deque[int]] = {}
    at = 0
    while at < len(lines):
        if lines[at].strip():
            at += 1
            continue
        same = remaining.setdefault(lines[at], deque())
        same.append(at)
        kept[same.popleft()] = False
        skipped = at + 1
        if skipped < len(lines) and not lines[skipped].strip():
            remaining.setdefault(lines[skipped], deque()).append(skipped)
        at += 2
    indents = [len(line) - len(line.lstrip(" ")) for line, k in zip(lines, kept, strict=True) if k]
    return all(before < after for before, after in pairwise(indents))


_PUNCTUATION = str.maketrans("", "", string.punctuation)


def follows_word_lines(text: str) -> bool:
    """IFBench's `format:newline`: with ASCII punctuation removed, as many non-empty lines
    as words. The official loop takes the empty lines out one `list.remove("")` at a time."""
    text = text.translate(_PUNCTUATION).strip()
    return sum(1 for line in text.split("\n") if line) == len(text.split())


Check = Callable[[Any, str], bool]
"""A replacement `check_following(self, value)` for an official checker class."""

LINEAR: Mapping[str, Mapping[str, Check]] = {
    "ifeval": {
        "detectable_content:number_placeholders": (
            lambda checker, value: count_placeholders(value) >= checker._num_placeholders
        ),
        "detectable_format:number_bullet_lists": (
            lambda checker, value: count_bullets(value) == checker._num_bullets
        ),
        "detectable_content:postscript": (
            lambda checker, value: has_postscript(value, checker._postscript_marker)
        ),
    },
    "ifbench": {
        "custom:mcq_count_length": lambda checker, value: follows_mcq(value),
        "format:line_indent": lambda checker, value: follows_stairs(value),
        "format:newline": lambda checker, value: follows_word_lines(value),
    },
}
"""By benchmark and instruction id, the linear `check_following` that replaces the official."""
