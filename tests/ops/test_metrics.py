"""Prometheus metrics move as expected after a scripted mix of outcomes."""

from __future__ import annotations

import httpx
from prometheus_client.parser import text_string_to_metric_families

from reward_service.testing import LiveServer

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
