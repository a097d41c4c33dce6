"""NeMo Gym's resources-server contract: a verify request read into a sample, a grade into
the verify answer.

NeMo Gym (and NeMo-RL on top of it) posts each rollout to `/verify` as
`{"responses_create_params", "response", <task fields>}` and reads back the request
with `reward` added, plus whatever fields its environment's server adds
(`extracted_answer`, `follow_instruction_list`, ...). Each `Environment` here is the
counterpart of one of NeMo Gym's resources servers: the task fields it reads (its
request model), the scorer it grades with, and the fields its answer adds, named as
that server names them, so `/aggregate_metrics` and NeMo Gym's own tooling find them.

The answer graded is the final assistant message's text (`responses_api.final_text`);
reasoning items are never graded. The answer echoes the request as sent, then sets
`reward`, `reward_components` (a scorer with several, a composite: each one also a
top-level number, where NeMo Gym's metrics look) and the environment's fields: a
value the request carried under one of those names is replaced, never echoed. A
fallback grade (`timeout`, `error`, `judge_failed`) carries `_ng_failure_class`, the
field NeMo Gym routes to its failures file instead of training and metrics.
`reward_detail` holds the service's detail object (status, scorer, loss multiplier).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from reward_service.contracts.responses_api import (
    CreateParams,
    ModelResponse,
    final_text,
    last_user_text,
    reasoning_text,
)
from reward_service.errors import BadRequest
from reward_service.grading.sample import Sample
from reward_service.scorers.base import JSON, Score, Status

FAILURE_CLASS = "_ng_failure_class"
"""NeMo Gym's field for a row whose reward is no verdict: routed to its failures file."""
THINK_TAGS = ("<think>", "</think>")
MAX_REWARD = 1e100
"""A reward to aggregate lies within +-MAX_REWARD (a body may hold 640-digit integers)."""

Scores = Callable[[Mapping[str, Any]], dict[str, float]]
"""A verify answer's named scores, for pass@k and majority@k (NeMo Gym's `score_fn`)."""


class VerifyRequest(BaseModel):
    """What every verify request holds; task fields are each environment's, others kept."""

    model_config = ConfigDict(extra="allow")

    responses_create_params: CreateParams
    response: ModelResponse


Answer = str | int | float


class MathRequest(VerifyRequest):
    """`math_with_judge`'s task: the reference answer and, for the judge, the question."""

    expected_answer: Answer
    question: str | None = None


class UnitTests(BaseModel):
    """LiveCodeBench's tests, as `code_gen` reads them."""

    inputs: list[str]
    outputs: list[str]
    fn_name: str | None = None


class CodeMetadata(BaseModel):
    model_config = ConfigDict(extra="allow")

    unit_tests: UnitTests
    difficulty: str | None = None


class CodeRequest(VerifyRequest):
    """`code_gen`'s task: the tests under `verifier_metadata.unit_tests`."""

    verifier_metadata: CodeMetadata


GradingMode = Literal["binary", "fraction"]


# The pydantic plugin names __init__'s parameters by alias, and `kwargs` meets its `**kwargs`.
class InstructionMetadata(BaseModel):  # type: ignore[no-redef]
    model_config = ConfigDict(extra="allow")

    instruction_id_list: list[str]
    arguments: list[dict[str, Any] | None] = Field(alias="kwargs")
    prompt: str = ""
    grading_mode: GradingMode = "binary"


_LEGACY_FIELDS = ("instruction_id_list", "prompt", "kwargs", "grading_mode")


