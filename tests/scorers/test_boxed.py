"""`boxed_<type>`: SLIME's `boxed_` prefix, a scorer graded on the last box's content."""

from __future__ import annotations

import random
from collections.abc import Iterator, Mapping

import httpx
import pytest

from reward_service.clients.http import RewardClient
from reward_service.errors import UnknownScorer
from reward_service.scorers.base import JSON, NO_OPTIONS, Score, Scorer, Status
from reward_service.scorers.boxed import (
    BoxedAsyncScorer,
    BoxedScorer,
    boxed_content,
    boxed_scorer,
)
from reward_service.scorers.registry import BUILTINS, ScorerRegistry
from reward_service.testing import LiveServer, live_server
from tests.scorers.math_verify.test_screen_cost import GROWTH, _assert_linear, _units

REGISTRY = ScorerRegistry.discover()
CPU_BUILTINS = sorted(n for n in BUILTINS if issubclass(REGISTRY.scorer_class(n), Scorer))
"""The built-ins graded in workers; the I/O-bound ones (the judges) have their own test."""


def slime_extract(text: str) -> str | None:
    """Test oracle: SLIME's `math_utils.extract_answer`, transcribed from its description."""
    if "\\boxed" not in text:
        return None
    idx = text.rfind("\\boxed")
    if idx < 0:
        idx = text.rfind("\\fbox")
        if idx < 0:
            return None
    depth, end = 0, None
    for i in range(idx, len(text)):
        if text[i] == "{":
            depth += 1
        if text[i] == "}":
            depth -= 1
            if depth == 0:
                end = i
                break
    boxed = None if end is None else text[idx : end + 1]
    if boxed is None or not boxed.startswith("\\boxed{") or not boxed.endswith("}"):
        return None
    return boxed[len("\\boxed{") : -1]


@pytest.mark.parametrize(
    ("response", "content"),
    [
        pytest.param("so \\boxed{42}.", "42", id="plain"),
        pytest.param("\\boxed{1} then \\boxed{2}", "2", id="last-box"),
        pytest.param("\\boxed{\\frac{1}{2}}", "\\frac{1}{2}", id="nested-braces"),
        pytest.param("\\boxed{}", "", id="empty-box"),
        pytest.param("\\boxed{12", "", id="unclosed"),
        pytest.param("\\boxed{1} and \\boxed{2", "", id="last-unclosed"),
        pytest.param("\\boxed 5", "", id="space-form"),
        pytest.param("\\boxed {5}", "", id="space-before-brace"),
        pytest.param("\\fbox{5}", "", id="fbox-alone"),
        pytest.param("\\boxed{1} \\fbox{2}", "1", id="fbox-after-boxed"),
        pytest.param("\\boxed}{a}", "", id="closing-first"),
        pytest.param("no box here", "", id="no-box"),
        pytest.param("\\boxed{" + "{" * 100_000, "", id="huge-unclosed"),
    ],
)
def test_boxed_content(response: str, content: str) -> None:
    """The content of the last `\\boxed{...}`, "" wherever SLIME extracts nothing."""
    assert boxed_content(response) == content
    assert (slime_extract(response) or "") == content


def test_boxed_content_matches_slime_on_generated_text() -> None:
    """On 2,000 seeded random strings of box fragments the content equals SLIME's, always."""
    rng = random.Random(14)
    parts = ["\\boxed", "\\boxed ", "\\fbox", "{", "}", "{x}", "1", " ", "$", "\\frac{1}{2}"]
    for _ in range(2000):
        text = "".join(rng.choice(parts) for _ in range(rng.randint(0, 12)))
        assert boxed_content(text) == (slime_extract(text) or ""), text


def test_boxed_content_is_linear() -> None:
    """Ten times the open braces cost at most about ten times the CPU time, best of several
    (the screen runs on it)."""

    def build(n: int) -> str:
        return "\\boxed{" * 4 + "{" * n

    n = _units(build)
    small, large = build(n), build(GROWTH * n)
    _assert_linear(lambda: boxed_content(small), lambda: boxed_content(large))


@pytest.mark.parametrize("name", CPU_BUILTINS)
def test_every_builtin_has_a_boxed_form(name: str) -> None:
    """`boxed_<name>` is listed, named so, shares the inner scorer, its batch size and options."""
    boxed = REGISTRY.get(f"boxed_{name}")
    assert f"boxed_{name}" in REGISTRY.names()
    assert isinstance(boxed, BoxedScorer)
    assert boxed.name == f"boxed_{name}"
    assert boxed.scorer is REGISTRY.get(name)
    cls = REGISTRY.scorer_class(f"boxed_{name}")
    assert (cls.batch_size, cls.options) == (type(boxed.scorer).batch_size, boxed.scorer.options)


