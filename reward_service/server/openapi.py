"""OpenAPI descriptions of the endpoints whose bodies the app reads itself.

The app reads request bodies leniently (SLIME must never meet a 422), so
FastAPI cannot infer their schemas; these say what clients may send and
what they get back, for /docs, schemathesis and client generators.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from fastapi import FastAPI

from reward_service.scorers.base import Status

_PATH_PARAMETER = re.compile(r"\{(\w+)\}")


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
        "status": {"enum": [status.value for status in Status]},
        "scorer": {"type": "string"},
        "elapsed_ms": {"type": "number"},
        "loss_multiplier": {
            "enum": [0.0, 1.0],
            "description": "1.0 when the reward is a verdict, 0.0 when it is a fallback "
            "(timeout, error, judge_failed): a trainer masks such samples.",
        },
    },
    "required": ["reward", "status", "scorer", "elapsed_ms", "loss_multiplier"],
}
BAD_OPTION = (
    "a query parameter other than `detail` that is not an option the route's scorer takes "
    "(the message names the valid options or values)"
)
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
_NUMBERS: dict[str, Any] = {"type": "array", "items": {"type": "number"}}
_MAYBE_NUMBER: dict[str, Any] = {"type": ["number", "null"]}
GROUP_FACTS: dict[str, Any] = {
    "type": "object",
    "description": "The group's facts (docs/groups.md): statistics over its verdicts only.",
    "properties": {
        "size": {"type": "integer"},
        "graded": {"type": "integer", "description": "Answers with a verdict: pass@k's n."},
        "masked": {"type": "integer", "description": "Answers whose reward is a fallback."},
        "correct": {"type": "integer", "description": "Verdicts of status ok: pass@k's c."},
        "mean": _MAYBE_NUMBER,
        "std": {**_MAYBE_NUMBER, "description": "With Bessel's correction (n - 1)."},
        "all_equal": {"type": "boolean", "description": "Every verdict earned the same."},
        "distinct_answers": {"type": "integer"},
        "majority_count": {"type": "integer"},
        "pass_at_k": {
            "type": "object",
            "additionalProperties": _MAYBE_NUMBER,
            "description": "Unbiased pass@k by k; null where k exceeds `graded`.",
        },
        "gradings": {"type": "integer", "description": "Distinct responses graded."},
    },
    "required": ["size", "graded", "masked", "correct", "all_equal", "pass_at_k", "gradings"],
}
GROUP: dict[str, Any] = {
    "parameters": SCORE["parameters"],
    "requestBody": {
        "required": True,
        "content": _json(
            {
                "type": "object",
                "properties": {
                    "prompt": SAMPLE["properties"]["prompt"],
                    "label": SAMPLE["properties"]["label"],
                    "responses": {"type": "array", "items": {"type": "string"}, "minItems": 1},
                    "k": {
                        "oneOf": [
                            {"type": "integer", "minimum": 1},
                            {"type": "array", "items": {"type": "integer", "minimum": 1}},
                        ],
                        "description": "The k of the pass@k estimates; default 1 and n.",
                    },
                },
                "required": ["responses"],
            }
        ),
    },
    "responses": {
        "200": {
            "description": "`rewards` and `loss_multipliers` in input order, the group's facts; "
            "`details` too with `?detail=1`.",
            "content": _json(
                {
                    "type": "object",
                    "properties": {
                        "rewards": _NUMBERS,
                        "loss_multipliers": _NUMBERS,
                        "group": GROUP_FACTS,
                        "details": {"type": "array", "items": DETAIL},
                    },
                    "required": ["rewards", "loss_multipliers", "group"],
                }
            ),
        },
        "400": {
            "description": "The body has no `responses` list, a `k` that is not positive "
            f"integers, or {BAD_OPTION}."
        },
        "404": {"description": "Unknown scorer; the message lists the known ones."},
        "408": {"description": BODY_TIMEOUT},
        "413": {"description": "The body or the number of responses is over its cap."},
        "503": {"description": OVERLOADED},
    },
}
OPENRLHF: dict[str, Any] = {
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


_ROLLOUT: dict[str, Any] = {
    "type": "object",
    "properties": {
        "responses_create_params": {
            "type": "object",
            "description": "The Responses-API request the policy model got; `input` is read "
            "for the question.",
            "properties": {"input": {"oneOf": [{"type": "string"}, {"type": "array"}]}},
            "required": ["input"],
        },
        "response": {
            "type": "object",
            "description": "The model's Responses-API response: the final assistant message's "
            "`output_text` is graded; reasoning items never are.",
            "properties": {"output": {"type": "array", "items": {"type": "object"}}},
            "required": ["output"],
        },
    },
    "required": ["responses_create_params", "response"],
    "additionalProperties": True,
}
NEMO_GYM_VERIFY: dict[str, Any] = {
    "requestBody": {
        "required": True,
        "content": _json(
            {
                **_ROLLOUT,
                "description": "NeMo Gym's verify request: the rollout and the environment's "
                "task fields (`expected_answer`, `question`, `verifier_metadata`, `options`, "
                "`instruction_id_list`, ...; docs/frameworks.md).",
            }
        ),
    },
    "responses": {
        "200": {
            "description": "The request with `reward` set, the environment's fields, "
            "`reward_components` for a scorer with several, `_ng_failure_class` for a "
            "fallback reward, and `reward_detail`.",
            "content": _json(
                {
                    "type": "object",
                    "properties": {
                        "reward": {"type": "number"},
                        "reward_components": {
                            "type": "object",
                            "additionalProperties": {"type": "number"},
                        },
                        "_ng_failure_class": {"enum": ["timeout", "error", "judge_failed"]},
                        "reward_detail": DETAIL,
                    },
                    "required": ["reward", "reward_detail"],
                    "additionalProperties": True,
                }
            ),
        },
        "400": {"description": f"Not the environment's verify request, or {BAD_OPTION}."},
        "404": {"description": "Unknown environment, or none set for the root paths."},
        "408": {"description": BODY_TIMEOUT},
        "413": {"description": "The body is over the size cap."},
        "503": {"description": OVERLOADED},
    },
}
NEMO_GYM_METRICS: dict[str, Any] = {
    "requestBody": {
        "required": True,
        "content": _json(
            {
                "type": "object",
                "properties": {
                    "verify_responses": {
                        "type": "array",
                        "items": {
                            "type": "object",
                            "properties": {
                                "reward": {"type": "number"},
                                "_ng_task_index": {"type": "integer"},
                                "_ng_rollout_index": {"type": "integer"},
                            },
                            "required": ["reward"],
                        },
                    }
                },
                "required": ["verify_responses"],
            }
        ),
    },
    "responses": {
        "200": {
            "description": "NeMo Gym's AggregateMetrics: pass@k, majority@k and their "
            "spread across runs (percentages), statistics of every numeric field.",
            "content": _json(
                {
                    "type": "object",
                    "properties": {
                        "group_level_metrics": {"type": "array", "items": {"type": "object"}},
                        "agent_metrics": {"type": "object"},
                        "key_metrics": {"type": "object"},
                    },
                    "required": ["group_level_metrics", "agent_metrics", "key_metrics"],
                }
            ),
        },
        "400": {"description": 'Not `{"verify_responses": [...]}` with numeric rewards.'},
        "404": {"description": "Unknown environment, or none set for the root paths."},
        "408": {"description": BODY_TIMEOUT},
        "413": {"description": "The body, or the rollouts times the largest task, over its cap."},
        "503": {"description": OVERLOADED},
    },
}
NEMO_GYM_SEED: dict[str, Any] = {
    "requestBody": {"required": False, "content": _json({"type": "object"})},
    "responses": {
        "200": {"description": "`{}`: grading keeps no state per rollout."},
        "404": {"description": "Unknown environment, or none set for the root paths."},
        "503": {"description": OVERLOADED},
    },
}


_RESULT: dict[str, Any] = {
    "type": ["object", "null"],
    "properties": {
        "status": {"enum": ["Finished", "Error", "TimeLimitExceeded"]},
        "execution_time": {"type": ["number", "null"]},
        "return_code": {"type": ["integer", "null"]},
        "stdout": {"type": ["string", "null"]},
        "stderr": {"type": ["string", "null"]},
    },
}
RUN_CODE: dict[str, Any] = {
    "requestBody": {
        "required": True,
        "content": _json(
            {
                "type": "object",
                "properties": {
                    "code": {"type": "string"},
                    "language": {
                        "type": "string",
                        "description": "`python` (`python3`), `cpp`, `c`, `java`, `go`, "
                        "`nodejs` (`javascript`), `typescript` (`ts`), `rust`, `ruby`, `php`, "
                        "`perl`, `lua`, `R`, `verilog`, `scala`, `kotlin_script`, `kotlin`, "
                        "`csharp`, `D_ut`, `d` or `racket`.",
                    },
                    "stdin": {"type": ["string", "null"]},
                    "compile_timeout": {"type": "number", "default": 10},
                    "run_timeout": {"type": "number", "default": 10},
                    "memory_limit_MB": {"type": "integer", "default": -1},
                    "files": {
                        "type": "object",
                        "additionalProperties": {"type": ["string", "null"]},
                        "description": "Path -> base64 content, beside the program built and run.",
                    },
                    "fetch_files": {
                        "type": "array",
                        "items": {"type": "string"},
                        "description": "Relative paths read back after the run (`files`).",
                    },
                },
                "required": ["code", "language"],
            }
        ),
    },
    "responses": {
        "200": {
            "description": "SandboxFusion's answer: `Success`, `Failed` (a step timed out or "
            "exited non-zero) or `SandboxError` (nothing ran; `message` says why).",
            "content": _json(
                {
                    "type": "object",
                    "properties": {
                        "status": {"enum": ["Success", "Failed", "SandboxError"]},
                        "message": {"type": "string"},
                        "compile_result": _RESULT,
                        "run_result": _RESULT,
                        "executor_pod_name": {"type": "null"},
                        "files": {"type": "object", "additionalProperties": {"type": "string"}},
                    },
                    "required": ["status", "message", "files"],
                }
            ),
        },
        "400": {"description": "`code` or `language` is not a string."},
        "408": {"description": BODY_TIMEOUT},
        "413": {"description": "The body is over the size cap."},
        "503": {"description": OVERLOADED},
    },
}


def option_parameters(
    scorer: str, options: Mapping[str, frozenset[str] | None]
) -> list[dict[str, Any]]:
    """Query parameters for the options of `scorer`, the scorer of a route without `{scorer}`.

    Routes with `{scorer}` take that scorer's options; a schema cannot list
    them, and their 400 says which exist.
    """
    return [
        {
            "name": name,
            "in": "query",
            "required": False,
            # No `type`: query values are text anyway, and schemathesis 4's coverage phase
            # crashes drawing wrong-type values for a typed string query parameter.
            "schema": {} if values is None else {"enum": sorted(values)},
            "description": f"Option `{name}` of the default scorer, `{scorer}`. A label "
            "object's key of that name overrides it; it overrides the deployment's "
            "`scorer_options`.",
        }
        for name, values in sorted(options.items())
    ]


def describe(
    app: FastAPI,
    routes: Sequence[tuple[str, dict[str, Any], str]],
    default_options: Callable[[], list[dict[str, Any]]],
    plain: Sequence[tuple[str, dict[str, Any], str]] = (),
) -> None:
    """Add `(path, spec, summary)` POST operations to the schema FastAPI generates.

    Routes without `{scorer}` also get `default_options()`, the query
    parameters of the default scorer's options, read when the schema is built.
    The `plain` routes get their spec's parameters, else their path's.
    """
    generate = app.openapi

    def schema() -> dict[str, Any]:
        if app.openapi_schema is None:
            document = generate()
            for path, spec, summary in routes:
                routed = "{scorer}" in path
                parameters = [
                    {"name": name, "in": "path", "required": True, "schema": {"type": "string"}}
                    for name in ("scorer",)
                    if routed
                ] + spec.get("parameters", [])
                if not routed:
                    parameters += default_options()
                operation = {**spec, "summary": summary, "parameters": parameters}
                document["paths"].setdefault(path, {})["post"] = operation
            for path, spec, summary in plain:
                named = [
                    {"name": name, "in": "path", "required": True, "schema": {"type": "string"}}
                    for name in _PATH_PARAMETER.findall(path)
                ]
                operation = {"parameters": named, **spec, "summary": summary}
                document["paths"].setdefault(path, {})["post"] = operation
            app.openapi_schema = document
        return app.openapi_schema

    app.openapi = schema  # type: ignore[method-assign]
