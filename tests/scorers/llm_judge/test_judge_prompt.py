"""The judge's prompt and the strict reading of its reply (pure text)."""

from __future__ import annotations

import pytest

from reward_service.scorers.llm_judge.judge_prompt import (
    EQUIVALENCE_TEMPLATE,
    TemplateError,
    Verdict,
    check_template,
    final_answer,
    question_text,
    read_verdict,
    render,
)


@pytest.mark.parametrize(
    ("response", "answer"),
    [
        ("<think>maybe 3</think>The answer is 4.", "The answer is 4."),
        ("<think>a</think>x</think>  final: 7 ", "final: 7"),
        ("no reasoning block, 12", "no reasoning block, 12"),
        ("<think>still thinking about 5", None),
        ("<think>done</think>   ", None),
        ("", None),
    ],
)
def test_final_answer_is_what_follows_the_last_think_end(response: str, answer: str | None) -> None:
    """The final answer follows the last `</think>`; unfinished reasoning has none."""
    assert final_answer(response, 1000) == answer


def test_final_answer_keeps_the_tail_of_a_long_answer() -> None:
    """A final part over the cap is cut to its last characters, where the answer is."""
    assert final_answer("x" * 50 + "ANSWER", 6) == "ANSWER"


@pytest.mark.parametrize(
    ("reply", "verdict"),
    [
        ("They match.\nVERDICT: CORRECT", Verdict.CORRECT),
        ("VERDICT: INCORRECT", Verdict.INCORRECT),
        ("Some parts.\nVERDICT: **PARTIAL**", Verdict.PARTIAL),
        ("<think>VERDICT: INCORRECT? no</think>VERDICT: CORRECT", Verdict.CORRECT),
        ("VERDICT: CORRECT\nVERDICT: INCORRECT", None),
        ("VERDICT: CORRECT then again VERDICT: CORRECT", None),
        ("I think it is correct.", None),
        ("verdict: correct", None),
        ("VERDICT: CORRECTLY", None),
        ("", None),
    ],
)
def test_reply_holds_exactly_one_verdict_or_none(reply: str, verdict: Verdict | None) -> None:
    """Exactly one verdict token after the judge's reasoning is a verdict; any other reply is
    none, never a guess."""
    assert read_verdict(reply) == verdict


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("$reference only", "lacks $answer"),
        ("$answer only", "lacks $reference"),
        ("$reference $answer $label", "unknown placeholder $label"),
        ("$reference $answer costs $5", "not a placeholder"),
    ],
)
def test_bad_templates_are_refused(text: str, problem: str) -> None:
    """A template lacking a required placeholder or naming an unknown one is refused."""
    with pytest.raises(TemplateError, match=problem.replace("$", r"\$")):
        check_template(text)


def test_built_in_template_renders_every_part() -> None:
    """Our own prompt holds the question, the reference and the candidate's answer."""
    prompt = render(check_template(EQUIVALENCE_TEMPLATE), "What is 2+2?", "4", "four")
    assert "What is 2+2?" in prompt and "Reference answer:\n4\n" in prompt
    assert "Candidate's final answer:\nfour\n" in prompt


@pytest.mark.parametrize(
    ("prompt", "question"),
    [
        ("What is 2+2?", "What is 2+2?"),
        ([{"role": "system", "content": "s"}, {"role": "user", "content": "q1"}], "q1"),
        ([{"role": "user", "content": [{"type": "text", "text": "q2"}, {"type": "image"}]}], "q2"),
        ([{"role": "assistant", "content": "a"}], ""),
        (None, ""),
    ],
)
def test_question_is_the_prompt_or_its_last_user_message(prompt: object, question: str) -> None:
    """SLIME's prompt is a string or a chat list; the question is its last user text."""
    assert question_text(prompt) == question
