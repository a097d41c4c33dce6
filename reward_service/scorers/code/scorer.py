"""`code`: run the response's program against the label's tests in the sandbox.

The reward is 1.0 when every test passes, else 0.0; with `partial` it is the
fraction passed. Tests run in order and, unless `partial`, grading stops at
the first failure. Formats, options and limits: `docs/code.md`.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import ClassVar

from reward_service.errors import SandboxUnavailable
from reward_service.sandbox import Kind, Limits, Outcome, Program
from reward_service.scorers.base import (
    JSON,
    NO_OPTIONS,
    GradingLimits,
    Score,
    ScorerSettings,
    StartupCheck,
    Status,
    echo,
)
from reward_service.scorers.code import harness
from reward_service.scorers.code.asserts import AssertLimits, AssertSuite, AssertSuites
from reward_service.scorers.code.cases import LabelError, Suite, read_suite
from reward_service.scorers.code.compare import (
    ToleranceError,
    outputs_match,
    parse_tolerance,
    values_match,
)
from reward_service.scorers.code.drivers import DONE, call_driver, driver_results, new_mark
from reward_service.scorers.code.fences import Extracted, last_program
from reward_service.scorers.code.sandboxed import SandboxedScorer, SandboxFactory
from reward_service.scorers.code.settings import CodeSettings, check_sandbox
from reward_service.scorers.code.verdicts import BUDGET, STDERR_CHARS, Failure, Verdicts
from reward_service.scorers.reasoning import THINK_MODES, Unanswered, final_answer

log = logging.getLogger("reward_service.scorers.code")

MAX_PROGRAM_CHARS = 100_000
"""A longer program is not graded (`no_answer`)."""
_TRUE = frozenset({"1", "true", "yes", "on"})
_FALSE = frozenset({"0", "false", "no", "off", ""})


class OptionError(ValueError):
    """An option value the scorer cannot use; the message says why."""


def _flag(value: JSON) -> bool:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text not in _TRUE | _FALSE:
        raise OptionError(f"partial {echo(value)} is not one of 0, 1, true, false")
    return text in _TRUE


def _number(name: str, value: JSON) -> float:
    if isinstance(value, dict) and "seconds" in value:  # CodeContests: {"seconds", "nanos"}
        value = float(value.get("seconds") or 0) + float(value.get("nanos") or 0) / 1e9
    if isinstance(value, bool):
        raise OptionError(f"{name} is a boolean, not a number")
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise OptionError(f"{name} {echo(value)} is not a number") from None
    if not (math.isfinite(number) and number > 0):
        raise OptionError(f"{name} {number!r} is not a positive number")
    return number


@dataclass(frozen=True)
class AnswerOptions:
    """How one answer is graded, from its options and its label's own keys."""

    partial: bool
    tolerance: float | None
    limits: Limits
    """Per test: the label's time and memory, capped by the service's."""
    standard: str | None = None
    """The compiled language's standard or edition (`Program.dialect`)."""


def read_options(options: Mapping[str, JSON], limits: CodeSettings) -> AnswerOptions:
    """The options of one answer, checked and capped; raises `OptionError`."""
    time_s = limits.time_limit_s
    if options.get("time_limit_s") is not None:
        time_s = min(_number("time_limit_s", options["time_limit_s"]), limits.max_time_limit_s)
    memory_mb = limits.memory_mb
    if options.get("memory_mb") is not None:
        asked = math.ceil(_number("memory_mb", options["memory_mb"]))
        memory_mb = min(asked, limits.max_memory_mb)
    output_bytes = limits.output_bytes
    if options.get("output_bytes") is not None:
        asked = math.ceil(_number("output_bytes", options["output_bytes"]))
        output_bytes = min(asked, limits.max_output_bytes)
    try:
        tolerance = parse_tolerance(options.get("float_tolerance"))
    except ToleranceError as exc:
        raise OptionError(str(exc)) from None
    standard = options.get("standard")
    if standard is not None and not isinstance(standard, str):
        raise OptionError(f"standard {echo(standard)} is not a string")
    return AnswerOptions(
        partial=_flag(options.get("partial", False)),
        tolerance=tolerance,
        limits=Limits(time_s=time_s, memory_mb=memory_mb, output_bytes=output_bytes),
        standard=standard or None,
    )


Judge = Callable[[int, Outcome], Failure | None]
"""The verdict on test `i` from its run's outcome: None when it passed."""


