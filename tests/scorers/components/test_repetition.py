"""The repetition penalty, and the small edits that dodge open-r1's."""

from __future__ import annotations

import pytest

from reward_service.scorers.components.repetition import repetition_penalty

PARAGRAPH = "we add the two numbers and carry the one to the next column"


def _open_r1_penalty(text: str, n: int = 3, max_penalty: float = -1.0) -> float:
    """open-r1's penalty: lower-cased whitespace words, share of repeated n-grams."""
    words = text.lower().split()
    grams = list(zip(*[words[i:] for i in range(n)], strict=False))
    return 0.0 if len(words) < n else (1 - len(set(grams)) / len(grams)) * max_penalty


def test_text_without_repeats_pays_nothing() -> None:
    """All n-grams distinct: no penalty."""
    assert repetition_penalty(PARAGRAPH) == 0.0


def test_short_text_pays_nothing() -> None:
    """Fewer words than the n-gram size: no penalty, as open-r1 (empty included)."""
    assert repetition_penalty("two words") == 0.0
    assert repetition_penalty("") == 0.0


def test_a_paragraph_said_ten_times_is_penalised_as_open_r1_penalises_it() -> None:
    """Plain repetition: the same value as open-r1's."""
    text = " ".join([PARAGRAPH] * 10)
    assert repetition_penalty(text) == pytest.approx(_open_r1_penalty(text))
    assert repetition_penalty(text) < -0.8


def test_the_penalty_scales_with_max_penalty() -> None:
    """max_penalty sets the deepest penalty."""
    text = "again " * 50
    assert repetition_penalty(text, max_penalty=-0.5) == pytest.approx(repetition_penalty(text) / 2)


@pytest.mark.parametrize(
    ("why", "copies"),
    [
        ("punctuation varied", [PARAGRAPH + mark for mark in ".,;!?:.,;!"]),
        ("numbered copies", [f"Step {i}: {PARAGRAPH}." for i in range(1, 11)]),
        ("a numbered list", [f"{i}. {PARAGRAPH}" for i in range(1, 11)]),
    ],
)
def test_near_duplicates_are_penalised_as_repeats(why: str, copies: list[str]) -> None:
    """Edits that make every copy's n-grams new to open-r1 still repeat here."""
    text = " ".join(copies)
    plain = " ".join([PARAGRAPH] * 10)
    assert repetition_penalty(text) == pytest.approx(repetition_penalty(plain), abs=0.1), why
    assert _open_r1_penalty(text) > repetition_penalty(text) + 0.1, why


def test_arithmetic_is_not_repetition() -> None:
    """Numbers in the text keep their digits: a column of different sums is not a repeat."""
    text = " ".join(f"{i} + {i + 1} = {2 * i + 1}," for i in range(40))
    assert repetition_penalty(text) > -0.1
