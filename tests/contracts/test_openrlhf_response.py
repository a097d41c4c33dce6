"""Finding the response in OpenRLHF's decoded query, and never grading the prompt."""

from __future__ import annotations

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from reward_service.contracts.openrlhf import (
    _IGNORED,
    Unlocated,
    _text_end,
    openrlhf_answer,
    read_openrlhf,
    response_start,
)
from reward_service.scorers.base import Score, Status

CHATML = (
    "<|im_start|>system\nPut the final answer in a box, as in: 3 + 4 = \\boxed{7}.<|im_end|>\n"
    "<|im_start|>user\nWhat is 5 + 7?<|im_end|>\n<|im_start|>assistant\n"
)
LLAMA3 = (
    "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\n"
    "Example: 2 + 5 = \\boxed{7}. What is 5 + 7?<|eot_id|>"
    "<|start_header_id|>assistant<|end_header_id|>\n\n"
)
FEW_SHOT = (
    "Problem: What is 3 + 4?\nSolution: 3 + 4 = 7, so the answer is \\boxed{7}.\n\n"
    "Problem: What is 10 - 3?\nSolution: 10 - 3 = 7, so the answer is \\boxed{7}.\n\n"
    "Problem: What is 5 + 7?\nSolution:"
)
GEMMA = (
    "<bos><start_of_turn>user\nExample: \\boxed{7}. What is 5 + 7?<end_of_turn>\n"
    "<start_of_turn>model\n"
)
MISTRAL = "<s>[INST] Example: \\boxed{7}. What is 5 + 7? [/INST]"
DEEPSEEK = (
    "<\uff5cbegin\u2581of\u2581sentence\uff5c><\uff5cUser\uff5c>Example: \\boxed{7}. "
    "What is 5 + 7?<\uff5cAssistant\uff5c>"
)
SPECIALS = [
    "<|im_start|>",
    "<|im_end|>",
    "<|begin_of_text|>",
    "<|start_header_id|>",
    "<|end_header_id|>",
    "<|eot_id|>",
    "<bos>",
    "<start_of_turn>",
    "<end_of_turn>",
    "<s>",
    "[INST]",
    "[/INST]",
    "<\uff5cbegin\u2581of\u2581sentence\uff5c>",
    "<\uff5cUser\uff5c>",
    "<\uff5cAssistant\uff5c>",
]


def skipped(text: str) -> str:
    """`text` decoded with `skip_special_tokens=True`."""
    for token in SPECIALS:
        text = text.replace(token, "")
    return text


def response_of(prompt: str, query: str) -> str | None:
    start = response_start(prompt, query)
    return None if start is None else query[start:]


ANSWER = "5 + 7 = 12, so \\boxed{12}."


@pytest.mark.parametrize(
    ("prompt", "query", "response"),
    [
        pytest.param(CHATML, CHATML + ANSWER, ANSWER, id="exact"),
        pytest.param(CHATML, CHATML.replace("5 + 7", "5 +  7") + ANSWER, ANSWER, id="extra-space"),
        pytest.param(CHATML, CHATML.replace(" = ", "=") + ANSWER, ANSWER, id="dropped-spaces"),
        pytest.param(CHATML, CHATML.replace("\n", "\n\n") + ANSWER, "\n" + ANSWER, id="newlines"),
        pytest.param(CHATML, " " + CHATML + ANSWER, ANSWER, id="leading-space"),
        pytest.param(CHATML, skipped(CHATML) + ANSWER, ANSWER, id="chatml-skipped"),
        pytest.param(CHATML, "<|endoftext|>" * 3 + CHATML + ANSWER, ANSWER, id="left-pads"),
        pytest.param(
            CHATML,
            CHATML + ANSWER + "<|im_end|><|endoftext|>",
            ANSWER + "<|im_end|><|endoftext|>",
            id="eos-kept",
        ),
        pytest.param(LLAMA3, "<|begin_of_text|>" + LLAMA3 + ANSWER, ANSWER, id="llama3-double-bos"),
        pytest.param(LLAMA3, skipped(LLAMA3) + ANSWER, ANSWER, id="llama3-skipped"),
        pytest.param(
            LLAMA3, LLAMA3.removesuffix("\n\n") + "\n" + ANSWER, ANSWER, id="llama3-newline-lost"
        ),
        pytest.param(FEW_SHOT, FEW_SHOT + " " + ANSWER, " " + ANSWER, id="few-shot-exact"),
        pytest.param(
            FEW_SHOT, "<s> " + FEW_SHOT.replace("\n\n", "\n") + ANSWER, ANSWER, id="few-shot-bos"
        ),
        pytest.param(GEMMA, skipped(GEMMA) + ANSWER, ANSWER, id="gemma-skipped"),
        pytest.param(MISTRAL, skipped(MISTRAL) + " " + ANSWER, " " + ANSWER, id="mistral-skipped"),
        pytest.param(MISTRAL, MISTRAL.replace("[INST] ", "[INST]") + ANSWER, ANSWER, id="mistral"),
        pytest.param(
            MISTRAL,
            MISTRAL.replace(" [/INST]", "[/INST]") + ANSWER,
            ANSWER,
            id="mistral-space-lost",
        ),
        pytest.param(
            MISTRAL,
            MISTRAL.replace(" [/INST]", "  [/INST]") + ANSWER,
            ANSWER,
            id="mistral-space-added",
        ),
        pytest.param(DEEPSEEK, skipped(DEEPSEEK) + ANSWER, ANSWER, id="deepseek-skipped"),
        pytest.param(
            CHATML,
            skipped(CHATML) + "<think>\nhm</think>" + ANSWER,
            "<think>\nhm</think>" + ANSWER,
            id="response-markup-kept",
        ),
        pytest.param(CHATML, CHATML, "", id="empty-response"),
        pytest.param("", ANSWER, ANSWER, id="empty-prompt"),
    ],
)
def test_response_is_found_after_a_decoded_prompt(prompt: str, query: str, response: str) -> None:
    """A decode that differs from its prompt in whitespace or special tokens yields the response."""
    assert response_of(prompt, query) == response


