"""NeMo Gym's resources-server routes: `/verify`, `/aggregate_metrics`, `/seed_session`.

NeMo Gym builds a resources server's URL from its `host` and `port` alone and posts
to `/verify` there (`/ng-rollout/<rollout id>/verify` with its observability on), so
one port serves one environment: the root routes serve the environment
`REWARD_NEMO_GYM_ENVIRONMENT` names. Every environment is also served at
`/nemo_gym/<environment>/...`, for clients that take a URL (a NeMo-RL environment,
a proxy, a test). What each environment reads and answers is
`reward_service.contracts.nemo_gym`'s; grading is the engine's, as for `/score`
(admission, deadlines, fallbacks, the URL's scorer options), and an error's status
is `error_status`'s.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Container
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from reward_service.contracts.nemo_gym import (
    ENVIRONMENTS,
    Environment,
    aggregate_rows,
    read_verify,
    verify_answer,
)
from reward_service.errors import InvalidSetting, PayloadTooLarge, UnknownEnvironment
from reward_service.grading.engine import Graded, ScoringEngine
from reward_service.grading.rollout_metrics import aggregate, cost
from reward_service.server import openapi
from reward_service.server.endpoints import admitted, authorize, json_answer, unless_gone
from reward_service.settings import Settings

ROOT_SETTING = "REWARD_NEMO_GYM_ENVIRONMENT"
ROLLOUT_PREFIX = "ng-rollout"
MAX_AGGREGATE_STEPS = 20_000_000
"""Rollouts times the rollouts of the largest task (`rollout_metrics.cost`) one
`/aggregate_metrics` may ask for: a few seconds of a thread. 500 tasks of 64 rollouts
take 2 million."""


def check_settings(settings: Settings, registry: Container[str]) -> None:
    """`InvalidSetting` at start-up for an unknown environment or scorer in the settings."""
    named = [settings.nemo_gym_environment] if settings.nemo_gym_environment else []
    for name in [*named, *settings.nemo_gym_scorers]:
        if name not in ENVIRONMENTS:
            raise InvalidSetting(f"{ROOT_SETTING} or REWARD_NEMO_GYM_SCORERS: {_unknown(name)}")
    for name, scorer in settings.nemo_gym_scorers.items():
        if scorer not in registry:
            raise InvalidSetting(f"REWARD_NEMO_GYM_SCORERS: {name}: unknown scorer {scorer!r}")


def _unknown(name: str) -> str:
    return f"unknown NeMo Gym environment {name!r}; environments: {', '.join(ENVIRONMENTS)}"


def environment_of(request: Request) -> tuple[Environment, str]:
    """The route's environment (its path's, else the root one) and the scorer it grades with;
    the token is checked first, so a request without it learns nothing of the environments."""
    authorize(request)
    settings: Settings = request.app.state.settings
    name = request.path_params.get("environment", settings.nemo_gym_environment)
    if name is None:
        raise UnknownEnvironment(
            f"no NeMo Gym environment for the root paths: set {ROOT_SETTING}, or post to "
            f"/nemo_gym/<environment>/...; environments: {', '.join(ENVIRONMENTS)}"
        )
    environment = ENVIRONMENTS.get(name)
    if environment is None:
        raise UnknownEnvironment(_unknown(name))
    return environment, settings.nemo_gym_scorers.get(name, environment.scorer)


async def verify(request: Request) -> Response:
    """`POST /verify`: one rollout graded; the request with its reward and fields."""
    engine: ScoringEngine = request.app.state.engine
    environment, scorer = environment_of(request)
    async with admitted(request, scorer) as intake:
        task = read_verify(environment, intake.body, scorer)
        if task.settled is None:
            graded = await unless_gone(request, engine.grade(task.sample, scorer, intake.options))
        else:
            graded = Graded(task.settled, task.sample.scorer or scorer, 0.0)
    answer = verify_answer(environment, intake.body, task, graded.score, graded.detail())
    return json_answer(answer)


async def aggregate_metrics(request: Request) -> Response:
    """`POST /aggregate_metrics`: pass@k, majority@k and the rest over verify answers."""
    environment, _ = environment_of(request)
    async with admitted(request, takes_options=False) as intake:
        rows = aggregate_rows(intake.body)
        steps = cost(rows)
        if steps > MAX_AGGREGATE_STEPS:
            raise PayloadTooLarge(
                f"{len(rows)} rollouts times {steps // max(len(rows), 1)} in the largest task is "
                f"over the cap of {MAX_AGGREGATE_STEPS}: aggregate fewer at a time"
            )
        # Seconds of pure Python for the largest bodies: off the event loop.
        metrics = await asyncio.to_thread(
            aggregate, rows, environment.scores, environment.answer_key
        )
    return json_answer(metrics)


async def seed_session(request: Request) -> Response:
    """`POST /seed_session`: nothing to seed, grading holds no state per rollout: `{}`."""
    environment_of(request)
    async with admitted(request, takes_options=False):
        pass
    return json_answer({})


Endpoint = Callable[[Request], Awaitable[Response]]

_ROUTES: list[tuple[str, Endpoint, dict[str, Any], str]] = [
    ("verify", verify, openapi.NEMO_GYM_VERIFY, "NeMo Gym: grade one rollout"),
    (
        "aggregate_metrics",
        aggregate_metrics,
        openapi.NEMO_GYM_METRICS,
        "NeMo Gym: pass@k and majority@k over rollouts",
    ),
    ("seed_session", seed_session, openapi.NEMO_GYM_SEED, "NeMo Gym: start a rollout"),
]
_ENVIRONMENT: dict[str, Any] = {
    "name": "environment",
    "in": "path",
    "required": True,
    "schema": {"enum": list(ENVIRONMENTS)},
    "description": "The NeMo Gym resources server this route stands in for.",
}
_ROLLOUT_ID: dict[str, Any] = {
    "name": "rollout_id",
    "in": "path",
    "required": True,
    "schema": {"type": "string"},
    "description": "NeMo Gym's rollout id, which it puts in front of a resources server's "
    "paths when its observability is on.",
}
ROUTES: list[tuple[str, Endpoint, dict[str, Any], str]] = [
    *(
        (f"/nemo_gym/{{environment}}/{name}", end, {**spec, "parameters": [_ENVIRONMENT]}, summary)
        for name, end, spec, summary in _ROUTES
    ),
    *(
        (f"/{name}", end, spec, f"{summary} ({ROOT_SETTING})")
        for name, end, spec, summary in _ROUTES
    ),
    *(
        (
            f"/{ROLLOUT_PREFIX}/{{rollout_id}}/{name}",
            end,
            {**spec, "parameters": [_ROLLOUT_ID]},
            f"{summary} ({ROOT_SETTING}, NeMo Gym's rollout prefix)",
        )
        for name, end, spec, summary in _ROUTES
    ),
]
"""`(path, endpoint, OpenAPI operation, summary)` of NeMo Gym's POST routes: by environment,
at the root, and at the root behind NeMo Gym's `/ng-rollout/<id>` prefix."""
