"""The answer region every final-answer scorer reads (`scorers.reasoning`)."""

from __future__ import annotations

import pytest

from reward_service.scorers.reasoning import (
    AFTER,
    KEEP,
    MALFORMED,
    REQUIRED,
    STRICT,
    TRUNCATED,
    Unanswered,
    answer_region,
    think_mode,
)


@pytest.mark.parametrize(
    ("response", "strict", "after"),
    [
        pytest.param("plain answer", "plain answer", "plain answer", id="no-reasoning"),
        pytest.param("<think>r</think>answer", "answer", "answer", id="one-block"),
        pytest.param("r</think>answer", "answer", "answer", id="opened-by-the-prompt"),
        pytest.param("<think>r, never ended", TRUNCATED, "<think>r, never ended", id="unclosed"),
        pytest.param("<think>a</think>b</think>c", MALFORMED, "c", id="two-ends"),
        pytest.param("<think>a</think>b<think>c", TRUNCATED, "b<think>c", id="reopened"),
        pytest.param("<think>a</think>", "", "", id="nothing-after"),
    ],
)
def test_each_mode_reads_its_region(response: str, strict: object, after: str) -> None:
    """`strict` refuses unclosed and doubled reasoning, `required` also a response with no
    `</think>`, `after` reads after the last end, `keep` reads everything."""
    assert answer_region(response, STRICT) == strict
    assert answer_region(response, REQUIRED) == (strict if "</think>" in response else TRUNCATED)
    assert answer_region(response, AFTER) == after
    assert answer_region(response, KEEP) == response


def test_an_unread_region_says_why_as_no_answer() -> None:
    """`Unanswered.score` is a `no_answer` with the reason and the reward asked."""
    score = TRUNCATED.score(reward=-1.0, pred="x")
    assert (score.reward, score.status.value, score.details["pred"]) == (-1.0, "no_answer", "x")
    assert "truncated" in score.details["reason"]
    assert isinstance(MALFORMED, Unanswered) and "more than one" in MALFORMED.reason


@pytest.mark.parametrize(
    ("options", "mode"),
    [
        ({}, STRICT),
        ({"think": "required"}, REQUIRED),
        ({"think": "after"}, AFTER),
        ({"think": "keep"}, KEEP),
        ({"think": 3}, STRICT),
    ],
)
def test_the_mode_comes_from_option_think(options: dict[str, object], mode: str) -> None:
    """Option `think` picks the mode; unset or unknown is `strict` (never the laxer reading)."""
    assert think_mode(options) == mode
