"""The think/answer format rewards of open-r1's recipe, read so that only the format pays.

open-r1's `format` reward is a regular expression, `^<think>\\n.*?\\n</think>\\n<answer>\\n.*?
\\n</answer>$`, matched with `re.DOTALL | re.MULTILINE`. Under `re.MULTILINE` its `$` matches
at the end of any line, so anything may follow `</answer>` (a second answer, a grader
instruction) and still earn it; its lazy `.*?` spans tags, so two `<answer>` blocks, or
reasoning after the answer, earn it too; and empty blocks earn it. Its `tag_count` reward
counts each tag anywhere, in any order. Here:

* `think_answer_format` pays 1.0 only for one `<think>` block then one `<answer>` block and
  nothing after but whitespace, each tag once, both blocks holding more than whitespace;
* `tag_count` pays 0.25 for each of open-r1's four tag forms that appears exactly once and
  starts after the tag before it that paid, so tags written backwards do not pay (the
  forms share their newlines, as in open-r1: `\n</think>\n<answer>\n` holds two).

Both are a few `str` searches: linear in the response, safe on the event loop.
"""

from __future__ import annotations

THINK_OPEN = "<think>\n"
THINK_CLOSE = "\n</think>\n"
ANSWER_OPEN = "\n<answer>\n"
ANSWER_CLOSE = "\n</answer>"
TAG_FORMS = (THINK_OPEN, THINK_CLOSE, ANSWER_OPEN, ANSWER_CLOSE)
"""open-r1's tag forms, in the order a formatted response holds them."""
_TAGS = ("<think>", "</think>", "<answer>", "</answer>")


def think_answer_format(response: str) -> float:
    """1.0 when `response` is exactly `<think>\\nT\\n</think>\\n<answer>\\nA\\n</answer>`, then
    only whitespace, with T and A not blank and each tag written once; else 0.0."""
    if not response.startswith(THINK_OPEN) or any(response.count(tag) != 1 for tag in _TAGS):
        return 0.0
    middle = response.find(THINK_CLOSE + "<answer>\n")
    end = response.find(ANSWER_CLOSE)
    if middle < 0 or end < middle or response[end + len(ANSWER_CLOSE) :].strip():
        return 0.0
    thought = response[len(THINK_OPEN) : middle]
    answer = response[middle + len(THINK_CLOSE) + len("<answer>\n") : end]
    return 1.0 if thought.strip() and answer.strip() else 0.0


def tag_count(response: str) -> float:
    """0.25 per tag form of `TAG_FORMS` written exactly once, after the last one that paid."""
    earned = 0.0
    after = -1
    for form in TAG_FORMS:
        at = response.find(form)
        if at > after and response.count(form) == 1:
            earned += 0.25
            after = at
    return earned
