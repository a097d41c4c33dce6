"""Prometheus metrics move as expected after a scripted mix of outcomes."""

from __future__ import annotations

import asyncio

import httpx
from prometheus_client.parser import text_string_to_metric_families
from starlette.types import Receive, Scope, Send

from reward_service.grading.engine import Graded
from reward_service.scorers import Score, Status
from reward_service.server.metrics import ServiceMetrics
from reward_service.server.middleware import _MAX_TRACKED_CONNECTIONS, ServiceMiddleware
from reward_service.settings import Settings
from reward_service.testing import LiveServer, live_server
from tests.conftest import TEST_ENV

Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


def _samples(server: LiveServer) -> Samples:
    text = httpx.get(f"{server.url}/metrics").text
    return {
        (sample.name, frozenset(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def _value(
    samples: dict[tuple[str, frozenset[tuple[str, str]]], float], name: str, **labels: str
) -> float:
    return samples.get((name, frozenset(labels.items())), 0.0)


def test_metrics_count_a_scripted_mix(server: LiveServer) -> None:
    """Outcomes, requests, latencies, body sizes and worker restarts all move."""
    mix = [
        ("/score", {"response": "\\boxed{3}", "label": 3}),
        ("/score", {"response": "\\boxed{3}", "label": "3"}),
        ("/score", {"response": "\\boxed{4}", "label": 3}),
        ("/score", {"response": "no answer here", "label": 3}),
        ("/score", {"response": "\\boxed{3}", "label": None}),
        ("/score/fake", {"response": "stall"}),
        ("/score/nope", {"response": "1"}),
    ]
    before = _samples(server)
    for path, body in mix:
        httpx.post(f"{server.url}{path}", json=body, timeout=30)
    after = _samples(server)

    def delta(name: str, **labels: str) -> float:
        return _value(after, name, **labels) - _value(before, name, **labels)

    outcomes = "reward_outcomes_total"
    assert delta(outcomes, scorer="math_verify", status="ok") == 2
    assert delta(outcomes, scorer="math_verify", status="wrong") == 1
    assert delta(outcomes, scorer="math_verify", status="no_answer") == 1
    assert delta(outcomes, scorer="math_verify", status="error") == 1
    assert delta(outcomes, scorer="fake", status="timeout") == 1
    assert delta("reward_http_requests_total", route="/score", code="200") == 5
    assert delta("reward_http_requests_total", route="/score/{scorer}", code="404") == 1
    assert delta("reward_rejected_requests_total", reason="UnknownScorer") == 1
    assert delta("reward_worker_restarts_total", cause="deadline") == 1
    assert delta("reward_grading_seconds_count", scorer="math_verify") == 5
    assert delta("reward_grading_seconds_bucket", scorer="fake", le="10.0") == 1
    assert delta("reward_http_request_body_bytes_count", route="/score") == 5
    assert _value(after, "reward_workers_alive") >= 1
    assert _value(after, "reward_ready") == 1
    assert _value(after, "reward_gradings_in_flight") == 0


def test_metrics_count_spare_workers_started_while_a_grading_waits() -> None:
    """One worker and spares left to their default: none at start; three 3 s sleepers at once
    (two sent to the worker, one queued for the 3 s a spare may take to start on a loaded
    machine) start one spare, seen in both spare metrics."""

    async def sleepers(url: str) -> None:
        async with httpx.AsyncClient(timeout=30) as client:
            body = {"response": "sleep:3"}
            await asyncio.gather(*(client.post(f"{url}/score/fake", json=body) for _ in range(3)))

    with live_server(workers=1, env=TEST_ENV) as server:
        before = _samples(server)
        asyncio.run(sleepers(server.url))
        after = _samples(server)
    assert _value(before, "reward_spare_workers_alive") == 0
    assert _value(after, "reward_spare_workers_alive") == 1
    assert _value(after, "reward_spare_workers_total", event="started") == 1
    assert _value(after, "reward_spare_workers_total", event="retired") == 0
    assert _value(after, "reward_workers_alive") == 2


def test_metrics_report_the_grading_path(server: LiveServer) -> None:
    """math_verify's paths (inline in the server, fast in a worker) and cache are counted."""
    before = _samples(server)
    for response in ["\\boxed{97531}", "\\boxed{\\frac{195062}{2}}"] * 3:
        httpx.post(f"{server.url}/score", json={"response": response, "label": 97531})
    after = _samples(server)

    def delta(name: str, **labels: str) -> float:
        return _value(after, name, **labels) - _value(before, name, **labels)

    path = "reward_grading_paths_total"
    assert delta(path, scorer="math_verify", path="inline") == 3
    assert delta(path, scorer="math_verify", path="fast") == 3  # a cached verdict keeps its path
    assert delta("reward_cache_lookups_total", scorer="math_verify", result="hit") == 2


def test_request_id_is_echoed_or_made(server: LiveServer) -> None:
    """`X-Request-ID` is returned as sent, or generated when absent."""
    sent = httpx.post(
        f"{server.url}/score", json={"response": "1"}, headers={"X-Request-ID": "abc-123"}
    )
    assert sent.headers["x-request-id"] == "abc-123"
    made = httpx.post(f"{server.url}/score", json={"response": "1"})
    assert len(made.headers["x-request-id"]) >= 16


def test_unknown_scorer_names_add_no_series(server: LiveServer) -> None:
    """1,000 labels naming 1,000 unknown scorers add no series: they count as `unknown`."""
    with httpx.Client(base_url=server.url, timeout=30) as client:

        def post(name: str) -> httpx.Response:
            body = {"response": "1", "label": {"scorer": name, "answer": "1"}}
            return client.post("/score", json=body, params={"detail": "1"})

        first = post("nope-warm-up")
        _samples(server)  # a server's first scrape adds the /metrics route's own series
        before = _samples(server)
        answers = [post(f"nope-{i}-" + "x" * 200) for i in range(1000)]
        text = client.get("/metrics").text
    after = _samples(server)
    assert first.json()["scorer"] == "unknown"
    assert "nope-warm-up" in first.json()["reason"]
    assert all(a.json()["status"] == "error" for a in answers)
    assert "x" * 100 not in answers[0].json()["reason"], "the echoed name is not truncated"
    assert set(after) - set(before) == set()
    assert "nope-" not in text
    assert _value(after, "reward_outcomes_total", scorer="unknown", status="error") - _value(
        before, "reward_outcomes_total", scorer="unknown", status="error"
    ) == len(answers)


def test_scorer_reported_facts_outside_known_values_count_as_other() -> None:
    """A scorer's `path` or `cache` detail outside the known values becomes `other`."""
    metrics = ServiceMetrics()
    for i in range(100):
        details = {"path": f"path-{i}", "cache": f"cache-{i}"}
        metrics.record(Graded(Score(1.0, Status.OK, details), "exact", 1.0))
    metrics.record(Graded(Score.verdict(True, path="fast", cache="hit"), "exact", 1.0))
    samples = {
        (sample.name, frozenset(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(metrics.exposition().decode())
        for sample in family.samples
        if sample.name in ("reward_grading_paths_total", "reward_cache_lookups_total")
    }
    assert samples == {
        ("reward_grading_paths_total", frozenset({("scorer", "exact"), ("path", "other")})): 100,
        ("reward_grading_paths_total", frozenset({("scorer", "exact"), ("path", "fast")})): 1,
        ("reward_cache_lookups_total", frozenset({("scorer", "exact"), ("result", "other")})): 100,
        ("reward_cache_lookups_total", frozenset({("scorer", "exact"), ("result", "hit")})): 1,
    }


def test_judge_markers_and_overturns_are_counted_in_fixed_kinds() -> None:
    """Grader-addressed text a judge removed counts by kind (unknown kinds as `other`, one per
    answer), and a math_judge answer the rule missed and the judge paid counts as overturned."""
    metrics = ServiceMetrics()
    flagged = {"path": "judge", "markers": ["verdict", "instruction", "made-up"] * 50}
    metrics.record(Graded(Score(0.0, Status.WRONG, flagged), "judge", 1.0))
    overturned = {"path": "judge", "rule": {"status": "wrong"}}
    metrics.record(Graded(Score(1.0, Status.OK, overturned), "math_judge", 1.0))
    agreed = {"path": "judge", "rule": {"status": "wrong"}}
    metrics.record(Graded(Score(0.0, Status.WRONG, agreed), "math_judge", 1.0))
    metrics.record(Graded(Score(1.0, Status.OK, {"path": "rule"}), "math_judge", 1.0))
    samples = {
        (sample.name, frozenset(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(metrics.exposition().decode())
        for sample in family.samples
        if sample.name in ("reward_judge_answer_markers_total", "reward_judge_overturns_total")
    }
    markers = "reward_judge_answer_markers_total"
    assert samples == {
        (markers, frozenset({("scorer", "judge"), ("kind", "verdict")})): 1,
        (markers, frozenset({("scorer", "judge"), ("kind", "instruction")})): 1,
        (markers, frozenset({("scorer", "judge"), ("kind", "other")})): 1,
        ("reward_judge_overturns_total", frozenset({("scorer", "math_judge")})): 1,
    }


async def _no_app(scope: Scope, receive: Receive, send: Send) -> None:
    """An ASGI app that does nothing, for driving the middleware alone."""


def test_connection_table_is_bounded() -> None:
    """Connection recycling tracks at most `_MAX_TRACKED_CONNECTIONS` clients, oldest out first."""
    settings = Settings(connection_max_age_s=600)
    middleware = ServiceMiddleware(_no_app, settings, ServiceMetrics())
    clients = [(f"10.0.{i // 50_000}.1", i % 50_000) for i in range(_MAX_TRACKED_CONNECTIONS + 500)]
    for client in clients:
        middleware._should_close(client)
    assert len(middleware._connections) == _MAX_TRACKED_CONNECTIONS
    assert clients[-1] in middleware._connections
    assert clients[0] not in middleware._connections
