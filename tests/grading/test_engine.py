"""The scoring engine: closing under load, and the scorer options each sample gets."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from reward_service.errors import InvalidSetting, Overloaded, SandboxUnavailable
from reward_service.grading.engine import Graded, ScoringEngine
from reward_service.grading.pool import WorkerPool
from reward_service.grading.sample import Sample
from reward_service.sandbox import Sandbox
from reward_service.sandbox.zygote_client import ZYGOTE
from reward_service.scorers import GradingLimits, Scorer, ScorerRegistry, Status
from reward_service.scorers.answers.exact import ExactScorer
from reward_service.scorers.base import StartupCheck
from reward_service.scorers.code.scorer import CodeScorer
from reward_service.settings import Settings
from reward_service.testing import LiveServer, _children, live_server
from tests.conftest import FAKE_SCORER


def test_work_the_pool_will_not_run_gets_overloaded_not_a_fallback_reward() -> None:
    """At close, gradings a worker holds finish; queued ones raise Overloaded (503), never 0.0."""

    async def body() -> list[object]:
        settings = Settings(workers=1, extra_scorers=json.loads(FAKE_SCORER))
        engine = ScoringEngine(settings)
        await engine.start()
        gradings = [
            asyncio.create_task(engine.grade(Sample("sleep:0.5", None), "fake")) for _ in range(3)
        ]
        await asyncio.sleep(0.2)
        await engine.close()
        return await asyncio.gather(*gradings, return_exceptions=True)

    held, next_up, queued = asyncio.run(body())
    assert [getattr(g, "reward", g) for g in (held, next_up)] == [1.0, 1.0]
    assert isinstance(queued, Overloaded), queued
    with pytest.raises(Overloaded, match="shutting down"):
        raise queued


def test_a_label_nested_past_the_recursion_limit_is_an_error_answer() -> None:
    """A label too deep to print or pickle (the JSON readers take ~1,000 levels) is graded
    `error` with the fallback reward, never an exception out of the engine."""

    async def body() -> Graded:
        engine = ScoringEngine(Settings(workers=1), only={"exact"})
        await engine.start()
        try:
            return await engine.grade(Sample("1", orjson.loads("[" * 1000 + "]" * 1000)), "exact")
        finally:
            await engine.close()

    graded = asyncio.run(body())
    assert graded.score.status is Status.ERROR
    assert "cannot be sent to a worker" in graded.score.details["reason"]


def _engine(**settings: object) -> ScoringEngine:
    extra = json.loads(FAKE_SCORER)
    return ScoringEngine(Settings(workers=1, extra_scorers=extra, **settings))  # type: ignore[arg-type]


def test_url_options_override_the_settings_default() -> None:
    """Per option, the request's (URL) value wins over `scorer_options`; the rest stay."""
    engine = _engine(scorer_options={"fake": {"tag": "settings"}})
    assert engine.options_for("fake", {}) == {"tag": "settings"}
    assert engine.options_for("fake", {"tag": "url"}) == {"tag": "url"}
    assert engine.options_for("math_verify", {}) == {}


def test_url_options_reach_another_scorer_only_if_it_takes_them() -> None:
    """An option, or a value, a label-chosen scorer does not take is dropped for it, not refused."""
    engine = _engine()
    url = {"extraction": "any", "tag": "blue"}
    assert engine.options_for("math_verify", url) == {"extraction": "any"}
    assert engine.options_for("fake", url) == {"tag": "blue"}
    assert engine.options_for("exact", url) == {}
    assert engine.options_for("math_verify", {"extraction": "nope"}) == {}
    assert engine.options_for("nonesuch", url) == {}


