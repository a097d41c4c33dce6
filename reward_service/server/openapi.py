"""OpenAPI descriptions of the endpoints whose bodies the app reads itself.

The app reads request bodies leniently (SLIME must never meet a 422), so
FastAPI cannot infer their schemas; these say what clients may send and
what they get back, for /docs, schemathesis and client generators.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from fastapi import FastAPI


def _json(schema: dict[str, Any]) -> dict[str, Any]:
    return {"application/json": {"schema": schema}}


BODY_TIMEOUT = "The body did not arrive within `body_timeout_s`; the connection is closed."
OVERLOADED = (
    "Overloaded (requests or body bytes in progress past their bounds) or shutting down; "
    "retry after `Retry-After` s."
)
SAMPLE: dict[str, Any] = {
    "type": "object",
    "properties": {
        "prompt": {"description": "A string or a list of chat messages; passed to the scorer."},
        "response": {"type": "string", "description": "The generated answer, as decoded."},
        "label": {
            "description": "The gold answer, any JSON value. An object with `scorer` picks a "
            "scorer for this sample, `answer`/`ground_truth` being the gold."
        },
    },
}
DETAIL: dict[str, Any] = {
    "type": "object",
    "properties": {
        "reward": {"type": "number"},
        "status": {"enum": ["ok", "wrong", "no_answer", "timeout", "error"]},
        "scorer": {"type": "string"},
        "elapsed_ms": {"type": "number"},
    },
    "required": ["reward", "status", "scorer", "elapsed_ms"],
}
OPTIONS: dict[str, Any] = {
    "name": "options",
    "in": "query",
    "required": False,
    "style": "form",
    "explode": True,
    "schema": {"type": "object", "additionalProperties": {"type": "string"}},
    "description": "Every query parameter but `detail` is an option of the route's scorer, "
    "e.g. `extraction=any` for `math_verify`. A label object's keys override them; they "
    "override the deployment's `scorer_options`. An option or value the scorer does not "
    "take gets 400, naming the valid ones.",
}
BAD_OPTION = "a query option the route's scorer does not take (the message names the valid ones)"
SCORE: dict[str, Any] = {
    "parameters": [
        {
            "name": "detail",
            "in": "query",
            "required": False,
            "schema": {"type": "boolean", "default": False},
            "description": "Answer an object (reward, status, scorer, elapsed_ms, ...) "
            "instead of a bare number; for SLIME use with `--reward-key reward`.",
        },
        OPTIONS,
    ],
    "requestBody": {
        "required": True,
        "content": _json(SAMPLE),
    },
    "responses": {
        "200": {
            "description": "The reward (a bare number), or the detail object.",
            "content": _json({"oneOf": [{"type": "number"}, DETAIL]}),
        },
        "400": {"description": f"The body is not a JSON object, or {BAD_OPTION}."},
        "404": {"description": "Unknown scorer; the message lists the known ones."},
        "408": {"description": BODY_TIMEOUT},
        "413": {"description": "The body is over the size cap."},
        "503": {"description": OVERLOADED},
    },
}


BATCH: dict[str, Any] = {
    "parameters": SCORE["parameters"],
    "requestBody": {
        "required": True,
        "content": _json(
            {
                "type": "object",
                "properties": {"items": {"type": "array", "items": SAMPLE}},
                "required": ["items"],
            }
        ),
    },
    "responses": {
        "200": {
            "description": "`rewards` in input order; `details` too with `?detail=1`. An item "
            "that is not an object gets the fallback reward and status `error`.",
            "content": _json(
                {
                    "type": "object",
                    "properties": {
                        "rewards": {"type": "array", "items": {"type": "number"}},
                        "details": {"type": "array", "items": DETAIL},
                    },
                    "required": ["rewards"],
                }
            ),
        },
        "400": {"description": f'The body is not `{{"items": [...]}}`, or {BAD_OPTION}.'},
        "408": {"description": BODY_TIMEOUT},
        "413": {"description": "The body or the number of items is over its cap."},
        "503": {"description": OVERLOADED},
    },
}
OPENRLHF: dict[str, Any] = {
    "parameters": [OPTIONS],
    "requestBody": {
        "required": True,
        "content": _json(
            {
                "type": "object",
                "properties": {
                    "query": {"type": "array", "items": {"type": "string"}},
                    "prompts": {"type": "array", "items": {"type": "string"}},
                    "labels": {"type": "array"},
                },
                "required": ["query"],
            }
        ),
    },
    "responses": {
        "200": {"description": '`{"rewards", "scores", "extra_logs"}` in input order.'},
        "400": {
            "description": "`query`, `prompts` and `labels` are not lists of one length, or "
            f"{BAD_OPTION}."
        },
        "408": {"description": BODY_TIMEOUT},
        "413": {"description": "The body or the number of queries is over its cap."},
        "503": {"description": OVERLOADED},
    },
}


def describe(app: FastAPI, routes: Sequence[tuple[str, dict[str, Any], str]]) -> None:
    """Add `(path, spec, summary)` POST operations to the schema FastAPI generates."""
    generate = app.openapi

    def schema() -> dict[str, Any]:
        if app.openapi_schema is None:
            document = generate()
            for path, spec, summary in routes:
                parameters = [
                    {"name": name, "in": "path", "required": True, "schema": {"type": "string"}}
                    for name in ("scorer",)
                    if "{" + name + "}" in path
                ] + spec.get("parameters", [])
                operation = {**spec, "summary": summary, "parameters": parameters}
                document["paths"].setdefault(path, {})["post"] = operation
            app.openapi_schema = document
        return app.openapi_schema

    app.openapi = schema  # type: ignore[method-assign]
