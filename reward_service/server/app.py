"""The HTTP layer: validate, dispatch to the engine, map outcomes to HTTP.

An error's status comes from `reward_service.server.error_status`, the one
mapping of the error tree to status codes. Grading happens in
`reward_service.grading.engine`; nothing here imports a grader.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import json
from collections.abc import AsyncIterator, Iterator, Mapping
from typing import Any

import orjson
from fastapi import FastAPI, Request
from fastapi.responses import Response
from starlette.requests import ClientDisconnect
from starlette.routing import Match, Route
from starlette.types import Scope

from reward_service import __version__
from reward_service.contracts.openrlhf import openrlhf_answer, read_openrlhf
from reward_service.contracts.sandbox_fusion import read_run_code, run_code_answer
from reward_service.contracts.slime import sample_from_json
from reward_service.errors import (
    BadRequest,
    ClientGone,
    Overloaded,
    PayloadTooLarge,
    RequestTimeout,
    RewardServiceError,
    Unauthorized,
)
from reward_service.grading.engine import Graded, ScoringEngine
from reward_service.grading.sample import Sample
from reward_service.scorers.base import JSON, NO_OPTIONS, ScorerBase
from reward_service.server import openapi
from reward_service.server.error_status import status_of
from reward_service.server.json_body import read_json
from reward_service.server.metrics import CONTENT_TYPE_LATEST, ServiceMetrics
from reward_service.server.middleware import ServiceMiddleware
from reward_service.settings import Settings

_TRUE = {"1", "true", "yes", "on"}
_DETAIL = "detail"
"""The query parameter that asks for the detail object; every other one is a scorer option."""


def _json(
    content: Any, status_code: int = 200, headers: Mapping[str, str] | None = None
) -> Response:
    try:
        data = orjson.dumps(content)
    except orjson.JSONEncodeError:  # an integer past 64 bits or a lone surrogate, from a label
        data = json.dumps(content).encode()
    return Response(data, status_code, headers=headers, media_type="application/json")


class _Admission:
    """Bounds the requests in progress and the body bytes they hold.

    A request past `max_requests` is refused before its body is read; one
    whose declared Content-Length (or, for a chunked body, whose bytes read
    so far) would take the bytes held past `max_bytes` is refused as soon as
    that is known. Both get 503 with Retry-After; what a request held is
    released when it ends, however it ends.
    """

    def __init__(self, max_requests: int, max_bytes: int) -> None:
        self.max_requests = max_requests
        self.max_bytes = max_bytes
        self.active = 0
        self.held_bytes = 0

    @contextlib.contextmanager
    def admit(self) -> Iterator[_Claim]:
        if self.active >= self.max_requests:
            raise Overloaded(f"{self.active} requests in progress; retry shortly", retry_after_s=1)
        self.active += 1
        claim = _Claim(self)
        try:
            yield claim
        finally:
            self.active -= 1
            self.held_bytes -= claim.held


class _Claim:
    """One admitted request's share of the byte budget."""

    __slots__ = ("_admission", "held")

    def __init__(self, admission: _Admission) -> None:
        self._admission = admission
        self.held = 0

    def hold(self, size: int) -> None:
        """Hold `size` body bytes in all (never fewer than before), or refuse the request."""
        budget, extra = self._admission, size - self.held
        if extra <= 0:
            return
        if budget.held_bytes + extra > budget.max_bytes:
            raise Overloaded(
                f"{budget.held_bytes} body bytes held by requests in progress; retry shortly",
                retry_after_s=1,
            )
        budget.held_bytes += extra
        self.held = size


