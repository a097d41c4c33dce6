"""Grading assert suites by their plans (`plans.py`): the runs, and verdicts from reports.

Every run is one sandboxed program whose reports follow a fresh mark; a
report of a shape or kind its driver never writes counts as a failure, so
a solution that prints reports of its own gains nothing.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass

from reward_service.sandbox import Kind, Limits, Outcome, Program, Sandbox
from reward_service.scorers.base import JSON
from reward_service.scorers.code.drivers import (
    DONE,
    calls_driver,
    driver_results,
    new_mark,
    reference_driver,
    statements_driver,
)
from reward_service.scorers.code.plans import Call, Plan, StaticTest, Tests, prepare, read_value
from reward_service.scorers.code.verdicts import BUDGET, Failure, Verdicts

PLANS_KEPT = 256
"""Labels whose plan a worker keeps (the answers of one label share it)."""
_FAILURE_KINDS = frozenset({"wrong_output", "runtime_error", "memory_limit"})
"""The failure kinds a driver reports for one call or test."""
_END_KINDS = frozenset(kind.value for kind in Kind) - {Kind.OK.value}
_EARLY_EXIT = "the program exited before its tests ended"

Report = list[JSON]


@dataclass(frozen=True)
class _Reports:
    """A run's reports after its mark, and whether `done` ended them."""

    reports: list[Report]
    complete: bool
    outcome: Outcome | None
    """None: the budget left no room for the run."""

    def end(self) -> tuple[str, str]:
        """The failure kind and text for what the run never reported."""
        if self.outcome is None:
            return Kind.TIME_LIMIT.value, BUDGET
        kind = self.outcome.kind if self.outcome.kind is not Kind.OK else Kind.RUNTIME_ERROR
        return kind.value, self.outcome.stderr or _EARLY_EXIT


@dataclass(frozen=True)
class AssertSuite:
    """One label's assert tests, as `plans.prepare` reads them."""

    tests: Sequence[str]
    """Each test's statements (Python source)."""
    setup: str
    """Source run before the tests (a HumanEval `check` is defined here)."""
    entry: str
    """The function under test (`fn_name`; HumanEval's entry point), or ""."""


@dataclass(frozen=True)
class AssertLimits:
    """The limits of an assert suite's runs, each of which holds all its tests."""

    per_test: Limits
    max_time_s: float
    """The cap on a run's time (the service's maximum time limit)."""

    def for_run(self, tests: int) -> Limits:
        """A run's limits: each test's time, summed over `tests`, up to the cap."""
        time_s = min(self.per_test.time_s * tests, max(self.per_test.time_s, self.max_time_s))
        return Limits(time_s, self.per_test.memory_mb, self.per_test.output_bytes)


class AssertSuites:
    """Grades assert suites in a sandbox, keeping the plans of the labels it has seen."""

    def __init__(self) -> None:
        self._plans: OrderedDict[str, Plan | None] = OrderedDict()

    def verdicts(
        self,
        sandbox: Sandbox,
        source: str,
        suite: AssertSuite,
        limits: AssertLimits,
        *,
        stop: bool,
        tolerance: float | None,
        budget_s: float,
    ) -> Verdicts:
        """The verdicts of `source` on `suite`: stopping at the first failure when `stop`,
        values compared within `tolerance`, the runs sharing `budget_s`."""
        started = time.monotonic()
        tests = prepare(suite.tests, suite.setup, suite.entry)
        sources = tuple(suite.tests) if tests is None else tests.sources
        run_limits = limits.for_run(len(sources))
        runs = _Runs(sandbox, run_limits, budget_s=budget_s, started=started, stop=stop)
        plan = None if tests is None else (tests.plan() or self._plan(runs, tests))
        if tests is None or plan is None:
            return runs.statements(source, suite.setup, sources)
        calls = [call for test in plan for call in test]
        results = runs.calls(source, calls)
        if tests.static is not None:
            return _judged(tests.static, results, stop=stop, tolerance=tolerance)
        replayed = runs.replay(tests, calls, results, tolerance)
        return replayed if replayed is not None else runs.statements(source, suite.setup, sources)

    def _plan(self, runs: _Runs, tests: Tests) -> Plan | None:
        key = hashlib.sha256(
            json.dumps([tests.setup, tests.sources, tests.stubs, tests.modules]).encode()
        ).hexdigest()
        if key in self._plans:
            self._plans.move_to_end(key)
            return self._plans[key]
        plan, settled = runs.plan(tests)
        if settled:
            self._plans[key] = plan
            if len(self._plans) > PLANS_KEPT:
                self._plans.popitem(last=False)
        return plan


