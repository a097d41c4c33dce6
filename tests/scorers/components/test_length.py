"""The length components: open-r1's cosine-scaled length and DAPO's soft overlong penalty."""

from __future__ import annotations

import math

import pytest

from reward_service.scorers.components.length import cosine_scaled, soft_overlong


def _open_r1_cosine(length: int, correct: bool, max_len: int = 1000) -> float:
    """open-r1's formula, unclipped, with its default values."""
    cosine = math.cos(length / max_len * math.pi)
    low, high = (0.5, 1.0) if correct else (-0.5, -1.0)
    return low + 0.5 * (high - low) * (1.0 + cosine)


@pytest.mark.parametrize("length", [0, 1, 100, 250, 500, 999, 1000])
@pytest.mark.parametrize("correct", [True, False])
def test_cosine_matches_open_r1_up_to_max_length(length: int, correct: bool) -> None:
    """Within max_length the value is open-r1's, for correct and wrong answers."""
    assert cosine_scaled(length, correct) == pytest.approx(_open_r1_cosine(length, correct))


@pytest.mark.parametrize(
    ("length", "correct", "expected"),
    [(0, True, 1.0), (1000, True, 0.5), (500, True, 0.75), (0, False, -1.0), (1000, False, -0.5)],
)
def test_cosine_end_points(length: int, correct: bool, expected: float) -> None:
    """Short correct answers earn most, short wrong answers lose most; midpoints halve."""
    assert cosine_scaled(length, correct) == pytest.approx(expected)


def test_padding_a_correct_answer_past_max_length_earns_no_more() -> None:
    """open-r1's cosine turns back up past max_length (twice it: full reward); ours holds."""
    assert _open_r1_cosine(2000, True) == pytest.approx(1.0)
    assert cosine_scaled(2000, True) == pytest.approx(0.5)
    assert cosine_scaled(10**9, True) == pytest.approx(0.5)


def test_a_wrong_answer_padded_past_max_length_is_not_punished_as_a_short_one() -> None:
    """Past max_length a wrong answer keeps max_value_wrong; it never swings back to -1."""
    assert cosine_scaled(2000, False) == pytest.approx(-0.5)


@pytest.mark.parametrize(
    ("length", "expected"),
    [(0, 0.0), (3000, 0.0), (3072, 0.0), (3584, -0.5), (4096, -1.0), (10_000, -1.0)],
)
def test_soft_overlong_is_dapos_piecewise_penalty(length: int, expected: float) -> None:
    """0 up to L_max - L_cache, linear to -1 at L_max, -1 beyond (DAPO's equation 13)."""
    assert soft_overlong(length, max_length=4096, buffer=1024) == pytest.approx(expected)


def test_soft_overlong_scales_with_its_factor() -> None:
    """The factor sets the deepest penalty, as verl's overlong_penalty_factor."""
    assert soft_overlong(4096, max_length=4096, buffer=1024, factor=0.5) == pytest.approx(-0.5)
