"""The one mapping of the error tree to HTTP status codes (`server/error_status.py`)."""

from __future__ import annotations

import pytest

import reward_service.server.app  # noqa: F401  (loads every error the server can raise)
from reward_service import errors
from reward_service.errors import ClientError, Overloaded, RewardServiceError
from reward_service.server.error_status import SERVER_FAULT, STATUS, status_of


def _below(cls: type[RewardServiceError]) -> set[type[RewardServiceError]]:
    found: set[type[RewardServiceError]] = set()
    for sub in cls.__subclasses__():
        found |= {sub, *_below(sub)}
    return found


ANSWERED = sorted(_below(ClientError) | {Overloaded, *_below(Overloaded)}, key=lambda c: c.__name__)
"""Every concrete error the server answers a client with: each needs its own row."""


def test_the_tree_is_walked() -> None:
    """The walk finds the six client errors and Overloaded `errors.py` draws."""
    names = {cls.__name__ for cls in ANSWERED}
    assert {
        "BadRequest",
        "Unauthorized",
        "UnknownScorer",
        "RequestTimeout",
        "ClientGone",
        "PayloadTooLarge",
        "Overloaded",
    } <= names


@pytest.mark.parametrize("cls", ANSWERED, ids=lambda c: c.__name__)
def test_every_client_error_and_overloaded_has_a_row_of_its_own(cls: type) -> None:
    """A new subclass of ClientError or Overloaded fails here until the mapping names it."""
    assert cls in STATUS, f"{cls.__module__}.{cls.__name__} has no status in STATUS"


@pytest.mark.parametrize(
    ("cls", "status"),
    [
        (errors.BadRequest, 400),
        (errors.Unauthorized, 401),
        (errors.UnknownScorer, 404),
        (errors.RequestTimeout, 408),
        (errors.PayloadTooLarge, 413),
        (errors.ClientGone, 499),
        (errors.Overloaded, 503),
    ],
)
def test_the_statuses(cls: type[RewardServiceError], status: int) -> None:
    assert STATUS[cls] == status


def test_client_errors_are_4xx_and_the_rest_is_the_server_s_fault() -> None:
    """Client errors map below 500; start-up errors reaching a request are a 500."""
    assert all(
        400 <= status < 500 for cls, status in STATUS.items() if issubclass(cls, ClientError)
    )
    assert status_of(errors.ScorerLoadError("x")) == SERVER_FAULT == 500
    assert status_of(errors.InvalidSetting("x")) == 500
    assert status_of(errors.SandboxUnavailable("x")) == 500


def test_the_error_classes_carry_no_status() -> None:
    """The mapping is the only place: no class of the tree has a `status_code` of its own."""
    assert [cls.__name__ for cls in _below(RewardServiceError) if hasattr(cls, "status_code")] == []


def test_a_subclass_without_a_row_gets_its_nearest_ancestor_s_status() -> None:
    class Planted(errors.PayloadTooLarge):
        pass

    assert status_of(Planted("too big")) == 413
