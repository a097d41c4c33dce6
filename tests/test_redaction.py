"""URLs made safe to print."""

from __future__ import annotations

from reward_service.redaction import redact


def test_redact_masks_tokens_and_passwords() -> None:
    """A path token and a URL password never reach a printed line."""
    assert redact("http://u:pw@rm:8000/t/s3cret/score") == "http://u:***@rm:8000/t/***/score"


def test_redact_leaves_a_plain_url_alone() -> None:
    """A URL with neither token nor password is printed as it is, query included."""
    assert redact("http://rm:8000/score/exact?detail=1") == "http://rm:8000/score/exact?detail=1"