@pytest.mark.parametrize(
    ("prompt", "query"),
    [
        pytest.param(CHATML, "Let me think about", id="absent"),
        pytest.param(CHATML, "Sure. " + CHATML + ANSWER, id="occurs-later"),
        pytest.param(CHATML, CHATML[: len(CHATML) // 2] + "Let me think about", id="truncated"),
        pytest.param(CHATML, CHATML.replace("5 + 7", "5 + 8") + ANSWER, id="other-character"),
        pytest.param(FEW_SHOT, FEW_SHOT.replace("\\boxed{7}", "\\boxed{8}", 1), id="other-example"),
        pytest.param(LLAMA3, "", id="empty-query"),
    ],
)
def test_query_not_starting_with_its_prompt_has_no_response(prompt: str, query: str) -> None:
    """A query that does not start with its prompt, modulo whitespace and markup, is unlocated."""
    assert response_start(prompt, query) is None


@pytest.mark.parametrize("prompt", [CHATML, LLAMA3, FEW_SHOT, GEMMA, MISTRAL, DEEPSEEK])
def test_graded_text_never_holds_the_prompts_example_answer(prompt: str) -> None:
    """Whatever the decode, the text sent to grading holds none of the prompt's `\\boxed{7}`."""
    decodes = [prompt, skipped(prompt), prompt.replace(" ", "  "), "<s>" + prompt]
    read = read_openrlhf(
        {
            "query": [decode + "Let me think about" for decode in decodes],
            "prompts": [prompt] * len(decodes),
            "labels": ["7"] * len(decodes),
        }
    )
    assert [s.response if s else None for s in read.samples] == ["Let me think about"] * 4


def test_unlocated_queries_are_not_samples() -> None:
    """A query lacking its prompt, or without a prompt string, becomes no sample but a reason."""
    read = read_openrlhf(
        {
            "query": [CHATML + ANSWER, "The answer is 12", "The answer is 12", ANSWER, 7],
            "prompts": [CHATML, CHATML, None, ["a", "list"], CHATML],
            "labels": ["12"] * 5,
        }
    )
    assert [s.response if s else None for s in read.samples] == [ANSWER, None, None, None, None]
    missing, not_found = Unlocated.PROMPT_MISSING, Unlocated.PROMPT_NOT_FOUND
    assert read.unlocated == [None, not_found, missing, missing, not_found]


def test_body_without_prompts_grades_nothing() -> None:
    """A body with no `prompts` (OpenRLHF before prompts were sent) leaves every query ungraded."""
    read = read_openrlhf({"query": [CHATML + ANSWER, ANSWER], "labels": ["12", "12"]})
    assert read.samples == [None, None]
    assert read.unlocated == [Unlocated.PROMPT_MISSING] * 2


def test_answer_logs_why_a_response_was_not_found() -> None:
    """`extra_logs` flags each unlocated sample under its reason, one number per sample."""
    scores = [Score.verdict(True), Score.error("item is not an object"), Score.error("x")]
    answer = openrlhf_answer(scores, [None, Unlocated.PROMPT_NOT_FOUND, Unlocated.PROMPT_MISSING])
    logs = answer["extra_logs"]
    assert logs["reward_prompt_not_found"] == [0.0, 1.0, 0.0]
    assert logs["reward_prompt_missing"] == [0.0, 0.0, 1.0]
    assert logs["reward_failed"] == [0.0, 1.0, 1.0]
    assert all(isinstance(v, float) for values in logs.values() for v in values)


def test_answers_the_judge_gave_no_verdict_count_as_failed() -> None:
    """A `judge_failed` answer got the fallback reward: `reward_failed` counts it."""
    judged = [Score.verdict(True), Score(0.0, Status.JUDGE_FAILED, {"reason": "judge failed"})]
    assert openrlhf_answer(judged, [None, None])["extra_logs"]["reward_failed"] == [0.0, 1.0]


def test_each_querys_loss_multiplier_is_logged() -> None:
    """`extra_logs["loss_multiplier"]`: 1.0 for a verdict, 0.0 for a fallback, per query."""
    scores = [Score.verdict(False), Score(0.0, Status.TIMEOUT), Score.no_answer("none")]
    assert openrlhf_answer(scores, [None] * 3)["extra_logs"]["loss_multiplier"] == [1.0, 0.0, 1.0]


ATOMS = [" ", "\n", "a", "b", "<", ">", "|", "[", "]", "/", "<s>", "[INST]", "<|im_end|>", "|>"]
ATOMS += ["<|" + "a" * 60, "<\uff5cUser\uff5c>", "<think>", "<|endoftext|>" * 20, " " * 100]
texts = st.lists(st.sampled_from(ATOMS), max_size=40).map("".join)


@settings(max_examples=300, deadline=None)
@given(prompt=texts, junk=texts, edits=st.lists(st.sampled_from(ATOMS), max_size=6), rest=texts)
def test_splitting_a_head_of_the_query_finds_what_splitting_all_of_it_does(
    prompt: str, junk: str, edits: list[str], rest: str
) -> None:
    """Searching a head of the query, grown as needed, finds the prompt's end the whole shows."""
    half = len(prompt) // 2
    query = junk + prompt[:half] + "".join(edits) + prompt[half:] + rest
    text = _IGNORED.sub("", prompt)
    assume(text)
    whole = _text_end(text, query, len(query))
    assert _text_end(text, query, 0) == _text_end(text, query, len(prompt)) == whole
