"""Loading the checkers offline: the Punkt model the image installs, NLTK's downloads refused."""

from __future__ import annotations

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
