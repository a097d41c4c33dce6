"""The replica: the service's own ASGI app, as a Ray Serve deployment (runs on the cluster).

Each replica builds the app and its engine with `create_app`, as `reward-service
serve` does; Serve's proxy stands in for uvicorn. What Kubernetes probes and
SIGTERM do there, Serve does here:

- the replica takes traffic only once the app's lifespan has started the
  engine, which waits until every worker has loaded its scorers (warm);
- Serve's health check is the service's readiness (`engine.ready`); three
  failures in a row and Serve replaces the replica;
- a replica being removed gets no new requests, answers those it accepted
  (up to `graceful_shutdown_timeout_s`, the spec's drain), then the lifespan
  closes the engine, which lets current gradings finish;
- Serve's proxy answers `/metrics` from whichever replica it picks, so each
  replica also serves its own on the first free port from `metrics_port`
  (Serve's `user_config`) on its node: n replicas of a node use n ports up.

The engine is sized from the CPUs Ray gave the replica, not the host's count
(`REWARD_WORKERS` in the replica's environment wins).
"""

from __future__ import annotations

import logging
import math
from typing import Any, cast

import prometheus_client
import ray
from fastapi import FastAPI
from ray import serve

from reward_service.errors import RewardServiceError
from reward_service.server.app import create_app
from reward_service.settings import Settings

METRICS_PORTS = 64
"""Ports tried from `metrics_port` up: more replicas than this on one node get none."""

log = logging.getLogger("reward_service.rayserve")


class ReplicaNotReady(RewardServiceError):
    """The replica's grading pool is not up: Serve's health check fails."""


def replica_workers(assigned: dict[str, float]) -> int:
    """Grading workers for a replica given `assigned` resources: its whole CPUs, at least one."""
    return max(1, math.floor(assigned.get("CPU", 1.0) + 1e-9))


def replica_settings() -> Settings:
    settings = Settings()
    if "workers" in settings.model_fields_set:
        return settings
    context: Any = ray.get_runtime_context()
    assigned = context.get_assigned_resources()
    return Settings(workers=replica_workers(assigned))


def build_app() -> FastAPI:
    """The service's app for this replica (Serve calls it when the replica starts)."""
    return create_app(replica_settings())


@serve.deployment(name="RewardService")
@serve.ingress(build_app)
class RewardService:
    """One replica: one HTTP front end with its own grading workers."""

    def check_health(self) -> None:
        app: Any = getattr(self, "app", None)
        if app is None or not app.state.engine.ready:
            raise ReplicaNotReady("grading pool not ready")

    def reconfigure(self, config: dict[str, Any]) -> None:
        """Serve's `user_config`: with `metrics_port`, serve this replica's /metrics (once)."""
        base = config.get("metrics_port")
        app: Any = getattr(self, "app", None)
        if not base or app is None or getattr(self, "metrics_port", None):
            return
        if app.state.settings.metrics_need_token:
            log.warning("REWARD_METRICS_NEED_TOKEN is set: no open per-replica /metrics port")
            return
        self.metrics_port = serve_metrics(app.state.metrics.registry, int(base))


def serve_metrics(registry: prometheus_client.CollectorRegistry, base: int) -> int | None:
    """Expose `registry` on the first free port from `base`; the port, or None if all are taken."""
    for port in range(base, base + METRICS_PORTS):
        try:
            prometheus_client.start_http_server(port, addr="0.0.0.0", registry=registry)
        except OSError:
            continue
        log.info("replica metrics on port %d", port)
        return port
    log.warning("no free port in %d-%d for this replica's /metrics", base, base + METRICS_PORTS - 1)
    return None


app = cast(Any, RewardService).bind()
