"""verl reward function backed by reward-service.

    RM=$(python -c 'import reward_service.clients.verl as m; print(m.__file__)')
    python -m verl.trainer.main_ppo ... \\
        custom_reward_function.path=$RM custom_reward_function.name=compute_score

verl calls `compute_score` once per sample, from its reward manager's
threads or worker processes. Each process keeps one pooled `RewardClient`,
built on first use and rebuilt after a `fork` (a child must not share its
parent's sockets). The service is at `REWARD_SERVICE_URL` (default
`http://127.0.0.1:8000`), with `REWARD_SERVICE_TOKEN` as its API token if
set. `extra_info["scorer"]` picks the scorer; a `ground_truth` object with a
`scorer` key routes the sample the same way, as the service does for SLIME.

The answer is `{"score", "status", "scorer", "loss_multiplier"}`, the same
keys for every sample, since verl gathers each key into one list per batch
(`reward_extra_info`); `loss_multiplier` is 0.0 where the score is a fallback
(`timeout`, `error`, `judge_failed`), for a trainer that masks such samples. A service that
stays down raises `RewardServiceUnavailable`: training stops rather than
learn from made-up rewards.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping
from typing import Any

from reward_service.clients.http import RewardClient, loss_multiplier

URL_VARIABLE = "REWARD_SERVICE_URL"
TOKEN_VARIABLE = "REWARD_SERVICE_TOKEN"
DEFAULT_URL = "http://127.0.0.1:8000"

_lock = threading.Lock()
_client: RewardClient | None = None


def _new_client() -> RewardClient:
    """The only place this module reads the environment."""
    url = os.environ.get(URL_VARIABLE) or DEFAULT_URL
    return RewardClient(url, api_token=os.environ.get(TOKEN_VARIABLE) or None)


def _shared_client() -> RewardClient:
    global _client
    with _lock:
        if _client is None:
            _client = _new_client()
        return _client


def _forget_after_fork() -> None:
    """In a forked child: drop the parent's client unclosed (its sockets are the parent's)."""
    global _client, _lock
    _client = None
    _lock = threading.Lock()


os.register_at_fork(after_in_child=_forget_after_fork)


def close() -> None:
    """Close this process's client; the next call builds a new one from the environment."""
    global _client
    with _lock:
        client, _client = _client, None
    if client is not None:
        client.close()


def _plain(value: Any) -> Any:
    """`value` with numpy arrays and scalars (parquet columns) turned into JSON types."""
    if isinstance(value, Mapping):
        return {str(key): _plain(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(item) for item in value]
    if hasattr(value, "tolist") and callable(value.tolist):
        return _plain(value.tolist())
    return value


def compute_score(
    data_source: Any,
    solution_str: str,
    ground_truth: Any,
    extra_info: Mapping[str, Any] | None = None,
    **kwargs: Any,
) -> dict[str, Any]:
    """verl's `custom_reward_function`: grade one response through the service."""
    scorer = (extra_info or {}).get("scorer")
    detail = _shared_client().score(
        solution_str,
        _plain(ground_truth),
        scorer=scorer if isinstance(scorer, str) and scorer else None,
        detail=True,
    )
    return {
        "score": detail["reward"],
        "status": detail["status"],
        "scorer": detail["scorer"],
        "loss_multiplier": loss_multiplier(detail),
    }
