"""SLIME reward adapter: ``--custom-rm-path reward_service.clients.slime_batch.batched_rm``.

SLIME calls a custom reward function as ``await fn(args, sample)`` for one
sample and ``await fn(args, samples)`` for a group; `batched_rm` accepts both
and answers a reward or a list of rewards in input order.

A group goes to the batch endpoint (``<rm-url>/batch``) in one request; where
the service has none (404/405) the samples are posted one by one, as SLIME's
own ``remote_rm`` does.

Per-sample choice works as in SLIME's in-process grading:
``sample.metadata["rm_type"]`` (``gpqa``, ``boxed_f1``, any scorer name;
``remote_rm`` keeps the URL's scorer) becomes the label object's ``scorer``
and the rest of the metadata its options (``choices``, ``correct_letter``...),
so one run mixes reward types, even within one batch request.
The instruction-following fields (``instruction_id_list``, ``kwargs``,
``prompt_text``, ``record_id``, as SLIME's ``ifbench`` reads them) go into the
label object whenever the metadata has ``instruction_id_list``, with or
without ``rm_type``, so an ``--rm-url .../score/ifbench`` grades them.
``metadata["reward_options"]`` (a dict) adds options to any sample and wins
over plain metadata; the keys of a label that is already a label object win
over both. ``metadata["scorer"]`` sends a sample to ``/score/<scorer>``
rather than the URL. Requests go through `reward_service.clients.http`, whose
`RetryPolicy` retries overload (429/503, waiting at least ``Retry-After``),
gateway errors and dropped connections a bounded number of times; past that
the service counts as down and `ServiceUnavailable` stops the rollout rather
than train on made-up rewards. A sample the service will not grade (refused,
a 500, bad label, an answer that is not a number) gets `FALLBACK_REWARD` and
a logged warning, and the rest of its group is unaffected.

The URL is ``args.rm_url``, else `LaunchConfig.from_env()`; attempts and the
per-attempt timeout are ``SLIME_REWARD_ATTEMPTS`` and ``SLIME_REWARD_TIMEOUT_S``.
"""

from __future__ import annotations

import asyncio
import json
import logging
import weakref
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from reward_service.clients.http import (
    AsyncRewardClient,
    RequestRejected,
    RetryPolicy,
    RewardServiceUnavailable,
    UnexpectedAnswer,
    as_reward,
    batch_values,
)
from reward_service.launcher.config import LaunchConfig
from reward_service.launcher.urls import batch_url, resolve_url, scorer_url
from reward_service.redaction import redact

logger = logging.getLogger(__name__)

FALLBACK_REWARD = 0.0
BATCH_SIZE = 256
"""Samples per batch request; well under the service's default cap of 1024."""
MAX_CONNECTIONS = 64
"""As SLIME's own client: a rollout process never holds more."""

ServiceUnavailable = RewardServiceUnavailable
"""The reward service did not answer within the allowed attempts."""

_ROUTING_KEYS = frozenset({"answer", "ground_truth", "scorer"})
"""Keys of a label object that are not options: plain metadata never sets them."""
_ADAPTER_KEYS = frozenset({"rm_type", "reward_options"})
_URL_SCORER = "remote_rm"
_INSTRUCTION_KEYS = ("instruction_id_list", "kwargs", "prompt_text", "record_id")
"""SLIME's `ifbench` metadata: always sent, so `/score/ifbench` grades without an rm_type."""


def _label_options(metadata: dict[str, Any]) -> dict[str, Any]:
    """The label-object keys a sample's metadata asks for: scorer and options."""
    options = metadata.get("reward_options")
    options = dict(options) if isinstance(options, dict) else {}
    if "instruction_id_list" in metadata:
        options = {**{k: metadata[k] for k in _INSTRUCTION_KEYS if k in metadata}, **options}
    rm_type = metadata.get("rm_type")
    rm_type = rm_type.strip() if isinstance(rm_type, str) else ""
    if rm_type and rm_type != _URL_SCORER:
        plain = {k: v for k, v in metadata.items() if k not in _ROUTING_KEYS | _ADAPTER_KEYS}
        options = {**plain, **options, "scorer": rm_type}
    return options


def _with_options(label: Any, options: dict[str, Any]) -> dict[str, Any]:
    """The label as a label object carrying scorer options from the sample's metadata."""
    if isinstance(label, dict) and (_ROUTING_KEYS & label.keys()):
        return {**options, **label}
    return {**options, "answer": label}


_NO_BATCH = frozenset({404, 405})


@dataclass(frozen=True)
class _Item:
    index: int
    url: str
    body: dict[str, Any]


def _failure(exc: RequestRejected | UnexpectedAnswer) -> str:
    """What went wrong, for a warning: the refusal with its status, or the answer."""
    if isinstance(exc, RequestRejected):
        return f"refused (HTTP {exc.status_code}: {exc.message:.200})"
    return f"got an unexpected answer ({exc})"