async def _read_body(request: Request, claim: _Claim, max_bytes: int) -> bytes:
    """The request body, its size checked against the cap and the budget before it is kept."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit():
        if int(declared) > max_bytes:
            raise PayloadTooLarge(f"body of {declared} bytes is over the {max_bytes}-byte cap")
        claim.hold(int(declared))
    chunks = []
    size = 0
    try:
        async for chunk in request.stream():
            size += len(chunk)
            if size > max_bytes:
                raise PayloadTooLarge(f"body is over the {max_bytes}-byte cap")
            claim.hold(size)
            chunks.append(chunk)
    except ClientDisconnect:
        raise ClientGone(f"client hung up after {size} bytes of its body") from None
    return b"".join(chunks)


async def _read_object(request: Request, claim: _Claim, settings: Settings) -> dict[str, Any]:
    """The request body as a JSON object, read within `body_timeout_s` in all.

    The deadline covers the whole body, not each read, so a client dripping
    a byte at a time cannot hold its admission slot longer than a stalled one.
    """
    try:
        raw = await asyncio.wait_for(
            _read_body(request, claim, settings.max_body_bytes), settings.body_timeout_s
        )
    except asyncio.TimeoutError:
        raise RequestTimeout(
            f"request body not received within {settings.body_timeout_s} s"
        ) from None
    try:
        body = read_json(raw)
    except ValueError as exc:
        raise BadRequest(f"body is not valid JSON: {exc}") from None
    if not isinstance(body, dict):
        raise BadRequest(f"body must be a JSON object, not {type(body).__name__}")
    return body


def _answer(graded: Graded, detail: bool) -> Response:
    return _json(graded.detail() if detail else graded.reward)


def _wants_detail(request: Request) -> bool:
    return request.query_params.get(_DETAIL, "").lower() in _TRUE


def _query_options(request: Request, scorer: type[ScorerBase]) -> Mapping[str, JSON]:
    """The scorer options in the URL's query (all but `detail`), each one `scorer` accepts.

    An option `scorer` does not read, a value it does not take or an option
    given twice is a misconfigured URL that no retry mends: 400, naming the
    valid options or values.
    """
    options: dict[str, JSON] = {}
    for name, value in request.query_params.multi_items():
        if name == _DETAIL:
            continue
        problem = scorer.option_problem(name, value)
        if problem is not None:
            raise BadRequest(f"bad URL query: {problem}")
        if name in options:
            raise BadRequest(f"bad URL query: option {name!r} given twice")
        options[name] = value
    return options


def _batch_samples(body: dict[str, Any], max_items: int) -> list[Sample | None]:
    """The batch's samples in order; None marks an item that is not an object."""
    items = body.get("items")
    if not isinstance(items, list):
        raise BadRequest('batch body must be {"items": [{"prompt", "response", "label"}, ...]}')
    if len(items) > max_items:
        raise PayloadTooLarge(f"batch of {len(items)} items is over the cap of {max_items}")
    return [sample_from_json(item) if isinstance(item, dict) else None for item in items]


class _PlainRoute(Route):
    """A Starlette route that, like FastAPI's, names itself in the scope (metrics read it)."""

    def matches(self, scope: Scope) -> tuple[Match, Scope]:
        match, child_scope = super().matches(scope)
        if match is not Match.NONE:
            child_scope["route"] = self
        return match, child_scope


