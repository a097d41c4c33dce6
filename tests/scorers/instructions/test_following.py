"""Strict and loose verdicts: the loose check's seven extra checks run only when asked for."""

from __future__ import annotations

import pytest

from reward_service.scorers.instructions.checkers import Checkers
from reward_service.scorers.instructions.following import Followed, follow
from reward_service.scorers.instructions.inputs import Instructions

RESPONSE = "Sure!\nthe answer\n*bye*"
MADE: list[_Counting] = []
"""The checkers built by the test running."""


class _Counting:
    """A checker that passes texts starting with `the` and records what it was asked."""

    def __init__(self, instruction_id: str) -> None:
        self.checked: list[str] = []
        MADE.append(self)

    def build_description(self, **kwargs: object) -> str:
        return "starts with 'the'"

    def get_instruction_args(self) -> None:
        return None

    def check_following(self, value: str) -> bool:
        self.checked.append(value)
        return value.startswith("the")


@pytest.fixture
def counting() -> Checkers:
    MADE.clear()
    return Checkers("ifeval", {"starts:the": _Counting})


INSTRUCTIONS = Instructions(("starts:the",), ({},))


def test_a_strict_reward_checks_only_the_response(counting: Checkers) -> None:
    """Without `loose`, a failed strict check is all that runs; its loose verdict is None."""
    assert follow(counting, INSTRUCTIONS, RESPONSE, loose=False) == [
        Followed("starts:the", False, None)
    ]
    assert [c.checked for c in MADE] == [[RESPONSE]]


def test_a_loose_reward_tries_the_variants_until_one_passes(counting: Checkers) -> None:
    """With `loose`, the variants are tried in order after a failed strict check, until one
    passes (here the third: the first line removed)."""
    assert follow(counting, INSTRUCTIONS, RESPONSE, loose=True) == [
        Followed("starts:the", False, True)
    ]
    assert [c.checked for c in MADE] == [[RESPONSE, "Sure!\nthe answer\nbye", "the answer\n*bye*"]]


@pytest.mark.parametrize("loose", [False, True])
def test_a_strict_pass_is_a_loose_pass_without_more_checks(counting: Checkers, loose: bool) -> None:
    """A response that passes strictly passes loosely, whatever was asked, with one check."""
    assert follow(counting, INSTRUCTIONS, "the end", loose=loose) == [
        Followed("starts:the", True, True)
    ]
    assert [c.checked for c in MADE] == [["the end"]]
