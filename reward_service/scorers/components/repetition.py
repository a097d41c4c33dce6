"""The n-gram repetition penalty of open-r1's recipe, hard to dodge with small edits.

open-r1 (after "Demystifying Long Chain-of-Thought Reasoning", appendix C.2) splits the
lower-cased response on whitespace and pays `max_penalty` times the share of its word
n-grams that repeat an earlier one. Two cheap edits dodge it there: varying punctuation
(`again.`, `again,`, `again!` are three words) and numbering the copies (`Step 1: ...`,
`Step 2: ...` makes every n-gram holding the number new). Here each word loses the
punctuation around it, and a list counter (digits followed by `.`, `)` or `:`, or in
parentheses) reads as one word whatever its number, so both edits still repeat. Numbers in
the text itself keep their digits: arithmetic is not repetition.

What still dodges it: a copy with a different word every n words or less, synonyms,
counters written as words, and diluting repeats with enough fresh words. The penalty is a
shaping term, not a detector of degenerate text.

One pass over the words and a set of n-grams: linear in the response.
"""

from __future__ import annotations

import re
import string

_PUNCTUATION = string.punctuation + "\u201c\u201d\u2018\u2019\u2026"
_COUNTER = re.compile(r"\(?\d+[.):]|\(\d+\)")
_COUNTER_WORD = "<n>"


def _words(text: str) -> list[str]:
    """The response's words as the penalty compares them."""
    words = []
    for raw in text.lower().split():
        if _COUNTER.fullmatch(raw):
            words.append(_COUNTER_WORD)
            continue
        word = raw.strip(_PUNCTUATION)
        if word:
            words.append(word)
    return words


def repetition_penalty(response: str, *, ngram_size: int = 3, max_penalty: float = -1.0) -> float:
    """`max_penalty` times the share of the response's word n-grams that repeat an earlier
    one: 0.0 for no repeat (or fewer than `ngram_size` words), `max_penalty` approached as
    the response becomes one n-gram over and over."""
    words = _words(response)
    total = len(words) - ngram_size + 1
    if total <= 0:
        return 0.0
    distinct = len({tuple(words[i : i + ngram_size]) for i in range(total)})
    return max_penalty * (1.0 - distinct / total)