def create_app(settings: Settings | None = None) -> FastAPI:
    """The FastAPI application; the grading engine starts and stops with it."""
    settings = settings or Settings()
    metrics = ServiceMetrics()
    engine = ScoringEngine(
        settings,
        on_graded=metrics.record,
        on_restart=lambda cause: metrics.worker_restarts.labels(cause).inc(),
    )
    metrics.watch(
        in_flight=lambda: engine.in_flight,
        queued=lambda: engine.pool.queued if engine.pool else 0,
        alive=lambda: engine.pool.alive if engine.pool else 0,
        ready=lambda: float(engine.ready),
    )
    token = settings.api_token.get_secret_value().encode() if settings.api_token else None

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        await engine.start()
        try:
            yield
        finally:
            await engine.close()

    app = FastAPI(
        title="reward-service",
        version=__version__,
        summary="Grades LLM answers for RL: SLIME remote_rm compatible.",
        lifespan=lifespan,
    )
    app.state.engine = engine
    app.state.settings = settings
    app.state.metrics = metrics
    app.add_middleware(ServiceMiddleware, settings=settings, metrics=metrics)

    @app.exception_handler(RewardServiceError)
    async def _service_error(request: Request, exc: RewardServiceError) -> Response:
        metrics.rejected.labels(type(exc).__name__).inc()
        headers: dict[str, str] = {}
        if isinstance(exc, Overloaded):
            headers["Retry-After"] = str(exc.retry_after_s)
        if isinstance(exc, RequestTimeout):
            headers["Connection"] = "close"  # the rest of the body may still be on its way
        return _json({"error": str(exc)}, status_of(exc), headers)

    def authorize(request: Request) -> None:
        """With an API token set, the request must carry it (header or `/t/<token>/`)."""
        if token is None:
            return
        given = getattr(request.state, "path_token", None)
        if given is None:
            scheme, _, credentials = request.headers.get("authorization", "").partition(" ")
            given = credentials.strip() if scheme.lower() == "bearer" else ""
        if not hmac.compare_digest(given.encode(), token):
            raise Unauthorized()

    admission = _Admission(settings.max_queue, settings.max_pending_bytes)

    def route_options(request: Request, scorer: str | None) -> Mapping[str, JSON]:
        """The URL's scorer options, checked against the route's scorer (404 if unknown)."""
        if scorer is not None:
            engine.registry.require(scorer)
        if not request.scope["query_string"]:
            return NO_OPTIONS
        route_scorer = scorer or settings.default_scorer
        return _query_options(request, engine.registry.scorer_class(route_scorer))

    async def _score(request: Request, scorer: str | None) -> Response:
        authorize(request)
        with admission.admit() as claim:
            options = route_options(request, scorer)
            sample = sample_from_json(await _read_object(request, claim, settings))
            graded = await engine.grade(sample, scorer, options)
        return _answer(graded, _wants_detail(request))

    async def _score_batch(request: Request, scorer: str | None) -> Response:
        authorize(request)
        with admission.admit() as claim:
            options = route_options(request, scorer)
            body = await _read_object(request, claim, settings)
            samples = _batch_samples(body, settings.max_batch_items)
            graded = await engine.grade_many(samples, scorer, options)
        answer: dict[str, Any] = {"rewards": [g.reward for g in graded]}
        if _wants_detail(request):
            answer["details"] = [g.detail() for g in graded]
        return _json(answer)

    async def score_one(request: Request) -> Response:
        return await _score(request, request.path_params.get("scorer"))

    async def score_many(request: Request) -> Response:
        return await _score_batch(request, request.path_params.get("scorer"))

    async def get_reward(request: Request) -> Response:
        authorize(request)
        with admission.admit() as claim:
            options = route_options(request, None)
            queries = read_openrlhf(await _read_object(request, claim, settings))
            if len(queries.samples) > settings.max_batch_items:
                raise PayloadTooLarge(
                    f"{len(queries.samples)} queries is over the cap of {settings.max_batch_items}"
                )
            graded = await engine.grade_many(queries.samples, None, options)
        return _json(openrlhf_answer([g.score for g in graded], queries.unlocated))

    async def run_code(request: Request) -> Response:
        authorize(request)
        with admission.admit() as claim:
            sample = read_run_code(await _read_object(request, claim, settings))
            graded = await engine.grade(sample)
        return _json(run_code_answer(graded.score))

    app.post("/run_code", summary="SandboxFusion's /run_code", openapi_extra=openapi.RUN_CODE)(
        run_code
    )

    # Plain Starlette routes: these endpoints read their bodies themselves, and
    # FastAPI's per-request dependency solving cost ~15% of the server's CPU per answer.
    scoring = [
        ("/score", score_one, openapi.SCORE, "Grade one answer (default scorer)"),
        ("/score/batch", score_many, openapi.BATCH, "Grade many answers (default scorer)"),
        ("/score/{scorer}/batch", score_many, openapi.BATCH, "Grade many answers with a scorer"),
        ("/score/{scorer}", score_one, openapi.SCORE, "Grade one answer with a scorer"),
        ("/get_reward", get_reward, openapi.OPENRLHF, "OpenRLHF --remote_rm_url"),
    ]
    for path, endpoint, _, _ in scoring:
        app.router.routes.append(_PlainRoute(path, endpoint, methods=["POST"]))
    openapi.describe(
        app,
        [(path, spec, summary) for path, _, spec, summary in scoring],
        lambda: openapi.option_parameters(
            settings.default_scorer, engine.registry.scorer_class(settings.default_scorer).options
        ),
    )

    @app.get("/livez", summary="The event loop answers")
    async def livez() -> Response:
        return _json({"status": "alive"})

    async def _readiness() -> Response:
        if engine.ready:
            return _json({"status": "ready", "workers": settings.workers})
        return _json({"status": "not ready"}, 503)

    app.get("/readyz", summary="The grading pool is warm and alive")(_readiness)
    app.get("/health", summary="Alias of /readyz, for deployments of the older service")(_readiness)

    @app.get("/metrics", summary="Prometheus metrics")
    async def prometheus(request: Request) -> Response:
        if settings.metrics_need_token:
            authorize(request)
        return Response(metrics.exposition(), media_type=CONTENT_TYPE_LATEST)

    @app.get("/scorers", summary="The scorers this service knows")
    async def scorers() -> Response:
        listing: dict[str, JSON] = {
            "default": settings.default_scorer,
            "scorers": engine.registry.names(),
        }
        if engine.checks:
            listing["checks"] = {name: check.report() for name, check in engine.checks.items()}
        return _json(listing)

    return app