class CodeScorer(SandboxedScorer):
    """1.0 when the program passes every test of the label, else 0.0 (`partial`: the fraction)."""

    name = "code"
    deadline_s: ClassVar[float | None] = 30.0
    options: ClassVar[Mapping[str, frozenset[str] | None]] = {
        "partial": frozenset({"0", "1", "true", "false"}),
        "float_tolerance": None,
        "time_limit_s": None,
        "memory_mb": None,
        "output_bytes": None,
        "standard": None,
        "think": THINK_MODES,
    }

    def __init__(
        self,
        limits: GradingLimits | None = None,
        settings: ScorerSettings | None = None,
        sandbox_factory: SandboxFactory | None = None,
    ) -> None:
        super().__init__(limits, settings, sandbox_factory)
        self._asserts = AssertSuites()

    @classmethod
    def startup_check(
        cls, settings: ScorerSettings | None, limits: GradingLimits
    ) -> StartupCheck | None:
        """The sandbox's layers, learnt by starting one (`settings.check_sandbox`)."""
        assert isinstance(settings, CodeSettings)
        return check_sandbox(settings, limits)

    def open(self) -> None:
        """Start the zygote with the worker, not at its first answer; one that cannot start
        leaves the worker serving the other scorers (the start-up check said why), and
        the next program tries again."""
        try:
            self.sandbox  # noqa: B018  (starts it)
        except Exception as exc:  # SandboxUnavailable, or OSError from the zygote's spawn
            log.warning("code sandbox did not start with the worker: %s", exc)

    @classmethod
    def option_problem(cls, name: str, value: JSON) -> str | None:
        problem = super().option_problem(name, value)
        if problem is None:
            try:
                read_options({name: value}, CodeSettings.model_validate({}))
            except OptionError as exc:
                return f"scorer 'code': {exc}"
        return problem

    @classmethod
    def screen(
        cls, response: str, label: JSON, options: Mapping[str, JSON] = NO_OPTIONS
    ) -> Score | None:
        """`no_answer` in the server for a response with no program to run (linear scan)."""
        program = _program(response, options)
        return None if isinstance(program, Extracted) else program

    def score(self, prompt: JSON, response: str, label: JSON, options: Mapping[str, JSON]) -> Score:
        program = _program(response, options)
        if not isinstance(program, Extracted):
            return program
        try:
            suite = read_suite(label, options)
            own = {key: suite.spec[key] for key in self.options if key in suite.spec}
            answer = read_options({**options, **own}, self.code)
        except (LabelError, OptionError) as exc:
            return Score.error(str(exc))
        problem = _language_problem(suite, program.language)
        if problem is not None:
            return Score.error(problem)
        try:
            found = self._verdicts(program.language, program.source, suite, answer)
        except (SandboxUnavailable, ValueError) as exc:  # no toolchain here; an unknown standard
            return Score.error(str(exc), language=program.language)
        total = len(suite.inputs) if found.total is None else found.total
        failures = found.failures
        if answer.partial:
            passed = total - len(failures)
        else:
            passed = failures[0].test if failures else total
        details: dict[str, JSON] = {
            "passed": passed,
            "total": total,
            "first_failure": failures[0].detail() if failures else None,
            "format": suite.style,
            "language": program.language,
            "sandbox": list(self.sandbox.layers),
        }
        if found.asserts is not None:
            details["asserts"] = found.asserts
        if found.budget_out:
            details["budget_exhausted"] = True
        if not failures:
            return Score.verdict(True, **details)
        if failures[0].kind == Kind.COMPILE_ERROR.value:
            return Score(0.0, Status.COMPILE_ERROR, details)
        return Score(passed / total if answer.partial else 0.0, Status.WRONG, details)

    def _verdicts(
        self, language: str, source: str, suite: Suite, answer: AnswerOptions
    ) -> Verdicts:
        if suite.style == "assert":
            return self._assert_verdicts(source, suite, answer)
        if suite.style == "harness":
            return self._harness_verdicts(language, source, suite, answer)
        mark = new_mark()
        if suite.style == "call":
            program = Program("python", call_driver(source, suite.fn_name, mark))
            judge = _call_judge(suite, answer.tolerance, mark)
        else:
            dialect = answer.standard if language != "python" else None
            program = Program(language, source, dialect=dialect)
            judge = _stdin_judge(suite, answer.tolerance)
        stdins = [text.encode() for text in suite.inputs]
        return self._run_each(program, stdins, answer.limits, judge, stop=not answer.partial)

    def _run_each(
        self, program: Program, stdins: Sequence[bytes], limits: Limits, judge: Judge, *, stop: bool
    ) -> Verdicts:
        """One run per stdin; when `stop`, in chunks of 1, 2, 4... so a wrong output ends early."""
        started = time.monotonic()
        failures: list[Failure] = []
        done, chunk = 0, 1
        while done < len(stdins):
            remaining = self.budget_s - (time.monotonic() - started)
            part = stdins[done : done + chunk] if stop else stdins[done:]
            outcomes = (
                self.sandbox.execute(
                    program, part, limits, remaining, stop_at_first_failure=stop
                ).outcomes()
                if remaining > 0
                else []
            )
            if outcomes and outcomes[0].kind is Kind.COMPILE_ERROR:
                message = outcomes[0].stderr[:STDERR_CHARS]  # a compiler's first errors
                return Verdicts([Failure(0, Kind.COMPILE_ERROR.value, message)])
            for offset, outcome in enumerate(outcomes):
                failure = judge(done + offset, outcome)
                if failure is not None:
                    failures.append(failure)
                    if stop:
                        return Verdicts(failures)
            done += len(outcomes)
            if len(outcomes) < len(part):
                unrun = range(done, len(stdins) if not stop else done + 1)
                unrun_failures = (Failure(i, Kind.TIME_LIMIT.value, BUDGET) for i in unrun)
                return Verdicts([*failures, *unrun_failures], budget_out=True)
            chunk *= 2
        return Verdicts(failures)

    def _harness_verdicts(
        self, language: str, source: str, suite: Suite, answer: AnswerOptions
    ) -> Verdicts:
        """One run of the program with its harness after it: passed when it exits 0 having
        written the line that follows the harness (`harness.py`). Every test is in that
        run, so it has the service's longest time limit."""
        mark = new_mark()
        joined = harness.joined(language, source, suite.inputs[0], suite.stop_tokens, mark)
        dialect = answer.standard if language != "python" else None
        program = Program(language, joined, dialect=dialect)
        limits = replace(answer.limits, time_s=self.code.max_time_limit_s)
        return self._run_each(program, [b""], limits, _harness_judge(mark), stop=True)

    def _assert_verdicts(self, source: str, suite: Suite, answer: AnswerOptions) -> Verdicts:
        """All tests in as few runs as their plan needs (`plans.py`, `asserts.py`): each
        run has each test's time, summed, capped by the service's maximum."""
        return self._asserts.verdicts(
            self.sandbox,
            source,
            AssertSuite(suite.inputs, suite.setup, suite.fn_name),
            AssertLimits(answer.limits, self.code.max_time_limit_s),
            stop=not answer.partial,
            tolerance=answer.tolerance,
            budget_s=self.budget_s,
        )


