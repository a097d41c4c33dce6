"""How the scorer registry finds scorer classes."""

from __future__ import annotations

import importlib

import pytest

from reward_service.errors import UnknownScorer
from reward_service.scorers import registry as registry_module
from reward_service.scorers.answers.exact import ExactScorer
from reward_service.scorers.registry import ScorerRegistry


def test_scorer_class_imports_once_per_name(monkeypatch: pytest.MonkeyPatch) -> None:
    """Asking for a scorer's class again, as the server does per answer, imports nothing more."""
    imported: list[str] = []
    real_import = importlib.import_module

    def counting_import(name: str) -> object:
        imported.append(name)
        return real_import(name)

    monkeypatch.setattr(registry_module.importlib, "import_module", counting_import)
    registry = ScorerRegistry({"exact": "reward_service.scorers.answers.exact:ExactScorer"})
    classes = {registry.scorer_class(name) for name in ["exact", "boxed_exact"] * 50}
    assert imported == ["reward_service.scorers.answers.exact"]
    assert registry.scorer_class("exact") is ExactScorer
    assert len(classes) == 2


def test_scorer_class_of_an_unknown_name_still_raises_after_known_lookups() -> None:
    """Remembering classes keeps the 404 path: an unknown name raises, listing the known ones."""
    registry = ScorerRegistry({"exact": "reward_service.scorers.answers.exact:ExactScorer"})
    registry.scorer_class("exact")
    with pytest.raises(UnknownScorer, match="exact"):
        registry.scorer_class("nope")


def test_only_narrows_the_registry_to_what_its_names_grade_with() -> None:
    """`only` keeps the named scorers and the base of a `boxed_` name, and refuses unknown ones."""
    narrowed = ScorerRegistry.discover().only(["exact", "boxed_math"])
    assert narrowed.targets() == ["exact", "math"]
    assert "code" not in narrowed and "boxed_exact" in narrowed
    with pytest.raises(UnknownScorer):
        ScorerRegistry.discover().only(["nope"])
