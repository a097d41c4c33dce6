"""Reading the group endpoint's body."""

from __future__ import annotations

import pytest

from reward_service.contracts.group import group_from_json
from reward_service.errors import BadRequest, PayloadTooLarge


def test_each_response_becomes_a_sample_with_the_groups_prompt_and_label() -> None:
    """The group's prompt and label go with every response, in order."""
    group = group_from_json({"prompt": "q", "label": "4", "responses": ["a", "b"]}, 8)
    assert [(s.prompt, s.response, s.label) for s in group.samples] == [
        ("q", "a", "4"),
        ("q", "b", "4"),
    ]


def test_a_label_object_routes_the_whole_group() -> None:
    """A label object's scorer and options apply to every response."""
    label = {"scorer": "choice", "answer": "B", "choices": ["x", "y"]}
    group = group_from_json({"label": label, "responses": ["B", "A"]}, 8)
    assert {(s.scorer, s.label, tuple(s.options)) for s in group.samples} == {
        ("choice", "B", ("choices",))
    }


@pytest.mark.parametrize(("asked", "ks"), [(None, (1, 3)), (2, (2,)), ([8, 1, 8], (1, 8))])
def test_k_defaults_to_one_and_n(asked: object, ks: tuple[int, ...]) -> None:
    """Without `k`, pass@1 and pass@n; a k or a list of them otherwise, sorted and once each."""
    assert group_from_json({"responses": ["a", "b", "c"], "k": asked}, 8).ks == ks


@pytest.mark.parametrize(
    "body",
    [
        {},
        {"responses": []},
        {"responses": "abc"},
        {"responses": ["a"], "k": 0},
        {"responses": ["a"], "k": [True]},
        {"responses": ["a"], "k": []},
        {"responses": ["a"], "k": "2"},
    ],
)
def test_a_body_that_is_no_group_is_a_bad_request(body: dict[str, object]) -> None:
    """No responses, or a k that is not positive integers: 400 with the shape."""
    with pytest.raises(BadRequest):
        group_from_json(body, 8)


def test_a_group_over_the_cap_is_too_large() -> None:
    """More responses than the batch cap: 413."""
    with pytest.raises(PayloadTooLarge):
        group_from_json({"responses": ["a"] * 9}, 8)
