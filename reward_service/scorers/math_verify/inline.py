"""Integer verdicts the server settles itself, with no worker round trip.

Most answers of integer-only datasets (DAPO-Math, GSM8K) end the same way:
a box holding a bare integer, at most wrapped in `$..$`, then a full stop.
For exactly that shape the verdict of the `math_verify` scorer is a pure
function of the two integers, so the server can give it in microseconds.

The shape, with `B` the response's last `\\boxed{`, `D` a bare ASCII
integer of at most 30 digits and `T` the text after the answer:

* (plain) the response from `B` on is `\\boxed{D}` then `T`;
* (inline math) the same wrapped as `$\\boxed{D}$`, the `$` preceded by
  the response's start or one of `_OPENER_AFTER` (never `\\`, `$` or a
  digit, which would stop math_verify's `$` pattern from opening there);

`T` is at most 64 characters of `_TAIL_CHARS` (whitespace, punctuation).
When the response boxes something earlier too: in the plain shape the
box before `B` closes 70 characters or more before it (or never); in the
inline shape the line of `B` holds no other box and the text before the
`$` does not end in "and", "or" or ",".

Why math_verify's answer is then `D` (see `extract` for the
patterns): it grades the priority-0 match that ends rightmost. A match
ending after `B`'s `}` needs, after it, a closing delimiter (`$`, `$$`,
`\\]`, `\\)`, `]`), a `}`, "I hope" or a percent word; `T` holds none.

* Plain shape: that leaves the plain box, `\\boxed{` at the first box
  through `B`'s `}`, read with `boxed="last"`. That reading walks the
  boxes from the right and joins the one before `B` only when less than
  70 characters lie between them, so it reads `D` alone.
* Inline shape: the `$` match opening just before `B` ends after the
  closing `$` (and any whitespace), later than the plain box. No other
  box-holding match can end as late: it would have to hold `B`, crossing
  the unescaped `$` (only `$$`, `\\[`, `\\(`, `[` may, and nothing after
  `B` closes them), or end at that `$` (a `$` match opened earlier on the
  line around another box), or chain into it with "and", "or" or ",".
  Nothing can follow it either, so it wins, and its box content is `D`.

math_verify's normaliser leaves `D` unchanged, and the worker's fast path
compares `int(D)` with each integer gold, which
`tests/scorers/math_verify/test_inline.py` and the differential test check
against plain math_verify.

Everything here is a bounded number of `str` searches (linear, in C) and
comparisons on short slices, so it is safe on the event loop.
"""

from __future__ import annotations

from reward_service.scorers.base import JSON, Score
from reward_service.scorers.labels import gold_texts

_BOX_OPEN = "\\boxed{"
_MAX_DIGITS = 30
_ASCII_DIGITS = frozenset("0123456789")
_OPENER_AFTER = frozenset(" \t\n*:")
_TAIL_CHARS = frozenset(" \t\n\r.,;:!*")
_MAX_TAIL = 64
_BOX_GAP = 70
"""Characters between two boxes at which math_verify stops joining them."""
_CHAIN_WORDS = ("and", "or", ",")
_MAX_SPACE_BEFORE = 200
_MAX_BRACES = 256


class _TooManyBraces(Exception):
    """A brace walk would take longer than this module promises."""


def bare_integer(text: str) -> int | None:
    """The value of `text` when it is `[+-]?[0-9]{1,30}`, else None."""
    digits = text[1:] if text[:1] in ("+", "-") else text
    if not 0 < len(digits) <= _MAX_DIGITS or not _ASCII_DIGITS.issuperset(digits):
        return None
    return int(text)


