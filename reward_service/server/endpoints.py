"""The endpoints: validate, dispatch to the engine, map outcomes to HTTP.

Each is a module-level function of the request, as Starlette's are, and
reads what it needs from `request.app.state`, which `create_app` fills:
`engine` (`ScoringEngine`), `settings`, `metrics` (`ServiceMetrics`),
`admission` (`Admission`), `body_parser` (`bodies.BodyParser`) and `token`
(the API token's bytes, or None). So each can be read, and run in a test,
with no other endpoint beside it.

Every endpoint that reads a body starts with `admitted`: the token checked,
a slot admitted, the URL's scorer options checked, the body read. An
error's status comes from `reward_service.server.error_status`.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import json
from collections.abc import AsyncIterator, Awaitable, Mapping
from typing import Any, NamedTuple, TypeVar

import orjson
from starlette.requests import Request
from starlette.responses import Response

from reward_service.contracts.group import group_from_json
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
from reward_service.grading.engine import ScoringEngine
from reward_service.grading.groups import grade_group
from reward_service.scorers.base import JSON, NO_OPTIONS, ScorerBase
from reward_service.server.admission import Admission
from reward_service.server.bodies import read_object
from reward_service.server.error_status import status_of
from reward_service.server.metrics import CONTENT_TYPE_LATEST, ServiceMetrics
from reward_service.settings import Settings

T = TypeVar("T")
_TRUE = {"1", "true", "yes", "on"}
_DETAIL = "detail"
"""The query parameter that asks for the detail object; every other one is a scorer option."""


def json_answer(
    content: Any, status_code: int = 200, headers: Mapping[str, str] | None = None
) -> Response:
    """`content` as a JSON response (exact integers and lone surrogates from labels kept)."""
    try:
        data = orjson.dumps(content)
    except orjson.JSONEncodeError:  # an integer past 64 bits or a lone surrogate, from a label
        data = json.dumps(content).encode()
    return Response(data, status_code, headers=headers, media_type="application/json")


async def service_error(request: Request, exc: RewardServiceError) -> Response:
    """The app's handler for `RewardServiceError`: its status, its message, and a count."""
    metrics: ServiceMetrics = request.app.state.metrics
    metrics.rejected.labels(type(exc).__name__).inc()
    headers: dict[str, str] = {}
    if isinstance(exc, Overloaded):
        headers["Retry-After"] = str(exc.retry_after_s)
    if isinstance(exc, RequestTimeout):
        headers["Connection"] = "close"  # the rest of the body may still be on its way
    return json_answer({"error": str(exc)}, status_of(exc), headers)


def authorize(request: Request) -> None:
    """With an API token set, the request must carry it (header or `/t/<token>/`)."""
    token: bytes | None = request.app.state.token
    if token is None:
        return
    given = getattr(request.state, "path_token", None)
    if given is None:
        scheme, _, credentials = request.headers.get("authorization", "").partition(" ")
        given = credentials.strip() if scheme.lower() == "bearer" else ""
    if not hmac.compare_digest(given.encode(), token):
        raise Unauthorized()


class Admitted(NamedTuple):
    """What `admitted` read: the body as a JSON object and the URL's scorer options."""

    body: dict[str, Any]
    options: Mapping[str, JSON]


@contextlib.asynccontextmanager
async def admitted(
    request: Request, scorer: str | None = None, *, takes_options: bool = True
) -> AsyncIterator[Admitted]:
    """Authorise, admit, check the URL's options for `scorer`'s route, read the body.

    The request holds its admission slot and body bytes until the block
    ends. The order is the refusals' precedence: 401, then 503, then 404 or
    400 for the URL, then the body's 413, 408 or 400. With `takes_options`
    false the query is not read at all (SandboxFusion's `/run_code`).
    """
    authorize(request)
    admission: Admission = request.app.state.admission
    with admission.admit() as claim:
        options = _route_options(request, scorer) if takes_options else NO_OPTIONS
        state = request.app.state
        body = await read_object(request, claim, state.settings, state.body_parser)
        yield Admitted(body, options)


