"""The `math_verify` scorer gives plain math_verify's verdict on every generated answer.

Both extraction modes: `final` (the default) against `plain_grade`, `any`
against `plain_grade_any`, reading the whole response as math_verify does
(`think=keep`, the parity option: by default only the answer region counts).
"""

from __future__ import annotations

import multiprocessing
import os
from collections import Counter
from collections.abc import Callable, Mapping
from concurrent.futures import ProcessPoolExecutor

import pytest

from reward_service.bench.reference import Case, plain_grade, plain_grade_any
from reward_service.scorers.base import JSON, GradingLimits
from reward_service.scorers.math_verify.scorer import MathVerifyScorer
from tests.scorers.math_verify.cases import generate_cases

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


FINAL: Mapping[str, JSON] = {"think": "keep"}
ANY: Mapping[str, JSON] = {"extraction": "any", "think": "keep"}
_CORES = min(len(os.sched_getaffinity(0)), 4)


def _disagreements(
    cases: list[Case],
    options: Mapping[str, JSON] = FINAL,
    reference: Callable[[Case], tuple[float, str | None]] = plain_grade,
) -> tuple[list[str], Counter[str]]:
    """Cases where the service's reward or read answer differs from plain math_verify's.

    The cases are split across the machine's cores (each chunk graded as `_grade_chunk`
    says), so thousands of them cost what a few hundred did on one core.
    """
    chunks = [cases[i::_CORES] for i in range(_CORES)]
    wrong: list[str] = []
    paths: Counter[str] = Counter()
    with ProcessPoolExecutor(_CORES, mp_context=multiprocessing.get_context("fork")) as pool:
        for chunk_wrong, chunk_paths in pool.map(
            _grade_chunk, chunks, [options] * _CORES, [reference] * _CORES
        ):
            wrong += chunk_wrong
            paths += chunk_paths
    return wrong, paths


def _grade_chunk(
    cases: list[Case],
    options: Mapping[str, JSON],
    reference: Callable[[Case], tuple[float, str | None]],
) -> tuple[list[str], Counter[str]]:
    """As in the service: `screen` first (in the server), then `score` (in a worker)."""
    scorer = MathVerifyScorer(GradingLimits(cache_size=256))
    wrong: list[str] = []
    paths: Counter[str] = Counter()
    for case in cases:
        reward, pred = reference(case)
        score = MathVerifyScorer.screen(case.response, case.label, options) or scorer.score(
            None, case.response, case.label, options
        )
        paths[str(score.details.get("path"))] += 1
        if score.reward != reward or (pred is not None and score.details.get("pred") != pred):
            wrong.append(f"{case.kind} {case.label!r} {case.response[-200:]!r}: {reward} {score}")
    return wrong, paths


def test_agrees_with_plain_math_verify_on_1500_cases() -> None:
    """1,200 mixed and 300 integer-only answers get plain math_verify's reward and answer
    (`-m exhaustive` grades 40,000 more), each of the scorer's paths taken over 120 times."""
    cases = generate_cases(seed=20240, count=1200) + generate_cases(20241, 300, True)
    wrong, paths = _disagreements(cases)
    assert wrong == []
    assert min(paths["inline"], paths["fast"], paths["region"], paths["full"]) > 120


def test_any_extraction_agrees_with_plain_parse_on_1500_cases() -> None:
    """With `extraction=any`, 1,500 answers, many bare or unboxed, get plain `parse`'s reward
    (`-m exhaustive` grades 20,000 more)."""
    cases = generate_cases(seed=20242, count=1500, bare=True)
    wrong, paths = _disagreements(cases, ANY, plain_grade_any)
    assert wrong == []
    assert set(paths) == {"full", "None"}
    assert paths["full"] > 1350


@pytest.mark.exhaustive
@pytest.mark.parametrize("seed", [1, 2, 3, 4])
def test_agrees_with_plain_math_verify_on_more_seeds(seed: int) -> None:
    """Another 10,000 answers per seed, mixed and integer-only, agree as well."""
    cases = generate_cases(seed, 8000) + generate_cases(seed + 100, 2000, True)
    assert _disagreements(cases)[0] == []


@pytest.mark.exhaustive
@pytest.mark.parametrize("seed", [5, 6])
def test_any_extraction_agrees_with_plain_parse_on_more_seeds(seed: int) -> None:
    """Another 10,000 answers per seed with `extraction=any` agree as well."""
    cases = generate_cases(seed, 10000, bare=True)
    assert _disagreements(cases, ANY, plain_grade_any)[0] == []