class _Runs:
    """The runs of one answer: its sandbox, limits and what is left of its budget."""

    def __init__(
        self, sandbox: Sandbox, limits: Limits, *, budget_s: float, started: float, stop: bool
    ) -> None:
        self.sandbox, self.limits, self.stop = sandbox, limits, stop
        self.budget_s, self.started = budget_s, started

    def _run(self, driver: str, stdin: bytes, mark: str, count: int) -> _Reports:
        left = self.budget_s - (time.monotonic() - self.started)
        program = Program("python", driver)
        run = self.sandbox.execute(program, [stdin], self.limits, left) if left > 0 else None
        outcomes = [] if run is None else run.outcomes()
        if not outcomes:
            return _Reports([], False, None)
        values = [value for reading, value in driver_results(outcomes[0].stdout, mark)]
        reports = [v for v in values if isinstance(v, list) and v and isinstance(v[0], str)]
        return _Reports(reports[:count], values[-1:] == [DONE], outcomes[0])

    def plan(self, tests: Tests) -> tuple[Plan | None, bool]:
        """The plan run's calls per test, None when unplannable; and whether that is settled
        (a run that failed for another reason is not kept)."""
        mark = new_mark()
        names = (tests.stubs, tests.modules)
        driver = reference_driver(tests.setup, tests.plan_sources(), names, mark, "plan", True)
        found = self._run(driver, b"", mark, len(tests.sources))
        if not found.complete:
            return None, False
        plan: list[tuple[Call, ...]] = []
        for report in found.reports:
            calls = report[1] if report[0] == "planned" and len(report) == 2 else None
            if not isinstance(calls, list) or not all(_is_call(call) for call in calls):
                return None, True
            plan.append(tuple(Call(*call) for call in calls))
        return (tuple(plan), True) if len(plan) == len(tests.sources) else (None, True)

    def calls(self, source: str, calls: Sequence[Call]) -> list[tuple[str, str]]:
        """Each call's `(kind, text)`: `("value", literal text)` or how it failed."""
        mark = new_mark()
        stdin = json.dumps([call.listed() for call in calls]).encode()
        found = self._run(calls_driver(source, mark, self.stop), stdin, mark, len(calls))
        results = []
        for report in found.reports:
            kind, text = [*report, "", ""][:2]
            if kind != "value" and kind not in _FAILURE_KINDS:
                kind = "wrong_output"
            results.append((str(kind), text if isinstance(text, str) else ""))
        return results + [found.end()] * (len(calls) - len(results))

    def replay(
        self,
        tests: Tests,
        calls: Sequence[Call],
        results: list[tuple[str, str]],
        tolerance: float | None,
    ) -> Verdicts | None:
        """The verdict run's verdicts; None when its calls left the plan."""
        mark = new_mark()
        names = (tests.stubs, tests.modules)
        sources = tests.verdict_sources(tolerance)
        stop = self.stop
        driver = reference_driver(tests.setup, sources, names, mark, "verdict", stop, tolerance)
        given = {"calls": [call.listed() for call in calls], "results": results}
        found = self._run(driver, json.dumps(given).encode(), mark, len(sources))
        failures: list[Failure] = []
        for i, report in enumerate(found.reports):
            kind = report[0]
            if kind == "diverged":
                return None
            if kind == "ok":
                continue
            if kind == "solution" and len(report) == 3:
                failed = report[1] if report[1] in _FAILURE_KINDS | _END_KINDS else "wrong_output"
                failures.append(Failure(i, str(failed), str(report[2])))
            else:
                failed = kind if kind in _FAILURE_KINDS else "wrong_output"
                failures.append(Failure(i, failed, str(report[1]) if len(report) > 1 else ""))
            if self.stop:
                break
        return _completed(found, failures, len(sources), stop=self.stop, asserts="replayed")

    def statements(self, source: str, setup: str, sources: Sequence[str]) -> Verdicts:
        """The tests run as statements in the solution's namespace: forgeable."""
        mark = new_mark()
        driver = statements_driver(source, setup, sources, mark, self.stop)
        found = self._run(driver, b"", mark, len(sources))
        failures = [
            Failure(i, kind if kind in _FAILURE_KINDS else "wrong_output", str([*report, ""][1]))
            for i, report in enumerate(found.reports)
            if (kind := report[0]) != "ok"
        ]
        if self.stop:
            failures = failures[:1]
        return _completed(found, failures, len(sources), stop=self.stop, asserts="statements")


def _is_call(value: JSON) -> bool:
    return isinstance(value, list) and len(value) == 3 and all(isinstance(v, str) for v in value)


def _completed(
    found: _Reports, failures: list[Failure], total: int, *, stop: bool, asserts: str
) -> Verdicts:
    """`failures` with the tests the run never reported on failing as its end says."""
    if not (found.complete and len(found.reports) == total) and not (stop and failures):
        kind, text = found.end()
        unreported = range(len(found.reports), len(found.reports) + 1 if stop else total)
        failures = [*failures, *(Failure(i, kind, text) for i in unreported)]
    return Verdicts(failures, budget_out=found.outcome is None, total=total, asserts=asserts)


def _judged(
    static: Sequence[StaticTest],
    results: list[tuple[str, str]],
    *,
    stop: bool,
    tolerance: float | None,
) -> Verdicts:
    """A static plan's verdicts, made here from the values of its calls."""
    failures: list[Failure] = []
    done = 0
    for i, test in enumerate(static):
        got, done = results[done : done + len(test.calls)], done + len(test.calls)
        failure = next((Failure(i, kind, text) for kind, text in got if kind != "value"), None)
        if failure is None:
            readable, value = read_value(got[0][1]) if got else (True, None)
            if not (readable and test.check.holds(value, tolerance)):
                failure = Failure(i, "wrong_output", "")
        if failure is not None:
            failures.append(failure)
            if stop:
                break
    budget_out = any(f.stderr == BUDGET for f in failures)
    return Verdicts(failures, budget_out=budget_out, total=len(static), asserts="static")
