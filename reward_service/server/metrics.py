"""Prometheus metrics: what an operator needs beside a multi-day RL run.

Each app gets its own registry, so several apps (tests) never clash.

Every label value comes from a small fixed set, so the series (and the
memoised children) are bounded whatever clients send: routes are route
templates or `unmatched`, scorers registered names or `unknown` (the
engine sees to it), and the `path` and `cache` facts scorers report are
kept only when they are among the values below, else counted as `other`.
A judge scorer's `judge` facts (calls, seconds, tokens, failure kind, circuit
state: `scorers/llm_judge/client.py`) are read the same way.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_LATEST

from reward_service.grading.engine import Graded
from reward_service.grading.group_facts import GroupFacts

__all__ = ["CONTENT_TYPE_LATEST", "ServiceMetrics"]

_LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30)
_GROUP_BUCKETS = (1, 2, 3, 4, 6, 8, 12, 16, 32, 64)
"""Distinct answers per group: GRPO groups are 4 to 64 answers."""
_SIZE_BUCKETS = (256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216)
_PATHS = frozenset({"inline", "fast", "region", "full", "rule", "judge"})
_CACHE_RESULTS = frozenset({"hit", "miss"})
_JUDGE_FAILURES = frozenset(
    {"not_configured", "circuit_open", "deadline", "timeout", "connection", "rate_limited"}
    | {"server_error", "refused", "bad_request", "malformed", "no_verdict"}
)
_CIRCUIT_STATES = ("closed", "half_open", "open")
_MARKERS = frozenset({"invisible", "verdict", "instruction", "prompt", "chat"})
"""The kinds of grader-addressed text a judge scorer removes from an answer (`markers`)."""
_RULE_MISSES = frozenset({"wrong", "no_answer"})
_OTHER = "other"


class ServiceMetrics:
    """The service's metrics, registered in a registry of their own."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self._children: dict[tuple[int, tuple[str, ...]], Any] = {}
        # in this order: the exposition lists metrics as they were registered
        self._add_http_metrics()
        self._add_grading_metrics()
        self._add_judge_endpoint_metrics()
        self._add_judge_answer_metrics()
        self._add_group_metrics()
        self._add_load_metrics()

    def _add_http_metrics(self) -> None:
        r = self.registry
        self.requests = Counter(
            "reward_http_requests",
            "HTTP requests by route and status code.",
            ["route", "code"],
            registry=r,
        )
        self.body_bytes = Histogram(
            "reward_http_request_body_bytes",
            "Request body sizes (Content-Length).",
            ["route"],
            buckets=_SIZE_BUCKETS,
            registry=r,
        )

    def _add_grading_metrics(self) -> None:
        r = self.registry
        self.grading_seconds = Histogram(
            "reward_grading_seconds",
            "Time from dispatch to reward, by scorer.",
            ["scorer"],
            buckets=_LATENCY_BUCKETS,
            registry=r,
        )
        self.outcomes = Counter(
            "reward_outcomes",
            "Graded answers by scorer and status.",
            ["scorer", "status"],
            registry=r,
        )
        self.worker_restarts = Counter(
            "reward_worker_restarts", "Grading workers replaced, by cause.", ["cause"], registry=r
        )
        self.cache_lookups = Counter(
            "reward_cache_lookups",
            "Scorer verdict-cache lookups by result (hit, miss, other).",
            ["scorer", "result"],
            registry=r,
        )
        self.grading_paths = Counter(
            "reward_grading_paths",
            "Which grading path settled an answer (inline, fast, region, full, other).",
            ["scorer", "path"],
            registry=r,
        )

    def _add_judge_endpoint_metrics(self) -> None:
        r = self.registry
        self.judge_calls = Counter(
            "reward_judge_calls",
            "HTTP calls to the judge endpoint, retries included.",
            ["scorer"],
            registry=r,
        )
        self.judge_seconds = Histogram(
            "reward_judge_seconds",
            "An answer's time with the judge endpoint (waits, calls, retries).",
            ["scorer"],
            buckets=_LATENCY_BUCKETS,
            registry=r,
        )
        self.judge_tokens = Counter(
            "reward_judge_tokens",
            "Tokens the judge endpoint reported, by direction (in: prompt, out: reply).",
            ["scorer", "direction"],
            registry=r,
        )
        self.judge_failures = Counter(
            "reward_judge_failures",
            "Answers the judge gave no verdict on, by kind (docs/judge.md).",
            ["scorer", "kind"],
            registry=r,
        )
        self.judge_circuit = Gauge(
            "reward_judge_circuit",
            "The judge endpoint's circuit breaker: 1 for its state as the last answer saw it.",
            ["scorer", "state"],
            registry=r,
        )

    def _add_judge_answer_metrics(self) -> None:
        r = self.registry
        self.judge_markers = Counter(
            "reward_judge_answer_markers",
            "Answers shown to the judge with text addressed to the grader removed, by kind.",
            ["scorer", "kind"],
            registry=r,
        )
        self.judge_overturns = Counter(
            "reward_judge_overturns",
            "math_judge answers the rule graded wrong or no_answer and the judge paid.",
            ["scorer"],
            registry=r,
        )

    def _add_group_metrics(self) -> None:
        r = self.registry
        self.groups = Counter(
            "reward_groups",
            "Groups graded by the group endpoint, by scorer and whether every verdict earned "
            "the same reward (all_equal: a group DAPO's dynamic sampling drops).",
            ["scorer", "all_equal"],
            registry=r,
        )
        self.group_answers_distinct = Histogram(
            "reward_group_answers_distinct",
            "Distinct final answers per group graded by the group endpoint.",
            ["scorer"],
            buckets=_GROUP_BUCKETS,
            registry=r,
        )

    def _add_load_metrics(self) -> None:
        r = self.registry
        self.rejected = Counter(
            "reward_rejected_requests",
            "Requests refused before grading, by reason.",
            ["reason"],
            registry=r,
        )
        self.in_flight = Gauge(
            "reward_gradings_in_flight", "Gradings accepted and not yet answered.", registry=r
        )
        self.queued = Gauge(
            "reward_gradings_queued", "Gradings waiting for a free worker.", registry=r
        )
        self.workers_alive = Gauge(
            "reward_workers_alive",
            "Grading workers up and initialised, spares included.",
            registry=r,
        )
        self.spare_workers_alive = Gauge(
            "reward_spare_workers_alive",
            "Spare grading workers up and initialised (started while others' gradings wait).",
            registry=r,
        )
        self.spare_workers = Counter(
            "reward_spare_workers",
            "Spare grading workers started (ready) and retired (ended: idle, or killed, "
            "recycled, dead: a spare is never replaced).",
            ["event"],
            registry=r,
        )
        self.ready = Gauge("reward_ready", "1 while /readyz answers 200.", registry=r)

    def watch(
        self,
        in_flight: Callable[[], float],
        queued: Callable[[], float],
        alive: Callable[[], float],
        spares_alive: Callable[[], float],
        ready: Callable[[], float],
    ) -> None:
        """Read the gauges from the engine when scraped."""
        self.in_flight.set_function(in_flight)
        self.queued.set_function(queued)
        self.workers_alive.set_function(alive)
        self.spare_workers_alive.set_function(spares_alive)
        self.ready.set_function(ready)

    def record(self, graded: Graded) -> None:
        """Count one finished grading."""
        scorer, details = graded.scorer, graded.score.details
        self._child(self.outcomes, scorer, graded.score.status.value).inc()
        self._child(self.grading_seconds, scorer).observe(graded.elapsed_ms / 1000)
        cache = details.get("cache")
        if cache is not None:
            self._child(self.cache_lookups, scorer, _known(cache, _CACHE_RESULTS)).inc()
        path = details.get("path")
        if path is not None:
            self._child(self.grading_paths, scorer, _known(path, _PATHS)).inc()
        judge = details.get("judge")
        if isinstance(judge, dict):
            self._record_judge(scorer, judge)
        markers = details.get("markers")
        if isinstance(markers, list):
            for kind in {_known(marker, _MARKERS) for marker in markers[: len(_MARKERS) + 1]}:
                self._child(self.judge_markers, scorer, kind).inc()
        rule = details.get("rule")
        overturned = isinstance(rule, dict) and rule.get("status") in _RULE_MISSES
        if path == "judge" and overturned and graded.score.reward > 0:
            self._child(self.judge_overturns, scorer).inc()

    def record_group(self, scorer: str, facts: GroupFacts) -> None:
        """Count one graded group: whether it was all-equal, and its distinct answers."""
        self._child(self.groups, scorer, "true" if facts.all_equal else "false").inc()
        self._child(self.group_answers_distinct, scorer).observe(facts.distinct_answers)

    def _record_judge(self, scorer: str, judge: dict[str, Any]) -> None:
        """Count what one answer cost at the judge endpoint; numbers only, kinds from a set."""
        calls = _count(judge.get("calls"))
        if calls:
            self._child(self.judge_calls, scorer).inc(calls)
            self._child(self.judge_seconds, scorer).observe(_count(judge.get("seconds")))
        for direction in ("in", "out"):
            tokens = _count(judge.get(f"tokens_{direction}"))
            if tokens:
                self._child(self.judge_tokens, scorer, direction).inc(tokens)
        failure = judge.get("failure")
        if failure is not None:
            self._child(self.judge_failures, scorer, _known(failure, _JUDGE_FAILURES)).inc()
        state = judge.get("circuit")
        if state in _CIRCUIT_STATES:
            for each in _CIRCUIT_STATES:
                self._child(self.judge_circuit, scorer, each).set(1 if each == state else 0)

    def count_request(self, route: str, code: int, body_bytes: int | None) -> None:
        """Count one HTTP request and its body size."""
        self._child(self.requests, route, str(code)).inc()
        if body_bytes is not None:
            self._child(self.body_bytes, route).observe(body_bytes)

    def _child(self, metric: Any, *labels: str) -> Any:
        """`metric.labels(*labels)`, memoised: it is on every request's path."""
        key = (id(metric), labels)
        child = self._children.get(key)
        if child is None:
            child = self._children[key] = metric.labels(*labels)
        return child

    def exposition(self) -> bytes:
        return generate_latest(self.registry)


def _count(value: object) -> float:
    """A non-negative number a scorer reported, else 0."""
    if isinstance(value, int | float) and not isinstance(value, bool) and value >= 0:
        return float(value)
    return 0.0


def _known(value: object, known: frozenset[str]) -> str:
    return value if isinstance(value, str) and value in known else _OTHER
