"""The one error tree of reward-service.

    RewardServiceError
     ├── ClientError            a request the client must change
     │    ├── BadRequest          body is not a JSON object, bad field, bad scorer option
     │    ├── Unauthorized        missing or wrong API token
     │    ├── UnknownScorer       no scorer of that name
     │    ├── UnknownEnvironment  no NeMo Gym environment of that name, or none set for root paths
     │    ├── RequestTimeout      body not received within body_timeout_s
     │    ├── ClientGone          the client hung up before its body or answer
     │    └── PayloadTooLarge     body or batch over its cap
     ├── Overloaded             queue or body-byte budget full, or draining; retry later
     │    └── JudgeUnavailable    the judge endpoint is down and the outage policy says wait
     ├── PoolError              a task the grading pool did not run to its end (engine-internal)
     │    ├── PoolClosed          the pool is closing: the task was not run and will not be
     │    ├── DeadlineExceeded    the task ran past its deadline; its worker was killed
     │    ├── WorkerDied          the worker running the task died, on every attempt
     │    └── TaskFailed          the task raised in its worker, or could not be sent to one
     ├── ScorerLoadError        a scorer or plugin failed to load (start-up)
     ├── InvalidSetting         a setting names an unknown scorer, option or value (start-up)
     └── SandboxUnavailable     the code sandbox cannot start or lacks a required layer (start-up)

The classes carry no HTTP status: `reward_service.server.error_status` maps
each to its status code, the only place that does. A `PoolError` never
reaches it: the engine turns each into an answer's status or `Overloaded`.
The parts that run outside the server define their own subclasses of
`RewardServiceError` beside their code (`subcommands.ConfigError`,
`clients.http.RequestRejected`, ...).
"""

from __future__ import annotations

from collections.abc import Sequence


class RewardServiceError(Exception):
    """Base of every error reward-service raises on purpose."""


class ClientError(RewardServiceError):
    """The request itself is at fault."""


class BadRequest(ClientError):
    """The body, a field of it or a scorer option cannot be read."""


class Unauthorized(ClientError):
    """The request lacks the API token, or carries another."""

    def __init__(self) -> None:
        super().__init__("unauthorized")


class UnknownScorer(ClientError):
    """No scorer of that name; the message lists the known ones."""

    def __init__(self, name: str, known: Sequence[str]) -> None:
        super().__init__(f"unknown scorer {name!r}; known scorers: {', '.join(known)}")
        self.name = name
        self.known = list(known)


class UnknownEnvironment(ClientError):
    """No NeMo Gym environment of that name (or none set for the root paths); the message
    lists the known ones."""


class RequestTimeout(ClientError):
    """The body did not arrive in time; the connection is closed after the answer."""


class ClientGone(ClientError):
    """The client closed its connection mid-body or before its answer: nobody is left to
    answer, and its grading is dropped."""


class PayloadTooLarge(ClientError):
    """The body, or the number of items in it, is over its cap."""


class Overloaded(RewardServiceError):
    """Too much work queued (or shutting down): the client should retry later."""

    def __init__(self, message: str, retry_after_s: int) -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s


class JudgeUnavailable(Overloaded):
    """The judge endpoint cannot answer now (circuit open, outage) and the deployment chose
    503 + Retry-After over the fallback reward (`REWARD_JUDGE__ON_OUTAGE=retry_later`)."""


class PoolError(RewardServiceError):
    """The grading pool did not run a task to its end (`grading.pool`); the engine catches
    exactly these."""


class PoolClosed(PoolError):
    """The pool is closing: the task was not run and will not be."""


class DeadlineExceeded(PoolError):
    """The task ran past its deadline; its worker was killed."""


class WorkerDied(PoolError):
    """The worker running the task died, on every attempt."""


class TaskFailed(PoolError):
    """The task raised in its worker (the message names the error), or could not be pickled
    to one (a label nested past the recursion limit)."""


class ScorerLoadError(RewardServiceError):
    """A scorer (built-in or plugin) could not be imported or built."""


class InvalidSetting(RewardServiceError):
    """A setting the registry cannot honour (an unknown scorer, option or value)."""


class SandboxUnavailable(RewardServiceError):
    """The sandbox for model-written programs cannot start, or a required layer is not active."""
