"""Composite scorers: definitions, each component in the details, weighted and normalised sums."""

from __future__ import annotations

from collections.abc import Mapping

import pytest
from pydantic import ValidationError

from reward_service.errors import ScorerLoadError
from reward_service.scorers.answers.exact import ExactScorer
from reward_service.scorers.base import JSON, Score, Scorer, Status
from reward_service.scorers.composite import (
    OPEN_R1,
    CompositeDefinition,
    CompositeScorer,
    composite_scorer,
    normalized_rewards,
)
from reward_service.scorers.math_verify.scorer import MathVerifyScorer
from reward_service.scorers.registry import ScorerRegistry

FORMATTED = "<think>\nadd: 2 + 2\n</think>\n<answer>\n\\boxed{4}\n</answer>"


class _Broken(Scorer):
    """A scorer that cannot grade anything: every answer is an `error`."""

    name = "broken"

    def score(self, prompt: JSON, response: str, label: JSON, options: Mapping[str, JSON]) -> Score:
        return Score.error("no grader")


def _open_r1() -> Scorer:
    return composite_scorer("open_r1", OPEN_R1, {"accuracy": MathVerifyScorer})()


def test_open_r1_recipe_pays_each_component_and_their_sum() -> None:
    """A correct, formatted answer: accuracy, format and tag_count 1.0 each, reward 3.0."""
    score = _open_r1().score(None, FORMATTED, "4", {})
    assert (score.reward, score.status) == (3.0, Status.OK)
    assert score.details["components"] == {"accuracy": 1.0, "format": 1.0, "tag_count": 1.0}


def test_each_component_is_a_top_level_detail_for_slimes_reward_key() -> None:
    """`--reward-key format` reads reward["format"]: every component is a top-level key too."""
    score = _open_r1().score(None, FORMATTED, "5", {})
    assert (score.details["accuracy"], score.details["format"], score.details["tag_count"]) == (
        0.0,
        1.0,
        1.0,
    )
    assert (score.reward, score.status) == (2.0, Status.WRONG)


def test_the_verdicts_own_details_are_kept() -> None:
    """The verdict scorer's details (math_verify's `pred`) stay in the composite's."""
    assert _open_r1().score(None, FORMATTED, "4", {}).details["pred"] == "4"


def test_weights_scale_each_component() -> None:
    """The reward is the weighted sum of the components' values."""
    definition = CompositeDefinition.model_validate(
        {
            "components": {
                "accuracy": {"scorer": "math_verify", "weight": 2.0},
                "format": {"kind": "think_answer_format", "weight": 0.5},
                "tags": {"kind": "tag_count", "weight": -1.0},
            }
        }
    )
    scorer = composite_scorer("weighted", definition, {"accuracy": MathVerifyScorer})()
    assert scorer.score(None, FORMATTED, "4", {}).reward == pytest.approx(2.0 + 0.5 - 1.0)


def test_cosine_length_reads_the_verdicts_correctness() -> None:
    """cosine_length pays a correct answer from 0.5 up and a wrong one below -0.5."""
    definition = CompositeDefinition.model_validate(
        {"components": {"exact": {"scorer": "exact"}, "length": {"kind": "cosine_length"}}}
    )
    scorer = composite_scorer("cos", definition, {"exact": ExactScorer})()
    assert scorer.score(None, "4", "4", {}).details["length"] == pytest.approx(1.0, abs=1e-4)
    assert scorer.score(None, "5", "4", {}).details["length"] == pytest.approx(-1.0, abs=1e-4)


def test_a_fallback_part_makes_the_composite_a_fallback() -> None:
    """A scorer component that could not grade leaves no verdict to combine: status error."""
    definition = CompositeDefinition.model_validate(
        {
            "components": {
                "ok": {"scorer": "exact"},
                "bad": {"scorer": "broken"},
                "f": {"kind": "tag_count"},
            }
        }
    )
    scorer = composite_scorer("mixed", definition, {"ok": ExactScorer, "bad": _Broken})()
    score = scorer.score(None, "4", "4", {})
    assert score.status is Status.ERROR
    assert score.status.loss_multiplier == 0.0
    assert score.details["components"] == {}


def test_the_screen_settles_what_every_scorer_component_settles() -> None:
    """A response math_verify's screen refuses (a tower of powers) is settled with its
    components, never sent to a worker where it would stall sympy."""
    tower = "<think>\nx\n</think>\n<answer>\n\\boxed{9^{9^{9^{9^{9}}}}}\n</answer>"
    cls = composite_scorer("open_r1", OPEN_R1, {"accuracy": MathVerifyScorer})
    settled = cls.screen(tower, "4")
    assert settled is not None
    assert settled.status is Status.NO_ANSWER
    assert settled.details["components"] == {"accuracy": 0.0, "format": 1.0, "tag_count": 1.0}


def test_the_screen_leaves_the_rest_to_the_worker() -> None:
    """An answer no screen settles is graded in a worker (the screen answers None)."""
    cls = composite_scorer("open_r1", OPEN_R1, {"accuracy": MathVerifyScorer})
    assert cls.screen("x = \\boxed{\\frac{1}{2}} and more", "0.5") is None


