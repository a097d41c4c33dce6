"""Loading the checkers offline: the Punkt model the image installs, NLTK's downloads refused,
some official checks replaced."""

from __future__ import annotations

import importlib
from pathlib import Path

import nltk
import pytest
from nltk.tokenize.punkt import PunktTokenizer

from reward_service.scorers.instructions import checkers


def test_install_punkt_writes_a_model_nltk_reads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """install_punkt writes NLTK's punkt_tab files under a data root, once; NLTK's reader
    loads them into a tokenizer that keeps abbreviations inside sentences."""
    model = checkers.install_punkt(tmp_path)
    assert model == tmp_path / "tokenizers/punkt_tab/english"
    expected = {"abbrev_types.txt", "collocations.tab", "ortho_context.tab", "sent_starters.txt"}
    assert {p.name for p in model.iterdir()} == expected
    written = (model / "abbrev_types.txt").stat().st_mtime_ns
    assert checkers.install_punkt(tmp_path) == model
    assert (model / "abbrev_types.txt").stat().st_mtime_ns == written
    monkeypatch.setattr(nltk.data, "path", [str(tmp_path)])
    text = "Dr. Smith arrived at noon. He left at two."
    assert PunktTokenizer("english").tokenize(text) == [
        "Dr. Smith arrived at noon.",
        "He left at two.",
    ]


def test_nltk_downloads_are_refused_and_remembered() -> None:
    """Once the checkers are loaded, nltk.download answers False and records the name."""
    checkers.load("ifeval")
    assert nltk.download("some_corpus_never_fetched") is False
    assert "some_corpus_never_fetched" in checkers.refused_downloads


def test_the_registries_hold_the_replaced_checks() -> None:
    """Each instruction REPLACED names loads as a subclass of its official class whose
    check_following is the replacement; every other instruction loads its official class."""
    for benchmark in checkers.BENCHMARKS:
        registry = checkers.load(benchmark).registry
        module = importlib.import_module(f"if_verifiable.{benchmark}.instructions_registry")
        official = module.INSTRUCTION_DICT
        replaced = {i for i, loaded in registry.items() if loaded is not official[i]}
        assert replaced == set(checkers.REPLACED[benchmark])
        for instruction in replaced:
            loaded = registry[instruction]
            assert isinstance(loaded, type) and issubclass(loaded, official[instruction])
            assert vars(loaded)["check_following"] is checkers.REPLACED[benchmark][instruction]
