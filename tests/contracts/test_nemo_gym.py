"""NeMo Gym's verify requests read into samples, and grades into verify answers."""

from __future__ import annotations

from typing import Any

import pytest

from reward_service.contracts.nemo_gym import (
    ENVIRONMENTS,
    FAILURE_CLASS,
    Task,
    aggregate_rows,
    read_verify,
    verify_answer,
)
from reward_service.errors import BadRequest
from reward_service.scorers.base import Score, Status
from tests.contracts.nemo_gym_rollouts import message, reasoning, rollout

QUESTION = "What is 2 + 2?"


def _read(environment: str, body: dict[str, Any], scorer: str | None = None) -> Task:
    env = ENVIRONMENTS[environment]
    return read_verify(env, body, scorer or env.scorer)


def _answer(environment: str, body: dict[str, Any], task: Task, score: Score) -> dict[str, Any]:
    return verify_answer(ENVIRONMENTS[environment], body, task, score, {"status": "x"})


def test_math_reads_the_final_message_against_the_expected_answer() -> None:
    """The sample: the final message's text, the unwrapped reference, the question as prompt."""
    body = rollout(QUESTION, reasoning("think"), message("\\boxed{4}"), expected_answer="$4$")
    body["question"] = QUESTION
    sample = _read("math", body).sample
    assert (sample.response, sample.label, sample.prompt, sample.scorer) == (
        "\\boxed{4}",
        "4",
        QUESTION,
        "math_verify",
    )


def test_math_with_judge_asks_the_last_user_message_without_a_question() -> None:
    """Without `question`, the judge's question is the prompt's last user message."""
    task = _read("math_with_judge", rollout(QUESTION, message("4"), expected_answer="\\(4\\)"))
    assert (task.sample.prompt, task.sample.label, task.sample.scorer) == (
        QUESTION,
        "4",
        "math_judge",
    )


def test_the_answer_echoes_the_request_and_adds_the_grade() -> None:
    """The request as sent, plus reward, the environment's fields and the detail object."""
    body = rollout(QUESTION, message("\\boxed{4}"), expected_answer="4", uuid="u1")
    task = _read("math", body)
    answer = _answer("math", body, task, Score.verdict(True, pred="4"))
    assert answer["response"] == body["response"] and answer["uuid"] == "u1"
    assert (answer["reward"], answer["extracted_answer"], answer["library_reward"]) == (
        1.0,
        "4",
        1.0,
    )
    assert answer["reward_detail"] == {"status": "x"} and FAILURE_CLASS not in answer


def test_fields_a_request_carries_never_survive_as_the_grade() -> None:
    """Reward hacking: a request's own reward, components or failure mark are replaced."""
    body = rollout(QUESTION, message("5"), expected_answer="4")
    body.update({"reward": 1.0, "reward_components": {"accuracy": 1.0}, "library_reward": 1.0})
    task = _read("math", body)
    answer = _answer("math", body, task, Score.no_answer("none"))
    assert (answer["reward"], answer["library_reward"], answer["extracted_answer"]) == (
        0.0,
        0.0,
        None,
    )
    assert "reward_components" not in answer


def test_a_fallback_carries_nemo_gyms_failure_class() -> None:
    """A reward that is no verdict is marked as NeMo Gym marks a failed judge call."""
    body = rollout(QUESTION, message("4"), expected_answer="4")
    task = _read("equivalence_llm_judge", body)
    answer = _answer("equivalence_llm_judge", body, task, Score(0.0, Status.JUDGE_FAILED))
    assert (answer[FAILURE_CLASS], answer["reward"]) == ("judge_failed", 0.0)


def test_a_composites_components_are_reward_components_and_top_level_numbers() -> None:
    """A scorer with several components answers `reward_components`, each also a field."""
    body = rollout(
        QUESTION, message("<think>\n.\n</think>\n<answer>\n4\n</answer>"), expected_answer="4"
    )
    components = {"accuracy": 1.0, "format": 1.0, "tag_count": 1.0}
    task = _read("math", body, "open_r1")
    answer = _answer("math", body, task, Score(3.0, Status.OK, {"components": components}))
    assert answer["reward_components"] == components
    assert (answer["reward"], answer["format"]) == (3.0, 1.0)


def test_code_gen_reads_the_unit_tests_and_settles_a_reasoning_format_violation() -> None:
    """The tests become the label; think tags in the final message earn 0.0 ungraded."""
    tests = {"inputs": ["1\n"], "outputs": ["2\n"], "fn_name": None}
    code = "```python\nprint(int(input()) + 1)\n```"
    body = rollout("add one", message(code), verifier_metadata={"unit_tests": tests})
    task = _read("code_gen", body)
    assert task.sample.label == {"inputs": ["1\n"], "outputs": ["2\n"]} and task.settled is None
    hacked = rollout(
        "add one", message(f"<think>x</think>{code}"), verifier_metadata={"unit_tests": tests}
    )
    settled = _read("code_gen", hacked).settled
    assert settled is not None and settled.reward == 0.0


def test_code_gen_settles_a_reasoning_block_that_opens_twice() -> None:
    """Two think tags in the reasoning are NeMo Gym's violation as well."""
    tests = {"inputs": ["1\n"], "outputs": ["2\n"]}
    body = rollout(
        "add one",
        reasoning("<think>a<think>b"),
        message("```python\nprint(2)\n```"),
        verifier_metadata={"unit_tests": tests},
    )
    task = _read("code_gen", body)
    assert task.settled is not None and task.fields["reasoning_format_violation_rate"] == 1.0