class InstructionRequest(VerifyRequest):
    """`instruction_following`'s task: under `verifier_metadata`, or at the top level as
    older datasets keep it (a `verifier_metadata` value wins)."""

    verifier_metadata: InstructionMetadata

    @model_validator(mode="before")
    @classmethod
    def _top_level_fields(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        metadata = data.get("verifier_metadata")
        metadata = dict(metadata) if isinstance(metadata, dict) else {}
        for name in _LEGACY_FIELDS:
            if name not in metadata and name in data:
                metadata[name] = data[name]
        return {**data, "verifier_metadata": metadata}


class IfBenchRequest(VerifyRequest):  # type: ignore[no-redef]  # as InstructionMetadata
    """`ifbench`'s task, at the top level; its reward is the fraction followed by default."""

    instruction_id_list: list[str]
    arguments: list[dict[str, Any] | None] = Field(alias="kwargs")
    prompt: str = ""
    grading_mode: GradingMode = "fraction"


McqaMode = Literal[
    "strict_single_letter_boxed", "lenient_boxed", "lenient_answer_colon", "lenient_answer_colon_md"
]


class McqaRequest(VerifyRequest):
    """`mcqa`'s task: options as `[{"A": text}, ...]`, the gold letter, the grading mode."""

    options: list[dict[str, str | None]] | None = None
    expected_answer: str | None = None
    grading_mode: McqaMode = "strict_single_letter_boxed"


class JudgeRequest(VerifyRequest):
    """`equivalence_llm_judge`'s task: the reference (or `metadata.expected_answer`)."""

    expected_answer: Answer | None = None
    metadata: dict[str, Any] | None = None


@dataclass(frozen=True)
class Task:
    """A verify request read for grading: its sample, the fields its answer adds whatever the
    grade, and a grade settled without grading (`settled`)."""

    sample: Sample
    fields: dict[str, JSON] = field(default_factory=dict)
    settled: Score | None = None


@dataclass(frozen=True)
class Environment:
    """One of NeMo Gym's resources servers, served on this service."""

    name: str
    scorer: str
    """The scorer it grades with, unless `REWARD_NEMO_GYM_SCORERS` names another."""
    request: type[VerifyRequest]
    read: Callable[[Any, str, str], Task]
    """The task of a validated request, given the text to grade and the scorer to use."""
    fields: Callable[[Score, Task], dict[str, JSON]]
    """The answer's own fields for a grade (a `reward` here replaces the grade's)."""
    scores: Scores
    answer_key: str | None = "extracted_answer"
    """The field majority@k votes on; None: no majority@k."""


def _strip_delimiters(answer: Answer) -> str:
    """A reference answer without the `\\(...\\)` or `$...$` many datasets wrap it in."""
    text = str(answer).strip()
    if text.startswith("\\(") and text.endswith("\\)"):
        text = text[2:-2].strip()
    if len(text) > 1 and text.startswith("$") and text.endswith("$"):
        text = text[1:-1].strip()
    return text


def _sample(text: str, label: JSON, prompt: JSON, scorer: str, **options: JSON) -> Sample:
    return Sample(text, label, prompt=prompt, scorer=scorer, options=options)


def _pred(score: Score) -> str | None:
    """The final answer the grade read, where it read one (the rule's, under a judge)."""
    rule = score.details.get("rule")
    details = rule if isinstance(rule, dict) else score.details
    pred = details.get("pred")
    return pred if isinstance(pred, str) and pred and score.status is not Status.NO_ANSWER else None


def _library_reward(score: Score) -> float:
    """math_verify's own verdict: the rule's under `math_judge`, else the grade's."""
    rule = score.details.get("rule")
    if isinstance(rule, dict):
        return 1.0 if rule.get("status") == Status.OK.value else 0.0
    return score.reward


def _read_math(request: MathRequest, text: str, scorer: str) -> Task:
    expected = _strip_delimiters(request.expected_answer)
    question = request.question or last_user_text(request.responses_create_params)
    return Task(_sample(text, expected, question, scorer), {"expected_answer": expected})


def _math_fields(score: Score, task: Task) -> dict[str, JSON]:
    fields: dict[str, JSON] = {
        "extracted_answer": _pred(score),
        "library_reward": _library_reward(score),
    }
    if score.details.get("path") == "judge":
        fields["judge_verdict"] = score.details.get("verdict")
    return fields


def _math_scores(row: Mapping[str, Any]) -> dict[str, float]:
    scores = {"symbolic_accuracy": row.get("library_reward", row["reward"])}
    if "judge_verdict" in row:
        scores["judge_accuracy"] = row["reward"]
    return scores


def _accuracy(row: Mapping[str, Any]) -> dict[str, float]:
    return {"accuracy": row["reward"]}


def _reasoning_format_violation(text: str, reasoning: str) -> bool:
    """`code_gen`'s check: think tags in the final message, or a tag twice in the reasoning."""
    return any(tag in text or reasoning.count(tag) > 1 for tag in THINK_TAGS)


def _read_code(request: CodeRequest, text: str, scorer: str) -> Task:
    metadata = request.verifier_metadata
    label = metadata.unit_tests.model_dump(exclude_none=True)
    fields: dict[str, JSON] = {"difficulty": metadata.difficulty}
    violated = _reasoning_format_violation(text, reasoning_text(request.response))
    fields["reasoning_format_violation_rate"] = 1.0 if violated else 0.0
    settled = None
    if not text.strip():
        settled = Score.no_answer("the final message holds no text")
    elif violated:
        settled = Score(0.0, Status.WRONG, {"reason": "think tags in the final message"})
    if text.strip():
        fields["extracted_model_output"] = text
    return Task(_sample(text, label, None, scorer), fields, settled)


def _code_fields(score: Score, task: Task) -> dict[str, JSON]:
    return {name: score.details[name] for name in ("passed", "total") if name in score.details}


def _code_scores(row: Mapping[str, Any]) -> dict[str, float]:
    return {"accuracy": float(row["reward"] > 0)}


def _instruction_label(ids: list[str], kwargs: list[Any], prompt: str) -> dict[str, JSON]:
    return {"instruction_id_list": list(ids), "kwargs": list(kwargs), "prompt_text": prompt}


def _read_instructions(request: InstructionRequest, text: str, scorer: str) -> Task:
    meta = request.verifier_metadata
    label = _instruction_label(meta.instruction_id_list, meta.arguments, meta.prompt)
    reward = "strict" if meta.grading_mode == "binary" else "partial"
    fields: dict[str, JSON] = {"verifier_metadata": meta.model_dump(mode="json", by_alias=True)}
    return Task(_sample(text, label, meta.prompt, scorer, reward=reward), fields)


def _verdicts(score: Score, task: Task, kind: str) -> list[bool]:
    """Each instruction's strict or loose verdict; all false when none was checked."""
    checked = score.details.get("instructions")
    if isinstance(checked, list) and checked:
        return [isinstance(c, dict) and c.get(kind) is True for c in checked]
    label = task.sample.label
    count = len(label.get("instruction_id_list") or ()) if isinstance(label, dict) else 0
    return [False] * count


def _instruction_fields(score: Score, task: Task) -> dict[str, JSON]:
    strict = _verdicts(score, task, "strict")
    return {"follow_all_instructions": all(strict), "follow_instruction_list": list(strict)}


def _read_ifbench(request: IfBenchRequest, text: str, scorer: str) -> Task:
    label = _instruction_label(request.instruction_id_list, request.arguments, request.prompt)
    # The loose reward runs both checks, so one grading gives both verdict lists.
    reward = "loose" if request.grading_mode == "binary" else "partial_loose"
    fields: dict[str, JSON] = {"grading_mode": request.grading_mode}
    return Task(_sample(text, label, request.prompt, scorer, reward=reward), fields)


def _share(verdicts: list[bool], mode: JSON) -> float:
    if mode == "binary":
        return float(all(verdicts))
    return sum(verdicts) / len(verdicts) if verdicts else 0.0


def _ifbench_fields(score: Score, task: Task) -> dict[str, JSON]:
    strict, loose = _verdicts(score, task, "strict"), _verdicts(score, task, "loose")
    mode = task.fields["grading_mode"]
    fields: dict[str, JSON] = {
        "follow_all_instructions": all(strict),
        "follow_instruction_list": list(strict),
        "follow_all_instructions_loose": all(loose),
        "follow_instruction_list_loose": list(loose),
    }
    if score.status.is_verdict:
        fields["reward"] = _share(strict, mode)
        fields["reward_loose"] = _share(loose, mode)
    return fields


_BOXED_MODES = frozenset({"strict_single_letter_boxed", "lenient_boxed"})


def _choices(options: list[dict[str, str | None]] | None) -> list[str] | None:
    """The option texts in letter order when the letters run A, B, C, ... (else None: any
    of A-J counts)."""
    texts = {
        key.upper(): value
        for entry in options or ()
        for key, value in entry.items()
        if len(key) == 1 and key.isalpha() and value is not None
    }
    letters = sorted(texts)
    if not letters or letters != [chr(ord("A") + i) for i in range(len(letters))]:
        return None
    return [texts[letter] for letter in letters]


def _read_mcqa(request: McqaRequest, text: str, scorer: str) -> Task:
    gold = (request.expected_answer or "").strip().upper()
    if scorer == "choice" and request.grading_mode in _BOXED_MODES:
        scorer = "boxed_choice"  # NeMo Gym's default reads the letter in the last \boxed{} only
    choices = _choices(request.options)
    options: dict[str, JSON] = {} if choices is None else {"choices": list(choices)}
    return Task(_sample(text, gold, None, scorer, **options), {"expected_answer": gold})


def _mcqa_fields(score: Score, task: Task) -> dict[str, JSON]:
    return {"extracted_answer": _pred(score)}


def _read_judge(request: JudgeRequest, text: str, scorer: str) -> Task:
    expected = request.expected_answer
    if expected in (None, "") and request.metadata:
        expected = request.metadata.get("expected_answer")
    reference = "" if expected is None else str(expected)
    question = last_user_text(request.responses_create_params)
    return Task(_sample(text, reference, question, scorer), {"expected_answer": reference})


def _judge_fields(score: Score, task: Task) -> dict[str, JSON]:
    return {"judge_verdict": score.details.get("verdict")}


ENVIRONMENTS: dict[str, Environment] = {
    env.name: env
    for env in (
        Environment("math", "math_verify", MathRequest, _read_math, _math_fields, _math_scores),
        Environment(
            "math_with_judge", "math_judge", MathRequest, _read_math, _math_fields, _math_scores
        ),
        Environment("code_gen", "code", CodeRequest, _read_code, _code_fields, _code_scores, None),
        Environment(
            "instruction_following",
            "ifeval",
            InstructionRequest,
            _read_instructions,
            _instruction_fields,
            _accuracy,
            None,
        ),
        Environment(
            "ifbench", "ifbench", IfBenchRequest, _read_ifbench, _ifbench_fields, _accuracy, None
        ),
        Environment("mcqa", "choice", McqaRequest, _read_mcqa, _mcqa_fields, _accuracy),
        Environment(
            "equivalence_llm_judge",
            "judge",
            JudgeRequest,
            _read_judge,
            _judge_fields,
            _accuracy,
            None,
        ),
    )
}
"""NeMo Gym's resources servers this service has counterparts for, by the name each has
there (`math`: `math_with_judge` with `should_use_judge: false`, its shipped default)."""


def read_verify(environment: Environment, body: Mapping[str, JSON], scorer: str) -> Task:
    """The task of a verify body for `environment`, graded by `scorer`; `BadRequest`
    naming the fields when the body is not one of its requests."""
    try:
        request = environment.request.model_validate(body)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in error['loc']) or 'body'}: {error['msg']}"
            for error in exc.errors()[:5]
        )
        raise BadRequest(f"not a {environment.name} verify request: {problems}") from None
    return environment.read(request, final_text(request.response), scorer)


