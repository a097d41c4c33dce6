"""Which assert tests are lifted (judged in the worker) and how their values compare."""

from __future__ import annotations

import pytest

from reward_service.scorers.code.lifted import LiftedTest, equal, lift, read_value


@pytest.mark.parametrize(
    ("test", "lifted"),
    [
        ("assert f(1) == 2", LiftedTest("f(1)", 2, lifted=True)),
        ("assert [1, (2,)] == f(x=1)", LiftedTest("f(x=1)", [1, (2,)], lifted=True)),
        ("assert f(1) == {'a': {1, 2}}, 'message'", LiftedTest("f(1)", {"a": {1, 2}}, True)),
        ("assert f(1) == -1.5\n# a comment", LiftedTest("f(1)", -1.5, lifted=True)),
        ("assert f(1) != 2", LiftedTest("assert f(1) != 2")),
        ("assert f(1)", LiftedTest("assert f(1)")),
        ("assert abs(f(1) - 2) < 1e-6", LiftedTest("assert abs(f(1) - 2) < 1e-6")),
        ("assert set(f(1)) == set([1])", LiftedTest("assert set(f(1)) == set([1])")),
        ("assert 1 == 1", LiftedTest("assert 1 == 1")),
        ("assert f(1) == 2\nx = 3", LiftedTest("assert f(1) == 2\nx = 3")),
        ("assert f(1) == 2 == g(1)", LiftedTest("assert f(1) == 2 == g(1)")),
        ("assert (", LiftedTest("assert (")),
    ],
)
def test_only_equality_with_a_literal_is_lifted(test: str, lifted: LiftedTest) -> None:
    """`assert <expr> == <literal>`, either way round, is lifted; other shapes stay statements."""
    assert lift([test], "", "") == (lifted,)


def test_a_humaneval_check_of_equality_asserts_unfolds() -> None:
    """`check(candidate)` becomes one lifted test per assert, `candidate` renamed."""
    setup = 'METADATA = {}\ndef check(candidate):\n    """doc"""\n    assert candidate(1) == 2\n'
    setup += "    assert [3] == candidate(2)\n"
    assert lift(["check(f)"], setup, "f") == (
        LiftedTest("f(1)", 2, lifted=True),
        LiftedTest("f(2)", [3], lifted=True),
    )


def test_a_humaneval_check_with_any_other_statement_stays_whole() -> None:
    """A loop or a tolerance assert in `check` keeps the one `check(<entry>)` statement."""
    setup = "def check(candidate):\n    for i in range(3):\n        assert candidate(i) == i\n"
    assert lift(["check(f)"], setup, "f") == (LiftedTest("check(f)"),)


@pytest.mark.parametrize(
    ("text", "read"),
    [
        ("[1, (2,), {3}]", (True, [1, (2,), {3}])),
        ("set()", (True, set())),
        ("nan", (False, None)),
        ("__import__('os')", (False, None)),
        ("(" * 500, (False, None)),
        (7, (False, None)),
    ],
)
def test_values_are_read_as_literals_only(text: object, read: tuple[bool, object]) -> None:
    """A driver's value is a Python literal or unreadable: nothing it writes is evaluated."""
    assert read_value(text) == read


@pytest.mark.parametrize(
    ("got", "want", "tolerance", "same"),
    [
        ((1, 2), [1, 2], None, False),
        ([1, 2], [1, 2], None, True),
        (1, 1.0, None, True),
        (0.1 + 0.2, 0.3, None, False),
        (0.1 + 0.2, 0.3, 1e-9, True),
        ([0.1 + 0.2, (1.0000001,)], [0.3, (1.0,)], 1e-6, True),
        ([0.1 + 0.2], (0.3,), 1e-6, False),
        ({"a": 0.30000001}, {"a": 0.3}, 1e-6, True),
        (10**400, 1.0, 1e-6, False),
    ],
)
def test_equality_is_pythons_with_an_optional_float_tolerance(
    got: object, want: object, tolerance: float | None, same: bool
) -> None:
    """Python's `==`; a tolerance loosens floats at any depth, never container types."""
    assert equal(got, want, tolerance) is same
