"""The C++ workload: every kind of solution, distinct sources, the same rewards on both sides."""

from __future__ import annotations

from collections import Counter

import pytest

from reward_service.bench.code_workload import KINDS, kind_counts
from reward_service.bench.cpp_workload import (
    HEADER_LIST,
    NaiveCompiler,
    cpp_header_mix_workload,
    cpp_workload,
)
from reward_service.contracts.slime import sample_from_json
from reward_service.sandbox.toolchains import Found, discover
from reward_service.scorers.base import GradingLimits
from reward_service.scorers.code.scorer import CodeScorer
from reward_service.scorers.code.settings import DEFAULT_TOOLCHAIN_PATH, CodeSettings

CPP = discover(DEFAULT_TOOLCHAIN_PATH, ["cpp"])["cpp"]


def test_workload_holds_the_mix_in_distinct_sources() -> None:
    """Exactly `kind_counts` of each kind, no two responses alike, all C++."""
    items = cpp_workload(3, 80)
    assert Counter(item["kind"] for item in items) == kind_counts(80)
    assert len({item["response"] for item in items}) == 80
    assert all("```cpp\n#include <bits/stdc++.h>" in item["response"] for item in items)


@pytest.mark.needs_tool("" if isinstance(CPP, Found) else f"cpp: {CPP}")
def test_both_sides_give_a_right_and_a_wrong_answer_their_rewards() -> None:
    """The naive compiler and the service's sandbox, under the code scorer, agree with the
    labels on a correct answer and a wrong one (each build costs up to a second: two kinds)."""
    items = cpp_workload(4, 20)
    picked = [next(item for item in items if item["kind"] == kind) for kind in KINDS[:2]]
    sides = [
        CodeScorer(GradingLimits(), sandbox_factory=lambda _: NaiveCompiler()),
        CodeScorer(GradingLimits(deadlines={"code": 30.0}), CodeSettings(languages={"cpp"})),
    ]
    try:
        for scorer in sides:
            rewards = []
            for item in picked:
                sample = sample_from_json(item)
                score = scorer.score(None, sample.response, sample.label, sample.options)
                rewards.append(score.reward)
            assert rewards == [item["expected"] for item in picked]
    finally:
        for scorer in sides:
            scorer.close()


def test_the_header_mix_lists_its_headers_in_half_of_the_answers() -> None:
    """`code-cpp-headers`: half the answers list `HEADER_LIST`, the rest include
    `bits/stdc++.h`; kinds and distinct sources as in `code-cpp`."""
    items = cpp_header_mix_workload(3, 80)
    assert Counter(item["kind"] for item in items) == kind_counts(80)
    assert len({item["response"] for item in items}) == 80
    listing = [item for item in items if f"```cpp\n{HEADER_LIST}" in item["response"]]
    assert len(listing) == 40
    assert sum("#include <bits/stdc++.h>" in item["response"] for item in items) == 40