_COMPUTED = ("reward", "reward_components", FAILURE_CLASS, "reward_detail")


def verify_answer(
    environment: Environment,
    body: Mapping[str, JSON],
    task: Task,
    score: Score,
    detail: dict[str, JSON],
) -> dict[str, JSON]:
    """The verify answer: the request as sent, with the grade's fields set over it."""
    answer: dict[str, JSON] = {k: v for k, v in body.items() if k not in _COMPUTED}
    answer["reward"] = score.reward
    components = score.details.get("components")
    if isinstance(components, dict) and components:
        answer["reward_components"] = dict(components)
        answer.update(components)
    answer.update(task.fields)
    answer.update(environment.fields(score, task))
    if not score.status.is_verdict:
        answer[FAILURE_CLASS] = score.status.value
    answer["reward_detail"] = detail
    return answer


class AggregateRequest(BaseModel):
    """`/aggregate_metrics`'s body: verify answers, stripped of their heavy fields."""

    verify_responses: list[dict[str, Any]]


def aggregate_rows(body: Mapping[str, JSON]) -> list[dict[str, Any]]:
    """The verify answers to aggregate: every one with a numeric `reward`, those NeMo Gym
    routes to its failures file (`_ng_failure_class`) left out as it leaves them out;
    `BadRequest` for a body that is not one."""
    try:
        rows = AggregateRequest.model_validate(body).verify_responses
    except ValidationError:
        raise BadRequest(
            'an aggregate_metrics body is {"verify_responses": [{...}, ...]}'
        ) from None
    for index, row in enumerate(rows):
        reward = row.get("reward")
        if isinstance(reward, bool) or not isinstance(reward, int | float):
            raise BadRequest(f"verify_responses[{index}] has no numeric reward")
        if not -MAX_REWARD <= reward <= MAX_REWARD:
            raise BadRequest(f"verify_responses[{index}]'s reward is beyond {MAX_REWARD:g}")
    return [row for row in rows if FAILURE_CLASS not in row]
