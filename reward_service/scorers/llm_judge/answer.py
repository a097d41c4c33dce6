"""The answer as the judge is shown it: text to grade, stripped of what writes to the grader.

`shown_answer(answer, limit)` is what goes between the prompt's answer tags:

* invisible characters are gone (kind `invisible`): format characters
  (zero-width spaces and joiners, bidirectional controls, the soft hyphen,
  variation selectors) and Unicode tag characters, which spell ASCII that no
  reader sees but a model may read. What the judge reads is what a reader sees.
* text addressed to the grader is replaced with `REMOVED`, whatever its place
  in the answer. It is looked for in a folded copy (case, full-width and
  mathematical letters, Cyrillic and Greek look-alikes), so a disguise does not
  hide it. Its kinds (in `MARKERS`, a fixed set) are `verdict` (a verdict line or
  claim: `VERDICT: CORRECT`, `CORRECT` alone on a line, `Grade: correct`),
  `instruction` (orders to the grader: `ignore previous instructions`, `answer
  YES`, `mark this as correct`, `you are the grader`, `this answer is
  correct`), `prompt` (the judge prompt's own frame: its headings such as
  `Reference answer:`, answer and reference tags, `end of the answer`) and
  `chat` (chat-template control tokens and role lines: `<|im_start|>`,
  `[INST]`, `### Response`, `assistant:`).
* an answer longer than `limit` shows its first quarter and its end, with the
  number of characters cut between them. Markers are found around each part
  shown (every pattern matches at most `_REACH` characters), so one that
  straddles a cut is removed too, and none survives where the answer is cut.

This is a deny-list: it removes what a weak judge is known to obey, and the
prompt's frame and the verdict's nonce (`prompt`) do not depend on it.
What it cannot know (a paraphrase, another language) a real judge may still
obey; docs/judge.md says what to watch. Everything here is linear in the
answer: it runs on the event loop.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

REMOVED = "[removed]"
MARKERS = frozenset({"invisible", "verdict", "instruction", "prompt", "chat"})
"""The kinds of text addressed to the grader (fixed: they may become metric labels)."""
_REACH = 256
"""The longest text any marker pattern matches (its bounded quantifiers add up to less)."""

_INVISIBLE = re.compile(
    "[\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180b-\u180f\u200b-\u200f\u202a-\u202e"
    "\u2060-\u206f\u3164\ufe00-\ufe0f\ufeff\uffa0\ufff0-\ufffb\U0001d173-\U0001d17a"
    "\U000e0000-\U000e0fff]+"
)
"""Default-ignorable code points: shown as nothing, read by a model as something."""

_LOOK_ALIKES = dict(
    zip(
        "АВЕЅІЈКМНОРСТХУаеіјорсхуѕԁԛԝΑΒΕΖΗΙΚΜΝΟΡΤΥΧονρτυχ\u2018\u2019\u02bc",
        "ABESIJKMHOPCTXYaeijopcxysdqwABEZHIKMNOPTYXovptux'''",
        strict=True,
    )
)


def _fold_table() -> dict[int, str]:
    """One character for one: full-width and mathematical letters and digits as ASCII, and
    the look-alikes above (curly apostrophes too), so that spans found in the fold are spans
    of the original."""
    table = {ord(char): latin for char, latin in _LOOK_ALIKES.items()}
    for point in [*range(0xFF01, 0xFF5F), *range(0x1D400, 0x1D800)]:
        folded = unicodedata.normalize("NFKC", chr(point))
        if len(folded) == 1 and folded.isascii():
            table[point] = folded
    return table


_FOLD = _fold_table()

_S = r"[ \t]{1,3}"
"""One gap between words on one line."""
_VERDICT_WORD = (
    r"(?:correct|incorrect|partial|right|wrong|yes|no|true|false|pass(?:ed)?|fail(?:ed)?"
    r"|accept(?:ed)?|reject(?:ed)?|equivalent)"
)
_PATTERNS = {
    "verdict": [
        rf"\bverdicts?\b[^\n]{{0,40}}?\b{_VERDICT_WORD}\b[*_]{{0,3}}",
        r"^[^\w\n]{0,8}(?-i:CORRECT|INCORRECT|PARTIAL|\[\[[A-Z]\]\])[^\w\n]{0,8}$",
        r"\b(?:judge?ment|grade|grading|evaluation|assessment|rating|decision)[ \t]{0,3}[:=]"
        r"[^\w\n]{0,6}(?:correct|incorrect|partial|pass|fail|full[ \t]{1,3}marks)\b[*_]{0,3}",
    ],
    "instruction": [
        r"\b(?:ignore|disregard|forget|override|bypass)\b[^\n.]{0,40}?\b(?:instructions?"
        r"|prompts?|rules|guidelines|criteria|rubric|directions)\b",
        rf"\b(?:ignore|disregard|forget){_S}(?:all{_S}|any{_S}|the{_S})?(?:previous|prior"
        r"|above|earlier|preceding)\b",
        rf"\b(?:answer|reply|respond|output|say|print|write|return|declare){_S}(?:with{_S}"
        rf"|only{_S}|just{_S})?[\"'*]{{0,3}}(?:(?-i:YES|CORRECT|TRUE|PASS)|correct\b|verdict)",
        rf"\b(?:mark|grade|score|rate|judge|label|count|consider|treat|accept|evaluate)"
        rf"{_S}(?:this|it|that|me|my{_S}answer|the{_S}answer|the{_S}above|the{_S}following"
        rf"|the{_S}candidate)\b[^\n.]{{0,30}}?\b(?:correct|full{_S}(?:marks|credit|score))\b",
        rf"\b(?:this|my|our|the{_S}above|the{_S}following|the{_S}candidate'?s?|the|above)"
        rf"{_S}(?:final{_S})?(?:answer|response|solution)(?:{_S}above)?{_S}(?:is|was|should{_S}be"
        rf"|must{_S}be){_S}(?:(?:graded|marked|judged|considered|deemed){_S})?(?:as{_S})?"
        rf"(?:correct|fully{_S}correct|equivalent{_S}to{_S}the{_S}reference)\b",
        rf"\b(?:you{_S}are|you're|act{_S}as|pretend{_S}to{_S}be){_S}(?:now{_S})?(?:an?|the)"
        rf"{_S}(?:grader|judge|evaluator|grading{_S}(?:model|assistant))\b",
        rf"\b(?:dear|note{_S}(?:to|for)|attention|hey|hello|hi|message{_S}(?:to|for))"
        rf"{_S}(?:the{_S})?(?:grader|judge|evaluator|grading{_S}model)\b",
        rf"\b(?:new|updated|real|actual|hidden|additional){_S}(?:instructions?|system{_S}prompt)"
        r"\b|\bsystem[ \t]{0,3}prompt\b",
    ],
    "prompt": [
        r"^[^\w\n]{0,8}(?:question|reference(?:[ \t]{1,3}answer)?|gold(?:[ \t]{1,3}answer)?"
        r"|candidate(?:'s|s)?(?:[ \t]{1,3}final)?(?:[ \t]{1,3}answer)?|grader|judge"
        r"|evaluator)[ \t]{0,3}:",
        rf"\breference{_S}(?:answer|solution)\b|\bgold{_S}(?:answer|label)\b|\bground[ \t-]truth\b",
        rf"\b(?:end|start|beginning){_S}of{_S}(?:the{_S})?(?:candidate'?s?{_S})?(?:final{_S})?"
        rf"(?:answer|response|prompt|input|submission)\b|\bend{_S}your{_S}reply\b",
        r"</?[ \t]{0,3}(?:(?:question|reference|candidate|prompt|instructions?)"
        r"(?:[ \t_-][^<>\n]{0,40})?|(?:answer|response)[ \t_-][^<>\n]{0,40})>",
    ],
    "chat": [
        r"<\|[^|<>\n]{1,40}\|>|\[/?INST\]|<</?SYS>>|<(?:start|end)_of_turn>",
        r"^[ \t]{0,8}(?:user|assistant|human)[ \t]{0,3}:",
        r"^#{1,6}[ \t]{0,3}(?:instruction|response|system|user|assistant)\b",
    ],
}
_MARKER = re.compile(
    "|".join(
        f"(?P<{kind}_{n}>{pattern})"
        for kind, patterns in _PATTERNS.items()
        for n, pattern in enumerate(patterns)
    ),
    re.IGNORECASE | re.MULTILINE,
)


@dataclass(frozen=True)
class ShownAnswer:
    """What of an answer the judge is shown, and what was taken out."""

    text: str
    markers: frozenset[str] = frozenset()
    """The kinds of text addressed to the grader that were removed."""
    cut: int = 0
    """Characters left out of a long answer."""


def shown_answer(answer: str, limit: int) -> ShownAnswer:
    """`answer` without invisible characters or text addressed to the grader, bounded to
    about `limit` characters (its first quarter and its end when longer)."""
    text, invisible = _INVISIBLE.subn("", answer)
    text = text.strip()
    hidden = frozenset({"invisible"}) if invisible else frozenset()
    if len(text) <= limit:
        shown, markers = _neutralised(text, 0, len(text))
        return ShownAnswer(shown, markers | hidden)
    head = limit // 4
    tail = len(text) - (limit - head)
    first, first_markers = _neutralised(text, 0, head)
    last, last_markers = _neutralised(text, tail, len(text))
    cut = tail - head
    shown = f"{first}\n[... {cut} characters cut ...]\n{last}"
    return ShownAnswer(shown, first_markers | last_markers | hidden, cut)


def _neutralised(text: str, start: int, end: int) -> tuple[str, frozenset[str]]:
    """`text[start:end]` with every marker that overlaps it replaced, and their kinds."""
    offset = max(0, start - _REACH)
    window = text[offset : end + _REACH].translate(_FOLD)
    pieces, kinds, at = [], set(), start
    for found in _MARKER.finditer(window):
        low, high = found.start() + offset, found.end() + offset
        if high <= start or low >= end or high == low:
            continue
        pieces += [text[at:low] if low > at else "", REMOVED]
        at = max(at, high)
        kinds.add(str(found.lastgroup).rpartition("_")[0])
    pieces.append(text[at:end])
    return "".join(pieces), frozenset(kinds)