@pytest.mark.parametrize(
    ("scorer_options", "message"),
    [
        ({"nonesuch": {}}, "unknown scorer 'nonesuch'; known scorers: "),
        ({"math_verify": {"bogus": "1"}}, "no option 'bogus'; its options: extraction"),
        ({"math_verify": {"extraction": "nope"}}, "takes one of any, final, not 'nope'"),
        ({"math_verify": {"extraction": 1}}, "takes one of any, final, not 1"),
        ({"random": {"extraction": "any"}}, "its options: none"),
    ],
)
def test_bad_scorer_options_stop_start_up(scorer_options: object, message: str) -> None:
    """`scorer_options` is checked against the registry when the engine is built, before workers."""
    with pytest.raises(InvalidSetting, match="REWARD_SCORER_OPTIONS") as raised:
        _engine(scorer_options=scorer_options)
    assert message in str(raised.value)


def test_options_reach_the_worker_label_first() -> None:
    """Label object over URL over settings, per option, in one batch graded by a worker."""

    async def body() -> list[object]:
        engine = _engine(scorer_options={"fake": {"tag": "settings"}})
        await engine.start()
        try:
            samples = [
                Sample("options", 1, options={"tag": "label", "source": "x"}),
                Sample("options", 1),
            ]
            url = await engine.grade_many(samples, "fake", {"tag": "url"})
            plain = await engine.grade(Sample("options", 1), "fake")
        finally:
            await engine.close()
        return [g.score.details["options"] for g in [*url, plain]]

    assert asyncio.run(body()) == [
        {"tag": "label", "source": "x"},
        {"tag": "url"},
        {"tag": "settings"},
    ]


def test_the_code_scorers_budget_ends_before_its_hard_deadline() -> None:
    """The code scorer's tests stop one second inside its deadline, as the engine sets it."""
    limits = GradingLimits(deadlines={"code": 12.0})
    assert CodeScorer(limits).budget_s == 11


def _checked(**settings: object) -> ScoringEngine:
    """An engine whose scorers' settings were read and start-up checks run (no workers)."""
    engine = _engine(**settings)
    engine._run_checks(engine._scorer_settings())
    return engine


def test_the_engine_runs_each_scorers_start_up_check_once() -> None:
    """The code scorer's check reports its sandbox's layers before the engine serves."""
    check = _checked().checks["code"]
    assert check.ok and {"process", "rlimits"} <= set(check.details["layers"]), check


@pytest.mark.parametrize(
    ("check", "level", "said"),
    [
        (StartupCheck(True, "fine"), logging.INFO, "start-up check: fine"),
        (StartupCheck(True, "no go", degraded=True), logging.WARNING, "start-up check: no go"),
        (
            StartupCheck(False, "set X", configured=False),
            logging.INFO,
            "start-up check not configured: set X",
        ),
        (StartupCheck(False, "broken"), logging.ERROR, "start-up check failed: broken"),
    ],
    ids=["ok", "degraded", "not-configured", "failed"],
)
def test_a_start_up_check_is_logged_as_loud_as_it_matters(
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    check: StartupCheck,
    level: int,
    said: str,
) -> None:
    """An optional scorer nobody configured is info, one serving in part a warning, a
    configured one that failed an error."""
    monkeypatch.setattr(
        ExactScorer, "startup_check", classmethod(lambda cls, settings, limits: check)
    )
    with caplog.at_level(logging.INFO, logger="reward_service"):
        _checked()
    [record] = [r for r in caplog.records if r.getMessage().startswith("exact ")]
    assert (record.levelno, record.getMessage()) == (level, f"exact {said}")


def test_a_required_sandbox_layer_that_cannot_be_had_stops_start_up() -> None:
    """A required layer the sandbox cannot provide raises SandboxUnavailable (uid, root only,
    and userns, non-root only, are never both active)."""
    with pytest.raises(SandboxUnavailable, match="not active here"):
        _checked(scorers={"code": {"required_layers": ["uid", "userns"]}})