def test_instruction_following_reads_top_level_fields_of_older_datasets() -> None:
    """Instructions at the top level are read as `verifier_metadata`, fraction as partial."""
    body = rollout(
        "Write", message("hi"), instruction_id_list=["punctuation:no_comma"], kwargs=[None]
    )
    body["grading_mode"] = "fraction"
    task = _read("instruction_following", body)
    assert task.sample.label == {
        "instruction_id_list": ["punctuation:no_comma"],
        "kwargs": [None],
        "prompt_text": "",
    }
    assert task.sample.options == {"reward": "partial"}


def test_ifbench_grades_strict_and_loose_in_one_grading() -> None:
    """The loose reward runs both checks; the answer's reward is the strict share."""
    ids = ["a:b", "c:d"]
    body = rollout("Write", message("x"), instruction_id_list=ids, kwargs=[{}, {}], prompt="Write")
    task = _read("ifbench", body)
    assert task.sample.options == {"reward": "partial_loose"}
    checked = [
        {"id": "a:b", "strict": True, "loose": True},
        {"id": "c:d", "strict": False, "loose": True},
    ]
    answer = _answer("ifbench", body, task, Score(1.0, Status.OK, {"instructions": checked}))
    assert (answer["reward"], answer["reward_loose"]) == (0.5, 1.0)
    assert answer["follow_instruction_list"] == [True, False]
    assert answer["follow_all_instructions_loose"] is True


@pytest.mark.parametrize(
    ("mode", "scorer"),
    [
        ("strict_single_letter_boxed", "boxed_choice"),
        ("lenient_boxed", "boxed_choice"),
        ("lenient_answer_colon", "choice"),
    ],
)
def test_mcqa_reads_the_boxed_letter_in_its_boxed_modes(mode: str, scorer: str) -> None:
    """NeMo Gym's boxed modes read the last box only; its options become the choices."""
    options = [{"A": "three"}, {"B": "four"}]
    body = rollout(QUESTION, message("\\boxed{B}"), options=options, expected_answer="b")
    body["grading_mode"] = mode
    sample = _read("mcqa", body).sample
    assert (sample.scorer, sample.label, sample.options) == (
        scorer,
        "B",
        {"choices": ["three", "four"]},
    )


def test_equivalence_judge_takes_the_reference_from_metadata() -> None:
    """`metadata.expected_answer` stands in for a missing `expected_answer`."""
    body = rollout(QUESTION, message("four"), metadata={"expected_answer": 4})
    task = _read("equivalence_llm_judge", body)
    assert (task.sample.label, task.sample.prompt, task.fields) == (
        "4",
        QUESTION,
        {"expected_answer": "4"},
    )


@pytest.mark.parametrize(
    ("environment", "body", "named"),
    [
        ("math", {"response": {"output": []}}, "responses_create_params"),
        ("math", rollout(QUESTION, message("4")), "expected_answer"),
        ("code_gen", rollout("q", message("x"), verifier_metadata={}), "unit_tests"),
        ("math", {**rollout(QUESTION, expected_answer="4"), "response": {"output": [{}]}}, "type"),
    ],
)
def test_a_body_that_is_no_verify_request_is_refused(
    environment: str, body: dict[str, Any], named: str
) -> None:
    """A body missing what the environment reads is a 400 naming the field."""
    with pytest.raises(BadRequest, match=named):
        _read(environment, body)


def test_aggregate_rows_leave_out_nemo_gyms_failures() -> None:
    """Rows NeMo Gym routes to its failures file are not aggregated; a reward is required."""
    rows = [{"reward": 1.0}, {"reward": 0.0, FAILURE_CLASS: "timeout"}]
    assert aggregate_rows({"verify_responses": rows}) == [{"reward": 1.0}]
    with pytest.raises(BadRequest, match="numeric reward"):
        aggregate_rows({"verify_responses": [{"reward": "1"}]})
    with pytest.raises(BadRequest, match="beyond"):
        aggregate_rows({"verify_responses": [{"reward": 10**400}]})
    with pytest.raises(BadRequest, match="verify_responses"):
        aggregate_rows({"rows": []})


def test_a_judged_math_answer_reports_the_rules_reading_and_the_verdict() -> None:
    """Under `math_judge`, the extracted answer and library reward are math_verify's, and the
    judge's verdict is `judge_verdict`; aggregate scores name both as NeMo Gym does."""
    body = rollout(QUESTION, message("Final answer: {7 / 5}"), expected_answer="1.4")
    task = _read("math_with_judge", body)
    judged = Score(
        1.0,
        Status.OK,
        {"path": "judge", "verdict": "equivalent", "rule": {"status": "wrong", "pred": "7/5"}},
    )
    answer = _answer("math_with_judge", body, task, judged)
    assert (answer["reward"], answer["library_reward"]) == (1.0, 0.0)
    assert (answer["extracted_answer"], answer["judge_verdict"]) == ("7/5", "equivalent")
    scores = ENVIRONMENTS["math_with_judge"].scores(answer)
    assert scores == {"symbolic_accuracy": 0.0, "judge_accuracy": 1.0}
    assert ENVIRONMENTS["math"].scores({"reward": 1.0, "library_reward": 1.0}) == {
        "symbolic_accuracy": 1.0
    }
