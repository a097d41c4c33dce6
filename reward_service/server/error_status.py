"""The HTTP status of each error the server answers: the one place errors meet status codes.

The tree itself is drawn in `reward_service.errors`; its classes carry no
status. Every subclass of `ClientError`, and `Overloaded`, has a row of its own
here (`tests/server/test_error_status.py` fails on one that is missing); any
other `RewardServiceError` reaching a request is the service's fault, 500.
"""

from __future__ import annotations

from reward_service.errors import (
    BadRequest,
    ClientError,
    ClientGone,
    JudgeUnavailable,
    Overloaded,
    PayloadTooLarge,
    RequestTimeout,
    RewardServiceError,
    Unauthorized,
    UnknownEnvironment,
    UnknownScorer,
)

STATUS: dict[type[RewardServiceError], int] = {
    BadRequest: 400,  # body is not a JSON object, a bad field, a bad scorer option
    Unauthorized: 401,  # missing or wrong API token
    UnknownScorer: 404,  # no scorer of that name
    UnknownEnvironment: 404,  # no NeMo Gym environment of that name, or none for root paths
    RequestTimeout: 408,  # body not received within body_timeout_s
    PayloadTooLarge: 413,  # body or batch over its cap
    ClientGone: 499,  # the client hung up before its body or answer (nginx's code)
    Overloaded: 503,  # queue or body-byte budget full, or draining: retry after Retry-After
    JudgeUnavailable: 503,  # the judge is down and the deployment waits for it: Retry-After
    ClientError: 400,  # a client error without a row of its own (the test forbids one)
}

SERVER_FAULT = 500
"""The status of a `RewardServiceError` with no row: not the client's doing."""


def status_of(error: RewardServiceError) -> int:
    """The status `error` is answered with: its class's row, or the nearest ancestor's, or 500."""
    for cls in type(error).__mro__:
        status = STATUS.get(cls)
        if status is not None:
            return status
    return SERVER_FAULT