async def unless_gone(request: Request, grading: Awaitable[T]) -> T:
    """`grading`'s result, unless the client hangs up first: then the grading is cancelled
    (its queued answers dropped, its running ones stopped: `grading.pool`) and `ClientGone`
    raised, so no one's abandoned work keeps a worker busy. verl's sandbox client gives up on
    a run after 30 s and moves on; without this the service ran on what no one would read."""
    work = asyncio.ensure_future(grading)
    hangup = asyncio.ensure_future(_hung_up(request))
    try:
        await asyncio.wait({work, hangup}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        hangup.cancel()
        if not work.done():
            work.cancel()
            await asyncio.gather(work, return_exceptions=True)
    if work.cancelled():
        raise ClientGone("the client hung up before its answer: its grading was dropped")
    return work.result()


async def _hung_up(request: Request) -> None:
    """Returns once the client has closed its connection (its body was read before)."""
    while (await request.receive())["type"] != "http.disconnect":
        pass


def _route_options(request: Request, scorer: str | None) -> Mapping[str, JSON]:
    """The URL's scorer options, checked against the route's scorer (404 if unknown)."""
    engine: ScoringEngine = request.app.state.engine
    if scorer is not None:
        engine.registry.require(scorer)
    if not request.scope["query_string"]:
        return NO_OPTIONS
    route_scorer = scorer or request.app.state.settings.default_scorer
    return _query_options(request, engine.registry.scorer_class(route_scorer))


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


def _wants_detail(request: Request) -> bool:
    return request.query_params.get(_DETAIL, "").lower() in _TRUE


def _within_batch_cap(request: Request, count: int, described: str) -> None:
    """Refuse (413) a batch of more than `max_batch_items`; `described` names it, `{}` its count."""
    cap: int = request.app.state.settings.max_batch_items
    if count > cap:
        raise PayloadTooLarge(f"{described.format(count)} is over the cap of {cap}")


async def score_one(request: Request) -> Response:
    """`POST /score[/{scorer}]`: SLIME's body; the reward, or the detail object."""
    engine: ScoringEngine = request.app.state.engine
    scorer = request.path_params.get("scorer")
    async with admitted(request, scorer) as intake:
        grading = engine.grade(sample_from_json(intake.body), scorer, intake.options)
        graded = await unless_gone(request, grading)
    return json_answer(graded.detail() if _wants_detail(request) else graded.reward)


async def score_many(request: Request) -> Response:
    """`POST /score[/{scorer}]/batch`: `{"items": [...]}`; the rewards in order.

    An item that is not an object is graded as status `error` (None here).
    """
    engine: ScoringEngine = request.app.state.engine
    scorer = request.path_params.get("scorer")
    async with admitted(request, scorer) as intake:
        items = intake.body.get("items")
        if not isinstance(items, list):
            raise BadRequest('batch body must be {"items": [{"prompt", "response", "label"}, ...]}')
        _within_batch_cap(request, len(items), "batch of {} items")
        samples = [sample_from_json(item) if isinstance(item, dict) else None for item in items]
        graded = await unless_gone(request, engine.grade_many(samples, scorer, intake.options))
    answer: dict[str, Any] = {"rewards": [g.reward for g in graded]}
    if _wants_detail(request):
        answer["details"] = [g.detail() for g in graded]
    return json_answer(answer)


async def score_group(request: Request) -> Response:
    """`POST /score[/{scorer}]/group`: one prompt's answers and one label; the rewards and
    loss multipliers in order, and the group's facts (docs/groups.md)."""
    engine: ScoringEngine = request.app.state.engine
    scorer = request.path_params.get("scorer")
    async with admitted(request, scorer) as intake:
        group = group_from_json(intake.body, request.app.state.settings.max_batch_items)
        graded = await grade_group(
            engine, group.samples, scorer=scorer, options=intake.options, ks=group.ks
        )
    metrics: ServiceMetrics = request.app.state.metrics
    metrics.record_group(graded.graded[0].scorer, graded.facts)
    answer: dict[str, Any] = {
        "rewards": graded.rewards,
        "loss_multipliers": [g.score.status.loss_multiplier for g in graded.graded],
        "group": {**graded.facts.as_json(), "gradings": graded.gradings},
    }
    if _wants_detail(request):
        answer["details"] = [
            {**g.detail(), "reward": reward}
            for g, reward in zip(graded.graded, graded.rewards, strict=True)
        ]
    return json_answer(answer)


async def get_reward(request: Request) -> Response:
    """`POST /get_reward`: OpenRLHF's `--remote_rm_url` body and answer."""
    engine: ScoringEngine = request.app.state.engine
    async with admitted(request) as intake:
        queries = read_openrlhf(intake.body)
        _within_batch_cap(request, len(queries.samples), "{} queries")
        graded = await unless_gone(
            request, engine.grade_many(queries.samples, None, intake.options)
        )
    return json_answer(openrlhf_answer([g.score for g in graded], queries.unlocated))


# The endpoints below are FastAPI routes, whose docstrings would become their OpenAPI
# descriptions: comments say what they do.


# `POST /run_code`: SandboxFusion's body and answer; the query is ignored.
async def run_code(request: Request) -> Response:
    engine: ScoringEngine = request.app.state.engine
    async with admitted(request, takes_options=False) as intake:
        graded = await unless_gone(request, engine.grade(read_run_code(intake.body)))
    return json_answer(run_code_answer(graded.score))


async def livez() -> Response:
    return json_answer({"status": "alive"})


# `GET /v1/ping`: SandboxFusion's liveness check, answered as it answers ("pong", JSON).
async def ping() -> Response:
    return json_answer("pong")


# `/readyz` and `/health`: 200 once the grading pool is warm and alive, else 503.
async def readiness(request: Request) -> Response:
    if request.app.state.engine.ready:
        return json_answer({"status": "ready", "workers": request.app.state.settings.workers})
    return json_answer({"status": "not ready"}, 503)


async def prometheus(request: Request) -> Response:
    settings: Settings = request.app.state.settings
    if settings.metrics_need_token:
        authorize(request)
    metrics: ServiceMetrics = request.app.state.metrics
    return Response(metrics.exposition(), media_type=CONTENT_TYPE_LATEST)


async def scorers(request: Request) -> Response:
    engine: ScoringEngine = request.app.state.engine
    listing: dict[str, JSON] = {
        "default": request.app.state.settings.default_scorer,
        "scorers": engine.registry.names(),
        "composites": {
            name: list(definition.components)
            for name, definition in engine.registry.composites().items()
        },
    }
    if engine.checks:
        listing["checks"] = {name: check.report() for name, check in engine.checks.items()}
    return json_answer(listing)