@pytest.mark.parametrize("name", sorted(set(BUILTINS) - set(CPU_BUILTINS)))
def test_every_async_builtin_has_a_boxed_form_sharing_its_instance(name: str) -> None:
    """`boxed_<name>` of an I/O-bound built-in is async too and shares the inner instance (its
    client, bound and cache) and options."""
    boxed = REGISTRY.get(f"boxed_{name}")
    assert isinstance(boxed, BoxedAsyncScorer) and boxed.scorer is REGISTRY.get(name)
    assert REGISTRY.scorer_class(f"boxed_{name}").options == boxed.scorer.options


CASES = [
    ("The answer is \\boxed{42}.", "42", NO_OPTIONS),
    ("Answer: 42 \\boxed{Answer: 42}", "42", NO_OPTIONS),
    ("so \\boxed{B}", "B", NO_OPTIONS),
    ("\\boxed{Eiffel Tower} is in Paris", "the Eiffel Tower", NO_OPTIONS),
    ("\\boxed{\\boxed{\\frac{1}{2}}}", "1/2", NO_OPTIONS),
    ("\\boxed{Ozone}", "C", {"choices": ["Nitric oxide", "Carbon dioxide", "Ozone"]}),
    ("no box, Answer: 42", "42", NO_OPTIONS),
]


@pytest.mark.parametrize("name", sorted(set(CPU_BUILTINS) - {"random", "reward_model"}))
@pytest.mark.parametrize(("response", "label", "options"), CASES)
def test_boxed_grades_the_content_with_the_inner_scorer(
    name: str, response: str, label: JSON, options: Mapping[str, JSON]
) -> None:
    """`boxed_<name>` scores exactly what `<name>` scores on the extracted content."""
    boxed = REGISTRY.get(f"boxed_{name}").score(None, response, label, options)
    inner = REGISTRY.get(name).score(None, boxed_content(response), label, options)
    assert (boxed.reward, boxed.status) == (inner.reward, inner.status)


@pytest.mark.parametrize(
    ("name", "response", "label", "reward"),
    [
        pytest.param("f1", "I think \\boxed{Eiffel Tower}", "Eiffel Tower", 1.0, id="f1"),
        pytest.param("dapo", "Answer: 42 \\boxed{42}", "42", -1.0, id="dapo-needs-answer-in-box"),
        pytest.param("dapo", "\\boxed{Answer: 42}", "42", 1.0, id="dapo"),
        pytest.param("math", "\\boxed{\\boxed{12}}", "12", 0.0, id="math-inner-box-is-the-last"),
        pytest.param("math", "\\boxed{12}", "12", 0.0, id="math-content-has-no-box"),
        pytest.param("choice", "so \\boxed{C}", "C", 1.0, id="choice"),
        pytest.param("gpqa", "A or B? \\boxed{B}", "B", 1.0, id="gpqa"),
        pytest.param("exact", "\\boxed{ 7 }", "7", 1.0, id="exact"),
    ],
)
def test_boxed_rewards_as_slime(name: str, response: str, label: JSON, reward: float) -> None:
    """SLIME's rewards for `boxed_<type>`: the inner type's, on the box content only."""
    assert REGISTRY.get(f"boxed_{name}").score(None, response, label, {}).reward == reward


def test_boxed_random_draws_both_values() -> None:
    """`boxed_random` is still a fair coin: over 200 draws both 0.0 and 1.0 occur."""
    scorer = REGISTRY.get("boxed_random")
    assert {scorer.score(None, "x", None, {}).reward for _ in range(200)} == {0.0, 1.0}


class _Recorder(Scorer):
    """Records what its screen saw."""

    name = "recorder"
    seen: list[tuple[str, JSON, Mapping[str, JSON]]] = []  # noqa: RUF012 (test double)

    def score(self, prompt: JSON, response: str, label: JSON, options: Mapping[str, JSON]) -> Score:
        return Score.verdict(response == label, seen=response)

    @classmethod
    def screen(
        cls, response: str, label: JSON, options: Mapping[str, JSON] = NO_OPTIONS
    ) -> Score | None:
        cls.seen.append((response, label, options))
        return None


