"""What the judge is asked and how its reply is read: pure text, no I/O.

The built-in prompt is reference-guided equivalence: the judge sees the
question, the reference answer and the response's final answer (what follows
its last `</think>`), compares meaning rather than form, and ends with one
fixed verdict token. A reply is read strictly: exactly one verdict token after
the judge's own reasoning, else no verdict at all (never a guess).
"""

from __future__ import annotations

import enum
import re
import string
from collections.abc import Mapping

from reward_service.scorers.base import JSON

THINK_END = "</think>"
PLACEHOLDERS = ("question", "reference", "answer")
"""What a template may hold as `$name`; `$reference` and `$answer` it must."""
_MAX_QUESTION_CHARS = 4000

EQUIVALENCE_TEMPLATE = """\
You are grading one answer to a question against the reference answer.

Decide whether the candidate's final answer means the same as the reference: the same \
value, set, expression or statement, whatever its form. Treat as equal what differs only in \
notation, formatting, order where order does not matter, equivalent units or written-out \
numbers. Do not solve the question yourself and do not reward reasoning: only the final \
answer counts. If the candidate gives several different final answers, it is incorrect.

Question:
$question

Reference answer:
$reference

Candidate's final answer:
$answer

End your reply with exactly one of these lines and nothing after it:
VERDICT: CORRECT
VERDICT: PARTIAL (only if the reference has several parts and some, not all, are matched)
VERDICT: INCORRECT
"""


class Verdict(str, enum.Enum):
    """The judge's decision on one answer."""

    CORRECT = "CORRECT"
    PARTIAL = "PARTIAL"
    INCORRECT = "INCORRECT"


_VERDICT = re.compile(r"VERDICT:[\s*]*(CORRECT|PARTIAL|INCORRECT)\b")
"""One class for the spaces and bold marks between token and word: `\\s*\\**\\s*` backtracks
in quadratic time over a long run of spaces."""


class TemplateError(ValueError):
    """A prompt template that names an unknown placeholder or lacks a required one."""


def check_template(text: str) -> string.Template:
    """`text` as a template, or `TemplateError` saying what is wrong with it."""
    template = string.Template(text)
    if not template.is_valid():
        raise TemplateError("the template has a `$` that is not a placeholder (write `$$`)")
    named = set(template.get_identifiers())
    unknown = sorted(named - set(PLACEHOLDERS))
    if unknown:
        raise TemplateError(f"unknown placeholder ${unknown[0]}; known: {', '.join(PLACEHOLDERS)}")
    missing = [name for name in ("reference", "answer") if name not in named]
    if missing:
        raise TemplateError(f"the template lacks ${missing[0]}")
    return template


def final_answer(response: str, limit: int) -> str | None:
    """What follows the response's last `</think>` (its last `limit` characters), or None
    when nothing does or the reasoning never ended (a truncated answer)."""
    head, ended, tail = response.rpartition(THINK_END)
    if not ended and "<think>" in response:
        return None
    text = (tail if ended else head + tail).strip()
    return text[-limit:] if text else None


def question_text(prompt: JSON) -> str:
    """The question in a prompt: the string itself, or the last user message's text."""
    if isinstance(prompt, str):
        return prompt[-_MAX_QUESTION_CHARS:]
    if isinstance(prompt, list):
        for message in reversed(prompt):
            if isinstance(message, Mapping) and message.get("role") == "user":
                return _content_text(message.get("content"))[-_MAX_QUESTION_CHARS:]
    return ""


def _content_text(content: JSON) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            part["text"]
            for part in content
            if isinstance(part, Mapping) and isinstance(part.get("text"), str)
        )
    return ""


def read_verdict(reply: str) -> Verdict | None:
    """The one verdict after the judge's own reasoning, or None for none or several."""
    found = _VERDICT.findall(reply.rpartition(THINK_END)[2])
    return Verdict(found[0]) if len(found) == 1 else None


def render(template: string.Template, question: str, reference: str, answer: str) -> str:
    """The judge's prompt for one answer."""
    given = question or "(not given)"
    return template.substitute(question=given, reference=reference, answer=answer)
