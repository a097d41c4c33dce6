"""Reading SLIME's body leniently, and per-sample routing from the label."""

from __future__ import annotations

from reward_service.contracts.slime import sample_from_json


def test_missing_fields_get_defaults() -> None:
    """An empty object is a sample with an empty response and no label."""
    sample = sample_from_json({})
    assert (sample.response, sample.label, sample.prompt, sample.scorer) == ("", None, None, None)


def test_label_object_with_scorer_routes() -> None:
    """`scorer` picks the scorer, `answer` is the gold, other keys are options."""
    sample = sample_from_json(
        {"response": "B", "label": {"scorer": "choice", "answer": "B", "choices": ["x", "y"]}}
    )
    assert (sample.scorer, sample.label, dict(sample.options)) == (
        "choice",
        "B",
        {"choices": ["x", "y"]},
    )


def test_ground_truth_is_gold_when_no_answer() -> None:
    """`ground_truth` stands in for `answer`."""
    sample = sample_from_json({"label": {"ground_truth": 3}})
    assert (sample.scorer, sample.label) == (None, 3)


def test_plain_object_label_is_passed_whole() -> None:
    """An object without routing keys reaches the scorer as it is."""
    assert sample_from_json({"label": {"x": 1}}).label == {"x": 1}


def test_non_string_response_is_text() -> None:
    """A numeric or structured response becomes its JSON text."""
    assert sample_from_json({"response": 3}).response == "3"
    assert sample_from_json({"response": ["a"]}).response == '["a"]'


def test_label_object_options_are_never_refused() -> None:
    """Any keys beside the answer, bad values included, become options as they are."""
    label = {"answer": "-5", "extraction": "nope", "source": {"x": [1]}}
    sample = sample_from_json({"response": "-5", "label": label})
    assert dict(sample.options) == {"extraction": "nope", "source": {"x": [1]}}
    assert (sample.label, sample.scorer) == ("-5", None)
