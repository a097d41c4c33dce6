"""How assert tests are planned, and how the worker compares their values."""

from __future__ import annotations

import pytest

from reward_service.scorers.code.plans import Call, Check, StaticTest, equal, prepare, read_value


def _static(test: str, setup: str = "") -> StaticTest | None:
    tests = prepare([test], setup, "")
    assert tests is not None
    return None if tests.static is None else tests.static[0]


@pytest.mark.parametrize(
    ("test", "static"),
    [
        ("assert f(1) == 2", StaticTest((Call("f", "(1,)", "{}"),), Check("==", 2))),
        (
            "assert [1, (2,)] == f(x=1)",
            StaticTest((Call("f", "()", "{'x': 1}"),), Check("==", [1, (2,)])),
        ),
        (
            "assert f(1) == -1.5, 'message'",
            StaticTest((Call("f", "(1,)", "{}"),), Check("==", -1.5)),
        ),
        (
            "assert set(f(1)) == {1}",
            StaticTest((Call("f", "(1,)", "{}"),), Check("==", {1}, "set")),
        ),
        ("assert f(1) is True", StaticTest((Call("f", "(1,)", "{}"),), Check("is", True))),
        ("assert not f('a')", StaticTest((Call("f", "('a',)", "{}"),), Check("falsy"))),
        ("assert f([1])", StaticTest((Call("f", "([1],)", "{}"),), Check("truthy"))),
        ("assert True", StaticTest((), Check("constant", True))),
        ("assert f(1) != 2", None),
        ("assert abs(f(1) - 2) < 1e-6", None),
        ("assert f(1) == g(2)", None),
        ("assert f(x) == 2", None),
        ("assert f(1) is 1", None),
        ("assert len(f(1)) == 2", None),
        ("assert f(1) == 2\nx = 3", None),
    ],
)
def test_only_a_call_with_literals_against_a_literal_is_static(
    test: str, static: StaticTest | None
) -> None:
    """A call of literals compared with a literal (or its truth) is judged in the worker;
    any other shape needs the label-only plan and verdict runs."""
    assert _static(test) == static


def test_a_name_the_label_defines_is_not_the_solutions() -> None:
    """A call of a function the setup defines tests nothing of the solution: not static."""
    assert _static("assert f(1) == 2", "def f(x):\n    return 2") is None


def test_a_humaneval_check_unfolds_into_its_asserts() -> None:
    """`check(candidate)` becomes one test per assert, `candidate` renamed, `assert True` out."""
    setup = 'METADATA = {}\ndef check(candidate):\n    """doc"""\n    assert candidate(1) == 2\n'
    setup += "    assert True, 'debugging'\n    assert abs(candidate(2) - 3) < 1e-6\n"
    tests = prepare(["check(f)"], setup, "f")
    assert tests is not None
    assert tests.sources == ("assert f(1) == 2", "assert abs(f(2) - 3) < 1e-06")
    assert tests.static is None
    assert tests.plan_sources() == ("f(1) == 2", "abs(f(2) - 3) < 1e-06")


def test_a_humaneval_check_with_any_other_statement_stays_whole() -> None:
    """A loop in `check` keeps the one `check(<entry>)` test."""
    setup = "def check(candidate):\n    for i in range(3):\n        assert candidate(i) == i\n"
    tests = prepare(["check(f)"], setup, "f")
    assert tests is not None and tests.sources == ("check(f)",)
    assert {"f", "check"} <= set(tests.stubs)


def test_standard_modules_the_tests_use_unimported_are_imported_not_stubbed() -> None:
    """`math.isclose` with no `import math` in the label: the solution would have imported it."""
    tests = prepare(["assert math.isclose(f(1), 2.0)"], "", "")
    assert tests is not None
    assert tests.modules == ("math",) and tests.stubs == ("f",)


def test_a_tolerance_routes_equality_through_the_drivers_eq() -> None:
    """With `float_tolerance`, `==` and `!=` in replayed tests become `_eq` calls."""
    tests = prepare(["assert f(1) == [0.5]", "assert g(1) != 2"], "", "")
    assert tests is not None
    assert tests.verdict_sources(None) == tests.sources
    assert tests.verdict_sources(1e-6) == ("assert _eq(f(1), [0.5])", "assert not _eq(g(1), 2)")


def test_unparseable_test_code_has_no_plan() -> None:
    """Test code that does not parse cannot be planned: it runs (and fails) as statements."""
    assert prepare(["assert ("], "", "") is None


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
        (1000001, 1000000, 1e-6, False),
        (0, 1e-7, 1e-6, True),
    ],
)
def test_equality_is_pythons_with_an_optional_float_tolerance(
    got: object, want: object, tolerance: float | None, same: bool
) -> None:
    """Python's `==`; a tolerance loosens floats at any depth, never container types."""
    assert equal(got, want, tolerance) is same
