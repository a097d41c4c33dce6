"""The application: `create_app` wires the engine, the middleware and the routes.

What each endpoint does is in `reward_service.server.endpoints`; an error's
status comes from `reward_service.server.error_status`, the one mapping of
the error tree to status codes. Grading happens in
`reward_service.grading.engine`; nothing here imports a grader.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from fastapi import FastAPI
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Match, Route
from starlette.types import Scope

from reward_service import __version__
from reward_service.errors import RewardServiceError
from reward_service.grading.engine import ScoringEngine
from reward_service.server import endpoints, nemo_gym, openapi
from reward_service.server.admission import Admission
from reward_service.server.bodies import BodyParser
from reward_service.server.metrics import ServiceMetrics
from reward_service.server.middleware import ServiceMiddleware
from reward_service.settings import Settings

Endpoint = Callable[[Request], Awaitable[Response]]

# Plain Starlette routes: these endpoints read their bodies themselves, and
# FastAPI's per-request dependency solving cost ~15% of the server's CPU per answer.
SCORING: list[tuple[str, Endpoint, dict[str, Any], str]] = [
    ("/score", endpoints.score_one, openapi.SCORE, "Grade one answer (default scorer)"),
    ("/score/batch", endpoints.score_many, openapi.BATCH, "Grade many answers (default scorer)"),
    (
        "/score/{scorer}/batch",
        endpoints.score_many,
        openapi.BATCH,
        "Grade many answers with a scorer",
    ),
    ("/score/group", endpoints.score_group, openapi.GROUP, "Grade one prompt's group"),
    (
        "/score/{scorer}/group",
        endpoints.score_group,
        openapi.GROUP,
        "Grade one prompt's group with a scorer",
    ),
    ("/score/{scorer}", endpoints.score_one, openapi.SCORE, "Grade one answer with a scorer"),
    ("/get_reward", endpoints.get_reward, openapi.OPENRLHF, "OpenRLHF --remote_rm_url"),
]
"""`(path, endpoint, OpenAPI operation, summary)` of the POST routes that grade."""

STATUS: list[tuple[str, Callable[..., Awaitable[Response]], str]] = [
    ("/livez", endpoints.livez, "The event loop answers"),
    ("/v1/ping", endpoints.ping, 'SandboxFusion\'s liveness check: "pong"'),
    ("/readyz", endpoints.readiness, "The grading pool is warm and alive"),
    ("/health", endpoints.readiness, "Alias of /readyz, for deployments of the older service"),
    ("/metrics", endpoints.prometheus, "Prometheus metrics"),
    ("/scorers", endpoints.scorers, "The scorers this service knows"),
]
"""`(path, endpoint, summary)` of the GET routes: FastAPI's, which describe themselves."""


class _PlainRoute(Route):
    """A Starlette route that, like FastAPI's, names itself in the scope (metrics read it)."""

    def matches(self, scope: Scope) -> tuple[Match, Scope]:
        match, child_scope = super().matches(scope)
        if match is not Match.NONE:
            child_scope["route"] = self
        return match, child_scope


@contextlib.asynccontextmanager
async def _lifespan(app: FastAPI) -> AsyncIterator[None]:
    engine: ScoringEngine = app.state.engine
    await engine.start()
    try:
        yield
    finally:
        await engine.close()
        app.state.body_parser.close()


def _counted_engine(settings: Settings, metrics: ServiceMetrics) -> ScoringEngine:
    """The grading engine, its gradings and restarts counted and its gauges read by `metrics`."""
    engine = ScoringEngine(
        settings,
        on_graded=metrics.record,
        on_restart=lambda cause: metrics.worker_restarts.labels(cause).inc(),
        on_spare=lambda event: metrics.spare_workers.labels(event).inc(),
    )
    metrics.watch(
        in_flight=lambda: engine.in_flight,
        queued=lambda: engine.pool.queued if engine.pool else 0,
        alive=lambda: engine.pool.alive if engine.pool else 0,
        spares_alive=lambda: engine.pool.spares_alive if engine.pool else 0,
        ready=lambda: float(engine.ready),
    )
    return engine


def create_app(settings: Settings | None = None) -> FastAPI:
    """The FastAPI application; the grading engine starts and stops with it."""
    settings = settings or Settings()
    metrics = ServiceMetrics()
    engine = _counted_engine(settings, metrics)
    app = FastAPI(
        title="reward-service",
        version=__version__,
        summary="Grades LLM answers for RL: SLIME remote_rm compatible.",
        lifespan=_lifespan,
        exception_handlers={RewardServiceError: endpoints.service_error},
    )
    app.state.engine = engine
    app.state.settings = settings
    app.state.metrics = metrics
    app.state.admission = Admission(settings.max_queue, settings.max_pending_bytes)
    app.state.body_parser = BodyParser(settings.max_body_containers, settings.worker_nice)
    app.state.token = settings.api_token.get_secret_value().encode() if settings.api_token else None
    app.add_middleware(ServiceMiddleware, settings=settings, metrics=metrics)

    app.post("/run_code", summary="SandboxFusion's /run_code", openapi_extra=openapi.RUN_CODE)(
        endpoints.run_code
    )
    nemo_gym.check_settings(settings, engine.registry)
    plain = [*SCORING, *nemo_gym.ROUTES]
    app.router.routes += [_PlainRoute(path, end, methods=["POST"]) for path, end, _, _ in plain]
    openapi.describe(
        app,
        [(path, spec, summary) for path, _, spec, summary in SCORING],
        lambda: openapi.option_parameters(
            settings.default_scorer, engine.registry.scorer_class(settings.default_scorer).options
        ),
        [(path, spec, summary) for path, _, spec, summary in nemo_gym.ROUTES],
    )
    for path, endpoint, summary in STATUS:
        # a route's name is in its operationId, the name generated clients call it by
        name = "_readiness" if endpoint is endpoints.readiness else endpoint.__name__
        app.add_api_route(path, endpoint, methods=["GET"], summary=summary, name=name)
    return app
