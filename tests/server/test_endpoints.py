"""Endpoints run alone, in-process, on a bare Starlette app holding the state `create_app` gives.

No grading pool starts: each request here is answered or refused before a
grading would be dispatched, so the engine is built and never started.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from reward_service.errors import RewardServiceError
from reward_service.grading.engine import ScoringEngine
from reward_service.server import endpoints
from reward_service.server.admission import Admission
from reward_service.server.bodies import BodyParser
from reward_service.server.metrics import ServiceMetrics
from reward_service.settings import Settings

TOKEN = "s3cret-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
CAP = 1024


async def _echo(request: Request) -> Response:
    """What `admitted` read, and what the request holds while it is inside the block."""
    admission: Admission = request.app.state.admission
    takes_options = request.query_params.get("ignore") is None
    scorer = request.path_params.get("scorer")
    async with endpoints.admitted(request, scorer, takes_options=takes_options) as intake:
        held = {"active": admission.active, "bytes": admission.held_bytes}
        return JSONResponse({"body": intake.body, "options": dict(intake.options), "held": held})


def _app(*, max_requests: int = 4, token: str | None = TOKEN, **settings: Any) -> Starlette:
    """A bare app with one echo route and the endpoints under test, refusals handled as served."""
    routes = [
        Route("/echo", _echo, methods=["POST"]),
        Route("/echo/{scorer}", _echo, methods=["POST"]),
        Route("/score/batch", endpoints.score_many, methods=["POST"]),
        Route("/get_reward", endpoints.get_reward, methods=["POST"]),
    ]
    app = Starlette(routes=routes, exception_handlers={RewardServiceError: endpoints.service_error})
    app.state.settings = Settings(workers=1, max_body_bytes=CAP, max_pending_bytes=CAP, **settings)
    app.state.engine = ScoringEngine(app.state.settings)
    app.state.metrics = ServiceMetrics()
    app.state.admission = Admission(max_requests, CAP)
    app.state.token = token.encode() if token else None
    app.state.body_parser = BodyParser(app.state.settings.max_body_containers)
    return app


def _client(app: Starlette) -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://test")


def _idle(app: Starlette) -> bool:
    admission: Admission = app.state.admission
    return (admission.active, admission.held_bytes) == (0, 0)


async def test_admitted_reads_the_body_and_options_holding_its_slot_until_the_block_ends() -> None:
    """Inside the block the request holds one slot and its body's bytes; after it, nothing."""
    app = _app()
    async with _client(app) as client:
        response = await client.post(
            "/echo/math_verify?extraction=any", content=b'{"response": "x"}', headers=AUTH
        )
    assert response.status_code == 200, response.text
    assert response.json() == {
        "body": {"response": "x"},
        "options": {"extraction": "any"},
        "held": {"active": 1, "bytes": 17},
    }
    assert _idle(app)


def _unknown_scorer_too_large_body(path: str = "/echo/nonesuch") -> tuple[str, bytes]:
    return path, b'{"prompt": "' + b"x" * CAP + b'"}'


@pytest.mark.parametrize(
    ("app_args", "headers", "status", "error"),
    [
        ({"max_requests": 0}, {}, 401, "unauthorized"),
        ({"max_requests": 0}, AUTH, 503, "0 requests in progress; retry shortly"),
        ({}, AUTH, 404, "unknown scorer"),
    ],
    ids=["token-first", "admission-second", "url-before-body"],
)
async def test_admitted_refuses_in_order_token_admission_url_body(
    app_args: dict[str, Any], headers: dict[str, str], status: int, error: str
) -> None:
    """A request wrong in every way gets the first refusal: 401, then 503, then the URL's 404."""
    app = _app(**app_args)
    path, body = _unknown_scorer_too_large_body()
    async with _client(app) as client:
        response = await client.post(path, content=body, headers=headers)
    assert response.status_code == status
    assert response.json()["error"].startswith(error)
    assert ("retry-after" in response.headers) == (status == 503)
    assert _idle(app)


@pytest.mark.parametrize(
    ("path", "body", "status", "error"),
    [
        ("/echo?nonesuch=1", b"{}", 400, "bad URL query: "),
        ("/echo", b"x" * (CAP + 1), 413, f"body of {CAP + 1} bytes is over the {CAP}-byte cap"),
        ("/echo", b"[1, 2]", 400, "body must be a JSON object, not list"),
        ("/echo", b"{", 400, "body is not valid JSON: "),
    ],
    ids=["bad-option", "over-the-cap", "not-an-object", "not-json"],
)
async def test_admitted_refuses_a_bad_url_or_body(
    path: str, body: bytes, status: int, error: str
) -> None:
    """The URL's options and the body are checked, and what the request held is released."""
    app = _app()
    async with _client(app) as client:
        response = await client.post(path, content=body, headers=AUTH)
    assert (response.status_code, response.json()["error"][: len(error)]) == (status, error)
    assert _idle(app)


async def test_admitted_ignores_the_query_of_a_route_without_options() -> None:
    """With `takes_options` false, a query no scorer takes is not read (SandboxFusion's route)."""
    async with _client(_app()) as client:
        response = await client.post("/echo?ignore=1&nonesuch=1", content=b"{}", headers=AUTH)
    assert (response.status_code, response.json()["options"]) == (200, {})


async def test_admitted_times_out_a_body_that_does_not_arrive_and_closes() -> None:
    """A body still incomplete at `body_timeout_s` gets 408 and `Connection: close`."""

    async def dripping() -> AsyncIterator[bytes]:
        yield b'{"response": '
        await asyncio.sleep(5)
        yield b'"x"}'

    app = _app(body_timeout_s=0.05)
    async with _client(app) as client:
        response = await client.post("/echo", content=dripping(), headers=AUTH)
    assert (response.status_code, response.headers["connection"]) == (408, "close")
    assert _idle(app)


async def test_a_refusal_is_counted_by_its_reason() -> None:
    """`service_error` counts each refusal under its error's class name."""
    app = _app()
    async with _client(app) as client:
        await client.post("/echo", content=b"{}")
    metrics: ServiceMetrics = app.state.metrics
    counted = metrics.registry.get_sample_value(
        "reward_rejected_requests_total", {"reason": "Unauthorized"}
    )
    assert counted == 1


@pytest.mark.parametrize(
    ("path", "body", "error"),
    [
        ("/score/batch", {"items": [{}, {}, {}]}, "batch of 3 items is over the cap of 2"),
        ("/get_reward", {"query": ["a", "b", "c"]}, "3 queries is over the cap of 2"),
    ],
)
async def test_batches_past_max_batch_items_get_413(
    path: str, body: dict[str, Any], error: str
) -> None:
    """Both batch endpoints refuse more than `max_batch_items` answers before any grading."""
    async with _client(_app(token=None, max_batch_items=2)) as client:
        response = await client.post(path, json=body)
    assert (response.status_code, response.json()) == (413, {"error": error})
