"""The one error tree of reward-service.

    RewardServiceError
     ├── ClientError            a request the client must change (4xx)
     │    ├── BadRequest          400: body is not a JSON object, bad field, bad scorer option
     │    ├── Unauthorized        401: missing or wrong API token
     │    ├── UnknownScorer       404: no scorer of that name
     │    ├── RequestTimeout      408: body not received within body_timeout_s
     │    ├── ClientGone          499: the client hung up before its body arrived
     │    └── PayloadTooLarge     413: body or batch over its cap
     ├── Overloaded             503: queue or body-byte budget full, or draining; retry later
     ├── ScorerLoadError        a scorer or plugin failed to load (start-up)
     ├── InvalidSetting         a setting names an unknown scorer, option or value (start-up)
     └── SandboxUnavailable     the code sandbox cannot start or lacks a required layer (start-up)

`reward_service.server.app` is the only place that maps these to HTTP answers.
"""

from __future__ import annotations

from collections.abc import Sequence


class RewardServiceError(Exception):
    """Base of every error reward-service raises on purpose."""

    status_code = 500


class ClientError(RewardServiceError):
    """The request itself is at fault."""

    status_code = 400


class BadRequest(ClientError):
    status_code = 400


class Unauthorized(ClientError):
    status_code = 401

    def __init__(self) -> None:
        super().__init__("unauthorized")


class UnknownScorer(ClientError):
    status_code = 404

    def __init__(self, name: str, known: Sequence[str]) -> None:
        super().__init__(f"unknown scorer {name!r}; known scorers: {', '.join(known)}")
        self.name = name
        self.known = list(known)


class RequestTimeout(ClientError):
    """The body did not arrive in time; the connection is closed after the answer."""

    status_code = 408


class ClientGone(ClientError):
    """The client closed its connection mid-body: nobody is left to answer (nginx's 499)."""

    status_code = 499


class PayloadTooLarge(ClientError):
    status_code = 413


class Overloaded(RewardServiceError):
    """Too much work queued (or shutting down): the client should retry later."""

    status_code = 503

    def __init__(self, message: str, retry_after_s: int) -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s


class ScorerLoadError(RewardServiceError):
    """A scorer (built-in or plugin) could not be imported or built."""


class InvalidSetting(RewardServiceError):
    """A setting the registry cannot honour (an unknown scorer, option or value)."""


class SandboxUnavailable(RewardServiceError):
    """The sandbox for model-written programs cannot start, or a required layer is not active."""