def _too_long(program: Extracted) -> bool:
    return len(program.source) > MAX_PROGRAM_CHARS


def _program(response: str, options: Mapping[str, JSON]) -> Extracted | Score:
    """The program to run: the answer region's last code block, or the `no_answer` why not
    (a linear scan, run in the server by `screen` and again in the worker)."""
    answer = final_answer(response, options)
    if isinstance(answer, Unanswered):
        return answer.score()
    program = last_program(answer)
    if program is None:
        return Score.no_answer("no closed code block in a known language (```python, ```cpp...)")
    if _too_long(program):
        return Score.no_answer(f"program longer than {MAX_PROGRAM_CHARS} characters")
    return program


def _language_problem(suite: Suite, language: str) -> str | None:
    """Why the program's language cannot run the label's tests, if it cannot."""
    if suite.style == "harness":
        try:
            wanted = harness.runner(suite.language)
        except harness.HarnessError as exc:
            return str(exc)
        if wanted != language:
            return f"a {suite.language} harness needs a {wanted} program"
        return None
    if suite.style != "stdin" and language != "python":
        return f"{suite.style} tests need a python program"
    return None


def _harness_judge(mark: str) -> Judge:
    def judge(i: int, outcome: Outcome) -> Failure | None:
        if outcome.kind is not Kind.OK:
            return Failure(i, outcome.kind.value, outcome.stderr)
        if ("value", DONE) in driver_results(outcome.stdout, mark):
            return None
        return Failure(i, Kind.RUNTIME_ERROR.value, "the program exited before its harness ended")

    return judge


def _stdin_judge(suite: Suite, tolerance: float | None) -> Judge:
    def judge(i: int, outcome: Outcome) -> Failure | None:
        if outcome.kind is not Kind.OK:
            return Failure(i, outcome.kind.value, outcome.stderr)
        got = outcome.stdout.decode("utf-8", "replace")
        if outputs_match(got, str(suite.expected[i]), tolerance):
            return None
        return Failure(i, "wrong_output", outcome.stderr)

    return judge


def _call_judge(suite: Suite, tolerance: float | None, mark: str) -> Judge:
    def judge(i: int, outcome: Outcome) -> Failure | None:
        if outcome.kind is not Kind.OK:
            return Failure(i, outcome.kind.value, outcome.stderr)
        readings = driver_results(outcome.stdout, mark)
        if not readings:
            text = outcome.stderr or "the program exited before the function returned"
            return Failure(i, Kind.RUNTIME_ERROR.value, text)
        reading, value = readings[-1]
        if reading == "value" and values_match(value, suite.expected[i], tolerance):
            return None
        return Failure(i, "wrong_output", outcome.stderr)

    return judge