def test_the_composite_takes_its_parts_options() -> None:
    """Options any scorer component reads may be set on the composite (`think`)."""
    cls = composite_scorer("open_r1", OPEN_R1, {"accuracy": MathVerifyScorer})
    assert cls.option_problem("think", "keep") is None
    assert cls.option_problem("nonsense", 1) is not None


def test_normalised_sum_z_scores_each_component_within_the_group() -> None:
    """GDPO: each component centred and scaled across the group, then summed with weights."""
    definition = CompositeDefinition.model_validate(
        {
            "components": {"a": {"scorer": "exact"}, "f": {"kind": "tag_count", "weight": 2.0}},
            "combine": "normalized_sum",
        }
    )
    values = [{"a": 1.0, "f": 1.0}, {"a": 0.0, "f": 1.0}, None]
    # a: mean 0.5, sample std sqrt(0.5); f: all equal, adds nothing
    rewards = normalized_rewards(definition, values)
    assert rewards[0] == pytest.approx(0.5 / 0.5**0.5, rel=1e-5)
    assert rewards[1] == pytest.approx(-0.5 / 0.5**0.5, rel=1e-5)
    assert rewards[2] is None


@pytest.mark.parametrize(
    ("definition", "complaint"),
    [
        ({"components": {"f": {"kind": "tag_count"}}}, "at least one scorer"),
        ({"components": {"a": {"scorer": "exact", "kind": "tag_count"}}}, "exactly one"),
        ({"components": {"a": {}}}, "exactly one"),
        (
            {"components": {"a": {"scorer": "exact"}, "f": {"kind": "nope"}}},
            "unknown component kind",
        ),
        (
            {
                "components": {
                    "a": {"scorer": "exact"},
                    "r": {"kind": "repetition", "params": {"max_penalty": 1}},
                }
            },
            "less than or equal",
        ),
        (
            {
                "components": {
                    "a": {"scorer": "exact"},
                    "o": {"kind": "soft_overlong", "params": {"max_length": 10, "buffer": 20}},
                }
            },
            "buffer",
        ),
        ({"components": {"a": {"scorer": "exact", "params": {"x": 1}}}}, "`params` belong"),
        ({"components": {"reward": {"scorer": "exact"}}}, "component name"),
        ({"components": {"Bad Name": {"scorer": "exact"}}}, "component name"),
        (
            {"components": {"a": {"scorer": "exact"}, "f": {"kind": "tag_count"}}, "verdict": "f"},
            "not a scorer component",
        ),
        ({"components": {"a": {"scorer": "exact"}}, "combine": "product"}, "combine"),
    ],
)
def test_definitions_that_cannot_work_are_refused(
    definition: dict[str, object], complaint: str
) -> None:
    """A definition is checked whole when read (at start-up), each mistake named."""
    with pytest.raises(ValidationError, match=complaint):
        CompositeDefinition.model_validate(definition)


def _registry(**composites: CompositeDefinition) -> ScorerRegistry:
    return ScorerRegistry.discover(composites=composites)


def test_the_registry_serves_a_composite_by_its_name() -> None:
    """A composite in the registry is a scorer: listed, built with its parts, graded."""
    registry = _registry(open_r1=OPEN_R1)
    assert "open_r1" in registry.names()
    assert "open_r1" not in registry.targets()
    scorer = registry.get("open_r1")
    assert isinstance(scorer, Scorer)
    assert scorer.score(None, FORMATTED, "4", {}).reward == 3.0


def test_a_composite_shares_its_parts_instances() -> None:
    """The composite grades with the registry's own math_verify, so the worker builds it once."""
    registry = _registry(open_r1=OPEN_R1)
    composite = registry.get("open_r1")
    assert isinstance(composite, CompositeScorer)
    assert composite.scorers["accuracy"] is registry.get("math_verify")


def test_narrowing_to_a_composite_keeps_its_parts() -> None:
    """`only(["open_r1"])` keeps math_verify, which it grades with, and nothing else."""
    narrowed = _registry(open_r1=OPEN_R1).only(["open_r1"])
    assert narrowed.names() == ["boxed_math_verify", "math_verify", "open_r1"]


@pytest.mark.parametrize(
    ("scorer", "complaint"),
    [("nope", "no scorer served here"), ("judge", "I/O-bound"), ("again", "do not nest")],
)
def test_composites_of_what_a_worker_cannot_grade_are_refused(scorer: str, complaint: str) -> None:
    """Parts must be CPU-bound scorers the registry serves, and not composites."""
    bad = CompositeDefinition.model_validate({"components": {"a": {"scorer": scorer}}})
    registry = _registry(bad=bad, again=OPEN_R1)
    with pytest.raises(ScorerLoadError, match=complaint):
        registry.check_composites()


def test_a_composite_cannot_take_a_scorers_name() -> None:
    """A composite named like a scorer would hide it: refused."""
    with pytest.raises(ScorerLoadError, match="name of a scorer"):
        _registry(exact=OPEN_R1)
