"""Reading instructions from a label as SLIME's `ifbench` reads them from metadata."""

from __future__ import annotations

import pytest

from reward_service.scorers.base import JSON
from reward_service.scorers.instructions.inputs import (
    instruction_ids,
    instruction_kwargs,
    read_instructions,
)


@pytest.mark.parametrize(
    ("raw", "ids"),
    [
        pytest.param(
            [" a:b ", "", "  ", None, "c:d"], ["a:b", "c:d"], id="stripped-blanks-dropped"
        ),
        pytest.param([], [], id="empty"),
        pytest.param(None, [], id="none"),
        pytest.param("a:b", ["a:b"], id="lone-string"),
        pytest.param([1], ["1"], id="non-string-entry"),
    ],
)
def test_instruction_ids(raw: JSON, ids: list[str]) -> None:
    """Ids are stripped strings; None and blank entries are dropped."""
    assert instruction_ids(raw) == ids


@pytest.mark.parametrize(
    ("raw", "count", "kwargs"),
    [
        pytest.param([{"n": 1}, {"m": 2}], 2, [{"n": 1}, {"m": 2}], id="one-per-instruction"),
        pytest.param({"n": 1}, 3, [{"n": 1}] * 3, id="single-dict-for-all"),
        pytest.param([{"n": 1}], 3, [{"n": 1}] * 3, id="short-list-padded-with-last"),
        pytest.param([{"n": 1}, {"m": 2}, {"k": 3}], 2, [{"n": 1}, {"m": 2}], id="long-list-cut"),
        pytest.param([{"n": None, "m": 2}], 1, [{"m": 2}], id="none-values-dropped"),
        pytest.param(["x", {"m": 2}], 2, [{}, {"m": 2}], id="non-dict-entry-empty"),
        pytest.param(None, 2, [{}, {}], id="absent"),
        pytest.param([], 2, [{}, {}], id="empty-list"),
    ],
)
def test_instruction_kwargs(raw: JSON, count: int, kwargs: list[dict[str, JSON]]) -> None:
    """Arguments are padded, cut and cleaned to one dict per instruction."""
    assert instruction_kwargs(raw, count) == kwargs


def test_options_win_over_the_label_and_defaults_are_slimes() -> None:
    """Label-object options override a dict label's fields; prompt_text defaults to ''."""
    found = read_instructions({"instruction_id_list": ["x:y"], "record_id": 3}, {"record_id": 7})
    assert found is not None
    assert (found.ids, found.kwargs, found.prompt_text, found.record_id) == (("x:y",), ({},), "", 7)


def test_no_instructions_reads_as_none() -> None:
    """A label naming no instruction gives None (the scorer's error, SLIME's 0.0)."""
    assert read_instructions({"instruction_id_list": [" "]}, {}) is None
    assert read_instructions("gold", {}) is None
