"""The final answer math_verify would grade, found and read without its full parse.

With the answer config of `math_verify.MathVerifyScorer` (boxed matches at
priority 0, no anchor-free extraction, `first_match`), once a response holds
`\\boxed{` followed later by `}`, math_verify looks only at its priority-0
matches and grades the one that ends rightmost (the leftmost of those that
end there). These are:

* the plain box, `\\boxed{` at its first occurrence through the last `}` of
  the response, normalised with `boxed="last"`;
* math environments (`$..$`, `$$..$$`, `\\(..\\)`, `\\[..\\]`, ` [..] `)
  holding a box, optionally chained by "and"/"or"/",", with a percent sign;
* "final answer is ... I hope" sentences.

An environment match ends on its closing delimiter (`$`, `]`, `)`), on
whitespace or a percent word after it; an "I hope" match ends on "I hope".
None of these ends with `}`. So when the text after the last `}` holds no
`$`, `]`, `)` and no "I hope", the plain box wins outright and nothing but
that slice needs reading (`final_box` skips the scan). Otherwise the
priority-0 patterns run here in math_verify's order and the winner is
picked as math_verify picks it (greatest end, then smallest start, then
pattern order); it is read when it is the plain box or a single LaTeX
environment without percent sign (an "I hope" sentence's included).
Chained environments, percent signs and plain-number "I hope" sentences
are left to math_verify.

Either way the winner is reduced to the box content `c` math_verify's
normaliser extracts first. Its remaining normalisation and its parse are
functions of `c` alone, so `\\boxed{c}` (the region) parses to exactly the
same list whenever the normaliser extracts `c` back from it, which
`final_box` checks. Anything else returns None: the caller parses the
whole response.
"""

from __future__ import annotations

import re
from dataclasses import replace

from latex2sympy2_extended.math_normalization import extract_boxed_content, normalize_latex
from math_verify import ExprExtractionConfig, LatexExtractionConfig
from math_verify.parser import lazy_expr_regex, lazy_latex_regex

ANSWER_LATEX = LatexExtractionConfig(boxed_match_priority=0, try_extract_without_anchor=False)
ANSWER_EXPR = ExprExtractionConfig(try_extract_without_anchor=False)
"""The answer extraction config this module's reasoning holds for."""

_BOX_OPEN = "\\boxed{"
_LAST_BOX = replace(ANSWER_LATEX.normalization_config, boxed="last")
_ENV_CLOSERS = ("$", "]", ")", "I hope")
_PLAIN_BOX_GROUP = "first_latexBoxed"


def _priority_zero_patterns() -> list[re.Pattern[str]]:
    patterns = [*lazy_latex_regex(ANSWER_LATEX), *lazy_expr_regex(ANSWER_EXPR)]
    return [pattern for pattern, priority in patterns if priority == 0]


def _needs_a_box(pattern: re.Pattern[str]) -> bool:
    """Every match of this pattern holds `\\boxed{` (the box and box-in-environment ones)."""
    return "\\\\boxed{" in pattern.pattern and not pattern.pattern.startswith("(?i:final")


def _box_scan_start(response: str, box_start: int) -> int:
    """Where scanning for box-holding matches may start without changing any match.

    A match holding a box starts at or after the first box's line (less the
    newline a ` [..] ` environment may open with), unless a display
    environment, the only kind that spans lines, opens before that line and
    is still open there: `$$` anywhere before it, or a `\\[` not closed by
    a `\\]` before it. Then, and only then, the scan starts at 0. Scanning
    with `pos` keeps the look-behinds' view of the text before.
    """
    line = response.rfind("\n", 0, box_start) + 1
    before = response[:line]
    opened = before.rfind("\\[")
    if "$$" in before or (opened >= 0 and "\\]" not in before[opened:]):
        return 0
    return max(0, line - 1)


def _winning_content(response: str, box_start: int, last_brace: int) -> str | None:
    """The box content math_verify's normaliser takes from the winning match, if readable."""
    tail = response[last_brace + 1 :]
    if not any(closer in tail for closer in _ENV_CLOSERS):
        return str(extract_boxed_content(response[box_start : last_brace + 1], mode="last"))
    scan_start = _box_scan_start(response, box_start)
    matches = [
        m
        for pattern in _priority_zero_patterns()
        for m in pattern.finditer(response, scan_start if _needs_a_box(pattern) else 0)
    ]
    winner = max(matches, key=lambda m: (m.end(), -m.start()))
    groups = {name: value for name, value in winner.groupdict().items() if value}
    if _PLAIN_BOX_GROUP in groups:
        return str(extract_boxed_content(groups[_PLAIN_BOX_GROUP], mode="last"))
    envs = [name for name in groups if "_latex" in name]
    if len(envs) != 1 or not envs[0].startswith("first_") or "first_percent" in groups:
        return None
    return str(extract_boxed_content(groups[envs[0]], mode="all"))


def final_box(response: str) -> str | None:
    """The content `c` such that `\\boxed{c}` parses as `response` does, if provable."""
    box_start = response.find(_BOX_OPEN)
    last_brace = response.rfind("}")
    if box_start < 0 or last_brace < box_start + len(_BOX_OPEN) + 1:
        return None
    content = _winning_content(response, box_start, last_brace)
    if not content or extract_boxed_content(region(content), mode="last") != content:
        return None
    return content


def region(content: str) -> str:
    """The short text that math_verify grades like the response `content` came from."""
    return f"{_BOX_OPEN}{content}}}"


def normalized(content: str) -> str:
    """The LaTeX math_verify parses for the region of `content` (its fallback string)."""
    return str(normalize_latex(region(content), config=_LAST_BOX))