class RewardClient:
    """Scores SLIME samples against one scoring URL, over one pooled HTTP client."""

    def __init__(
        self,
        url: str,
        *,
        attempts: int = 8,
        timeout_s: float = 120.0,
        backoff_s: float = 1.0,
    ) -> None:
        self.url = url
        retry = RetryPolicy(attempts=attempts, backoff_s=backoff_s, max_wait_s=30.0)
        self._http = AsyncRewardClient(
            "", timeout_s=timeout_s, max_connections=MAX_CONNECTIONS, retry=retry
        )
        self._has_batch: dict[str, bool] = {}
        self._unroutable_warned = False

    async def __aenter__(self) -> RewardClient:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self._http.aclose()

    async def score(self, samples: Sequence[Any]) -> list[float]:
        """One reward per sample, in order; `ServiceUnavailable` if the service is down."""
        rewards = [FALLBACK_REWARD] * len(samples)
        groups: dict[str, list[_Item]] = defaultdict(list)
        for index, sample in enumerate(samples):
            item = self._item(index, sample)
            if item is not None:
                groups[item.url].append(item)
        chunks = [
            items[start : start + BATCH_SIZE]
            for items in groups.values()
            for start in range(0, len(items), BATCH_SIZE)
        ]
        await asyncio.gather(*(self._score_chunk(chunk, rewards) for chunk in chunks))
        return rewards

    def _item(self, index: int, sample: Any) -> _Item | None:
        metadata = getattr(sample, "metadata", None)
        metadata = metadata if isinstance(metadata, dict) else {}
        try:
            body = {"prompt": sample.prompt, "response": sample.response, "label": sample.label}
            options = _label_options(metadata)
            if options:
                body["label"] = _with_options(sample.label, options)
            json.dumps(body)
        except (AttributeError, TypeError, ValueError) as exc:
            logger.warning("sample %d cannot be sent (%s); reward %s", index, exc, FALLBACK_REWARD)
            return None
        scorer = metadata.get("scorer")
        url = self.url
        if isinstance(scorer, str) and scorer:
            routed = scorer_url(self.url, scorer)
            if routed is not None:
                url = routed
            elif not self._unroutable_warned:
                self._unroutable_warned = True
                logger.warning(
                    "metadata names scorer %r but %s is not a /score URL; using it as is",
                    scorer,
                    redact(self.url),
                )
        return _Item(index, url, body)

    async def _score_chunk(self, items: list[_Item], rewards: list[float]) -> None:
        url = items[0].url
        values = await self._score_batch(url, items) if self._has_batch.get(url, True) else None
        if values is None:
            values = await asyncio.gather(*(self._score_one(item) for item in items))
        for item, reward in zip(items, values, strict=True):
            rewards[item.index] = reward

    async def _score_batch(self, url: str, items: list[_Item]) -> list[float] | None:
        """The rewards from one batch request; None when the samples must go one by one."""
        try:
            answer = await self._http.post(batch_url(url), {"items": [i.body for i in items]})
            values = batch_values(answer, len(items))
        except RequestRejected as exc:
            if exc.status_code in _NO_BATCH:
                self._has_batch[url] = False
                logger.info("%s has no batch endpoint; posting samples one by one", redact(url))
                return None
            failure = _failure(exc)
        except UnexpectedAnswer as exc:
            failure = _failure(exc)
        else:
            return [self._reward(i.index, v) for i, v in zip(items, values, strict=True)]
        logger.warning("batch of %d %s; posting one by one", len(items), failure)
        return None

    async def _score_one(self, item: _Item) -> float:
        try:
            answer = await self._http.post(item.url, item.body)
        except (RequestRejected, UnexpectedAnswer) as exc:
            logger.warning("sample %d %s; reward %s", item.index, _failure(exc), FALLBACK_REWARD)
            return FALLBACK_REWARD
        return self._reward(item.index, answer)

    @staticmethod
    def _reward(index: int, value: Any) -> float:
        try:
            return as_reward(value.get("reward") if isinstance(value, dict) else value)
        except UnexpectedAnswer:
            logger.warning(
                "sample %d got %.200r, not a number; reward %s", index, value, FALLBACK_REWARD
            )
            return FALLBACK_REWARD


_clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[str, RewardClient]] = (
    weakref.WeakKeyDictionary()
)


def _client(args: Any) -> RewardClient:
    config = LaunchConfig.from_env()
    url = getattr(args, "rm_url", None) or resolve_url(config)
    by_url = _clients.setdefault(asyncio.get_running_loop(), {})
    if url not in by_url:
        by_url[url] = RewardClient(url, attempts=config.attempts, timeout_s=config.timeout_s)
    return by_url[url]


Reward = float | dict[str, float]


async def batched_rm(
    args: Any, samples: Any, *, inplace_set_reward_field: bool = False, **kwargs: Any
) -> Reward | list[Reward] | None:
    """SLIME's custom reward hook: a reward for one sample, a list for a list.

    With ``--reward-key KEY`` set, each reward is ``{KEY: reward}``, as SLIME
    then reads it. With ``inplace_set_reward_field`` (newer SLIME rollouts)
    each ``sample.reward`` is set and nothing is returned.
    """
    group = samples if isinstance(samples, list) else [samples]
    key = getattr(args, "reward_key", None)
    rewards: list[Reward] = [
        {key: reward} if key else reward for reward in await _client(args).score(group)
    ]
    if inplace_set_reward_field:
        for sample, reward in zip(group, rewards, strict=True):
            sample.reward = reward
        return None
    return rewards if isinstance(samples, list) else rewards[0]


async def aclose() -> None:
    """Close this event loop's pooled clients (at shutdown, or between tests)."""
    for client in _clients.pop(asyncio.get_running_loop(), {}).values():
        await client.aclose()