def test_screen_runs_on_the_content() -> None:
    """The inner scorer's screen sees the box content, the label and options, never the response."""
    _Recorder.seen.clear()
    boxed_scorer(_Recorder, "recorder").screen("junk \\boxed{7} junk", "7", {"k": 1})
    assert _Recorder.seen == [("7", "7", {"k": 1})]


def test_boxed_classes_are_built_once() -> None:
    """Asking twice for a boxed class gives the same class (no class per request)."""
    assert REGISTRY.scorer_class("boxed_f1") is REGISTRY.scorer_class("boxed_f1")


def test_boxed_score_many_grades_contents() -> None:
    """Batches grade each item's box content, in order."""
    scorer = boxed_scorer(_Recorder, "recorder")()
    scores = scorer.score_many([(None, "\\boxed{a}", "a", {}), (None, "\\boxed{b}", "a", {})])
    assert [s.details["seen"] for s in scores] == ["a", "b"]
    assert [s.status for s in scores] == [Status.OK, Status.WRONG]


def test_no_double_prefix() -> None:
    """`boxed_boxed_<name>` is not a scorer, and asking for it names the known ones."""
    assert "boxed_boxed_f1" not in REGISTRY
    assert not [name for name in REGISTRY.names() if name.startswith("boxed_boxed_")]
    with pytest.raises(UnknownScorer, match=r"known scorers: .*boxed_f1"):
        REGISTRY.require("boxed_boxed_f1")


def test_extra_scorers_get_a_boxed_form() -> None:
    """A scorer added by target (plugin or setting) is served boxed too."""
    registry = ScorerRegistry({"words": "reward_service.scorers.slime.f1:F1Scorer"})
    assert registry.names() == ["boxed_words", "words"]
    assert registry.get("boxed_words").score(None, "\\boxed{a b}", "a b", {}).reward == 1.0


def test_a_target_named_boxed_wins() -> None:
    """A scorer registered as `boxed_<x>` is served as itself, not as the wrapper."""
    registry = ScorerRegistry(
        {
            "x": "reward_service.scorers.answers.exact:ExactScorer",
            "boxed_x": "reward_service.scorers.slime.f1:F1Scorer",
        }
    )
    assert registry.names() == ["boxed_x", "x"]
    assert not isinstance(registry.get("boxed_x"), BoxedScorer)


def test_worker_parents_preload_the_boxed_module() -> None:
    """`modules()` names the boxed module, which the forkserver preloads."""
    assert "reward_service.scorers.boxed" in REGISTRY.modules()


@pytest.fixture(scope="module")
def boxed_server() -> Iterator[LiveServer]:
    """A one-worker live server."""
    with live_server(workers=1) as server:
        yield server


def test_boxed_f1_by_url(boxed_server: LiveServer) -> None:
    """`POST /score/boxed_f1` grades the box content with f1."""
    with RewardClient(boxed_server.url) as client:
        detail = client.score(
            "Paris? \\boxed{Eiffel Tower}", "Eiffel Tower", scorer="boxed_f1", detail=True
        )
    assert (detail["reward"], detail["status"], detail["scorer"]) == (1.0, "ok", "boxed_f1")


def test_boxed_dapo_by_label_object(boxed_server: LiveServer) -> None:
    """A label object `{"scorer": "boxed_dapo"}` routes a plain `/score` sample to it."""
    with RewardClient(boxed_server.url) as client:
        right = client.score("\\boxed{Answer: 12}", {"scorer": "boxed_dapo", "answer": "12"})
        unboxed = client.score("Answer: 12", {"scorer": "boxed_dapo", "answer": "12"})
    assert (right, unboxed) == (1.0, -1.0)


def test_scorers_lists_boxed_forms(boxed_server: LiveServer) -> None:
    """`GET /scorers` lists `boxed_<name>` beside each scorer (composites aside), and
    nothing doubly boxed."""
    listing = httpx.get(f"{boxed_server.url}/scorers", timeout=10).json()
    names, composites = listing["scorers"], set(listing["composites"])
    assert {"gpqa", "random", "boxed_f1", "boxed_dapo", "boxed_math_verify"} <= set(names)
    scorers = [name for name in names if not name.startswith("boxed_") and name not in composites]
    assert {f"boxed_{name}" for name in scorers} <= set(names)
    assert not [name for name in names if name.startswith("boxed_boxed_")]