def test_a_required_check_failing_beside_the_pools_start_stops_start_up(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The start-up checks run while the workers start: a required one that fails still
    stops start-up with its own error, and the workers started beside it are stopped."""
    pools: list[WorkerPool] = []

    class Recorded(WorkerPool):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            pools.append(self)

    monkeypatch.setattr("reward_service.grading.engine.WorkerPool", Recorded)
    engine = _engine(scorers={"code": {"required_layers": ["uid", "userns"]}})
    with pytest.raises(SandboxUnavailable, match="not active here"):
        asyncio.run(engine.start())
    assert engine.pool is None and not engine.ready
    [pool] = pools
    assert pool.alive == 0


def test_a_sandbox_that_cannot_start_leaves_the_other_scorers_serving(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """With no layer required, a broken sandbox is a failed optional check, logged; required,
    it stops start-up."""

    def broken(*args: object, **kwargs: object) -> None:
        raise SandboxUnavailable("zygote did not start")

    monkeypatch.setattr("reward_service.sandbox.zygote_client.ZygoteSandbox", broken)
    check = _checked().checks["code"]
    assert not check.ok and "zygote did not start" in check.summary
    with pytest.raises(SandboxUnavailable):
        _checked(scorers={"code": {"required_layers": ["seccomp"]}})


def test_a_scorer_setting_it_does_not_have_stops_start_up(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`REWARD_CODE__TIME_LIMT_S` (a typo) or a refused value fails start-up, naming it."""
    monkeypatch.setenv("REWARD_CODE__TIME_LIMT_S", "1")
    with pytest.raises(InvalidSetting, match="REWARD_CODE__TIME_LIMT_S"):
        _engine()._scorer_settings()
    monkeypatch.delenv("REWARD_CODE__TIME_LIMT_S")
    monkeypatch.setenv("REWARD_CODE__TIME_LIMIT_S", "20")
    with pytest.raises(InvalidSetting, match="time_limit_s must not exceed max_time_limit_s"):
        _engine()._scorer_settings()


@pytest.fixture(scope="module")
def default_server() -> Iterator[LiveServer]:
    """Two workers, every setting left to its default; no test sends it an answer."""
    with live_server(workers=2) as server:
        yield server


def test_each_worker_has_its_zygote_once_the_pool_is_ready(default_server: LiveServer) -> None:
    """The code sandbox starts with its worker, not at the worker's first code answer."""
    workers = default_server.worker_pids()
    assert len(workers) == 2
    for worker in workers:
        commands = [Path(f"/proc/{pid}/cmdline").read_bytes() for pid in _children(worker)]
        assert any(str(ZYGOTE).encode() in command for command in commands), commands


@pytest.mark.parametrize("nice", [None, 0])
def test_workers_and_their_zygotes_yield_the_cpu_to_the_server(
    nice: int | None, request: pytest.FixtureRequest
) -> None:
    """Grading runs `REWARD_WORKER_NICE` (5 by default) below the server, so that under full
    load its event loop (probes, bodies, screens) is scheduled first. The default is read
    on the module's default server; 0 on a server of its own."""
    with contextlib.ExitStack() as stack:
        if nice is None:
            server: LiveServer = request.getfixturevalue("default_server")
        else:
            env = {"REWARD_WORKER_NICE": str(nice)}
            server = stack.enter_context(live_server(workers=1, env=env))
        server_nice = os.getpriority(os.PRIO_PROCESS, server.process.pid)
        workers = server.worker_pids()
        assert workers
        added = Settings.model_fields["worker_nice"].default if nice is None else nice
        for worker in workers:
            zygotes = _children(worker)
            assert zygotes
            for pid in (worker, *zygotes):
                assert os.getpriority(os.PRIO_PROCESS, pid) == min(19, server_nice + added)


def test_a_sandbox_that_cannot_start_with_the_worker_leaves_it_serving(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The code scorer's `open` logs a sandbox that cannot start; the worker still grades."""

    def broken(settings: object) -> Sandbox:
        raise SandboxUnavailable("zygote did not start")

    monkeypatch.setattr("reward_service.scorers.code.sandboxed.default_sandbox", broken)
    registry = ScorerRegistry.discover(GradingLimits())
    for scorer in registry.build(Scorer):
        assert isinstance(scorer, Scorer)
        scorer.open()
    exact = registry.get("exact")
    assert isinstance(exact, Scorer) and exact.score("p", "42", "42", {}).reward == 1.0