def boxed_integer(response: str) -> str | None:
    """`D` when `response` has one of the shapes above, else None."""
    start = response.rfind(_BOX_OPEN)
    if start < 0:
        return None
    content_start = start + len(_BOX_OPEN)
    close = response.find("}", content_start, content_start + _MAX_DIGITS + 2)
    if close < 0 or bare_integer(response[content_start:close]) is None:
        return None
    inline = start > 0 and response[start - 1] == "$"
    tail_start = close + 2 if inline else close + 1
    if inline and response[close + 1 : close + 2] != "$":
        return None
    if len(response) - tail_start > _MAX_TAIL or not _TAIL_CHARS.issuperset(response[tail_start:]):
        return None
    if inline and not _opens_inline_math(response, start - 1):
        return None
    previous = max(response.rfind("\\boxed", 0, start), response.rfind("\\fbox", 0, start))
    if previous >= 0 and not (
        _alone_on_its_line(response, start - 1) if inline else _apart(response, previous, start)
    ):
        return None
    return response[content_start:close]


def _opens_inline_math(response: str, dollar: int) -> bool:
    """math_verify's `$` pattern may open at `dollar`."""
    return dollar == 0 or response[dollar - 1] in _OPENER_AFTER


def _apart(response: str, previous: int, start: int) -> bool:
    """The box at `previous` closes `_BOX_GAP` or more characters before the one at `start`.

    As math_verify's reader walks it: `\\boxed` or `\\fbox`, whitespace,
    `{`, then braces counted up to `start`. A box that does not open with
    `{` or does not close before `start` ends its walk too. Past
    `_MAX_BRACES` braces the answer is no, so the caller declines.
    """
    if response.find("}", max(0, start - _BOX_GAP - 1), start) < 0:
        return True
    position = previous + (len("\\boxed") if response.startswith("\\boxed", previous) else 5)
    while position < start and response[position].isspace():
        position += 1
        if position - previous > _MAX_SPACE_BEFORE:
            return False
    if position >= start or response[position] != "{":
        return True
    try:
        closing = _closing_brace(response, position, start)
    except _TooManyBraces:
        return False
    return closing is None or start - closing - 1 >= _BOX_GAP


def _closing_brace(text: str, opening: int, end: int) -> int | None:
    """The `}` matching the `{` at `opening`, before `end`; None when there is none.

    Every search starts where the last one ended, so the walk is linear.
    Raises `_TooManyBraces` past `_MAX_BRACES` braces.
    """
    depth, position = 1, opening + 1
    close = text.find("}", position, end)
    for _ in range(_MAX_BRACES):
        if close < 0:
            return None
        nested = text.find("{", position, close)
        if nested >= 0:
            depth, position = depth + 1, nested + 1
            continue
        depth, position = depth - 1, close + 1
        if depth == 0:
            return close
        close = text.find("}", position, end)
    raise _TooManyBraces


def _alone_on_its_line(response: str, dollar: int) -> bool:
    """No earlier `$` match can close at `dollar` around a box, nor chain into it."""
    line_start = response.rfind("\n", 0, dollar) + 1
    if response.find("\\boxed", line_start, dollar) >= 0:
        return False
    end = dollar
    while end > 0 and response[end - 1].isspace():
        end -= 1
        if dollar - end > _MAX_SPACE_BEFORE:
            return False
    return not response.endswith(_CHAIN_WORDS, 0, end)


def integer_golds(label: JSON) -> list[int] | None:
    """The label's gold answers when every one is a bare integer, else None.

    Only flat labels are read here: a nested list may be deep enough to
    exhaust the stack, which the worker, not the server, should find out.
    """
    if isinstance(label, list) and any(isinstance(item, list) for item in label):
        return None
    texts = gold_texts(label)
    if isinstance(texts, str):
        return None
    golds = [bare_integer(text) for text in texts]
    return None if None in golds else [gold for gold in golds if gold is not None]


def settle(response: str, label: JSON) -> Score | None:
    """The `math_verify` verdict (`final` extraction) on a bare-integer answer, if provable."""
    golds = integer_golds(label)
    if not golds:
        return None
    answer = boxed_integer(response)
    if answer is None:
        return None
    verdict = bare_integer(answer) in golds
    return Score.verdict(verdict, pred=answer, path="inline", extraction="final")
