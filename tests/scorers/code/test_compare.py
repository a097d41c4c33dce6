"""Output and return-value comparison, as the code benchmarks do it."""

from __future__ import annotations

import pytest

from reward_service.scorers.base import JSON
from reward_service.scorers.code.compare import (
    ToleranceError,
    numbers_close,
    outputs_match,
    parse_tolerance,
    values_match,
)

OUTPUTS = [
    ("1 2\n3\n", "1 2\n3\n", None, True),
    ("1 2  \r\n3", "1 2\n3\n", None, True),
    ("1 2\n3\n\n\n", "1 2\n3", None, True),
    ("1 2\n\n3\n", "1 2\n3\n", None, False),
    (" 1 2\n3\n", "1 2\n3\n", None, False),
    ("1  2\n", "1 2\n", None, False),
    ("", "", None, True),
    ("", "0\n", None, False),
    ("0.3333333\n", "0.333333333\n", None, False),
    ("0.3333333\n", "0.333333333\n", 1e-6, True),
    ("0.34\n", "0.333333333\n", 1e-6, False),
    ("1000000.1\n", "1000000.0\n", 1e-6, True),
    ("1 2.0000001 x\n", "1 2 x\n", 1e-6, True),
    ("1 2 y\n", "1 2 x\n", 1e-6, False),
    ("1 2\n", "1 2 3\n", 1e-6, False),
    ("nan\n", "1\n", 1e-6, False),
    ("1000001\n", "1000000\n", 1e-6, False),
    ("0\n", "1\n", 0.9, False),
    ("3 1000001\n", "3 1000000\n", 1e-6, False),
    ("1000001\n", "1000000.0\n", 1e-6, True),
    ("1.0000001\n", "1\n", 1e-6, True),
    ("1e-7\n", "0\n", 1e-6, True),
    ("+5 -0 007\n", "5 0 7\n", 1e-6, True),
    ("-5\n", "5\n", 1e-6, False),
    ("0" + "1" * 5000 + "\n", "1" * 5000 + "\n", 1e-6, True),
    ("1" * 5000 + "\n", "1" * 4999 + "2\n", 1e-6, False),
]


@pytest.mark.parametrize(("got", "want", "tolerance", "match"), OUTPUTS)
def test_outputs_match_line_by_line_after_trailing_whitespace(
    got: str, want: str, tolerance: float | None, match: bool
) -> None:
    """Lines match once trailing whitespace and blank lines go; numbers within tolerance."""
    assert outputs_match(got, want, tolerance) is match


VALUES: list[tuple[JSON, JSON, float | None, bool]] = [
    ([1, 2], [1, 2], None, True),
    ([1, 2], [[1, 2]], None, True),
    (3, [3], None, True),
    (3, [3, 4], None, False),
    ([1, 2], [2, 1], None, False),
    (1.0, 1, None, True),
    (0.1 + 0.2, 0.3, None, False),
    (0.1 + 0.2, 0.3, 1e-9, True),
    ({"a": [0.30000000000000004]}, {"a": [0.3]}, 1e-9, True),
    ({"a": 1}, {"b": 1}, None, False),
    ("x", "x", None, True),
    (None, 0, None, False),
    (True, 1, None, False),
    (1, True, 1e-6, False),
    ([True, False], [True, False], None, True),
    (10**400, 10**400, 1e-6, True),
    (10**400 + 1, 10**400, 1e-6, False),
    (1000001, 1000000, 1e-6, False),
    ([1, [1000001]], [1, [1000000]], 1e-6, False),
    ({"a": 0}, {"a": 1}, 0.9, False),
    (1000001.0, 1000000, 1e-6, True),
    (1000001, 1000000.0, 1e-6, True),
    (0, 1e-7, 1e-6, True),
]


@pytest.mark.parametrize(("got", "want", "tolerance", "match"), VALUES)
def test_values_match_decoded_json_with_apps_wrapping(
    got: JSON, want: JSON, tolerance: float | None, match: bool
) -> None:
    """Return values match structurally, numbers within tolerance, a 1-element list by its item."""
    assert values_match(got, want, tolerance) is match


NUMBERS: list[tuple[int | float, int | float, float | None, bool]] = [
    (1000001, 1000000, 1e-6, False),
    (1000001, 1000000, None, False),
    (0, 1, 0.9, False),
    (-3, -3, 0.5, True),
    (1000001, 1000000.0, 1e-6, True),
    (1000000.0, 1000001, 1e-6, True),
    (1.0000001, 1, 1e-6, True),
    (1.0000001, 1, None, False),
    (0.0, 1e-7, 1e-6, True),
    (1.0, 1.1, 1e-6, False),
    (10**400, 1e300, 1e-6, False),
    (10**400, 10**400 + 1, 1e-6, False),
    (float("inf"), float("inf"), 1e-6, True),
    (float("nan"), float("nan"), 1e-6, False),
]


@pytest.mark.parametrize(("a", "b", "tolerance", "close"), NUMBERS)
def test_tolerance_applies_only_where_a_float_is_involved(
    a: int | float, b: int | float, tolerance: float | None, close: bool
) -> None:
    """Two ints compare exactly at any tolerance; with a float, within it."""
    assert numbers_close(a, b, tolerance) is close


@pytest.mark.parametrize(
    ("a", "b", "tolerance", "close"),
    [n for n in NUMBERS if n[2] and n[0] == n[0]],  # not nan
)
def test_stdout_tokens_and_return_values_compare_numbers_alike(
    a: int | float, b: int | float, tolerance: float, close: bool
) -> None:
    """The same numbers give the same verdict as tokens of stdout and as return values
    (but the token `nan` is its own text)."""
    assert outputs_match(f"{a!r}\n", f"{b!r}\n", tolerance) is close
    assert values_match(a, b, tolerance) is close


@pytest.mark.parametrize(
    ("value", "parsed"), [(None, None), ("off", None), ("0", None), ("1e-6", 1e-6), (0.5, 0.5)]
)
def test_tolerance_option_reads_numbers_and_off(value: JSON, parsed: float | None) -> None:
    """`float_tolerance` is a number in [0, 1); absent, `off` and 0 turn it off."""
    assert parse_tolerance(value) == parsed


@pytest.mark.parametrize("value", ["x", "-1", "1", "nan", "inf", True, [1]])
def test_tolerance_option_refuses_other_values(value: JSON) -> None:
    """A tolerance that is not a finite number in [0, 1) is refused."""
    with pytest.raises(ToleranceError):
        parse_tolerance(value)
