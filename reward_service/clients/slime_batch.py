"""SLIME reward adapter: ``--custom-rm-path reward_service.clients.slime_batch.batched_rm``.

SLIME calls a custom reward function as ``await fn(args, sample)`` for one
sample and ``await fn(args, samples)`` for a group; `batched_rm` accepts both
and answers a reward or a list of rewards in input order.

A group (``--group-rm``: one prompt's answers, one label) goes to the group
endpoint (``<rm-url>/group``) in one request, which grades each distinct
response once; other lists go to the batch endpoint (``<rm-url>/batch``).
Where the service has neither (404/405) the samples are posted one by one, as
SLIME's own ``remote_rm`` does.

A sample whose reward is a fallback (``loss_multiplier`` 0: ``timeout``,
``error``, ``judge_failed``) gets ``sample.remove_sample = True``, which SLIME
reads to zero its loss mask. The group endpoint says so for every answer; the
others say so in their detail objects (an ``--rm-url`` with ``?detail=1``).
With ``--reward-key KEY`` the reward is the detail's ``KEY`` when it holds one
(a composite scorer's component, say ``format``), else the reward.

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
import contextlib
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
    loss_multiplier,
)
from reward_service.launcher.config import LaunchConfig
from reward_service.launcher.urls import batch_url, group_url, resolve_url, scorer_url
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


@dataclass(frozen=True)
class Outcome:
    """What the service said of one sample: its reward, whether a trainer should learn
    from it (`loss_multiplier`), and its detail object when the answer held one."""

    reward: float
    loss_multiplier: float = 1.0
    detail: dict[str, Any] | None = None

    def value(self, key: str | None) -> float:
        """The reward SLIME reads under `--reward-key key`: the detail's `key` if a number."""
        found = self.detail.get(key) if key and self.detail else None
        if isinstance(found, int | float) and not isinstance(found, bool):
            return float(found)
        return self.reward


FALLBACK = Outcome(FALLBACK_REWARD)
"""A sample the service would not grade: the fallback reward, not masked (as before masks)."""


def _outcome(reward: float, detail: Any) -> Outcome:
    """An outcome from a reward and, when the answer held one, its detail object."""
    if not isinstance(detail, dict):
        return Outcome(reward)
    return Outcome(reward, loss_multiplier(detail), detail)


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
        self._has_group: dict[str, bool] = {}
        self._unroutable_warned = False

    async def __aenter__(self) -> RewardClient:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self._http.aclose()

    async def score(self, samples: Sequence[Any]) -> list[float]:
        """One reward per sample, in order; `ServiceUnavailable` if the service is down."""
        return [outcome.reward for outcome in await self.grade(samples)]

    async def grade(self, samples: Sequence[Any], *, group: bool = False) -> list[Outcome]:
        """One outcome per sample, in order; `ServiceUnavailable` if the service is down.

        With `group` (one prompt's answers, as SLIME's `--group-rm` passes them) the
        samples go to the group endpoint when they share prompt, label and URL.
        """
        outcomes = [FALLBACK] * len(samples)
        items = [self._item(index, sample) for index, sample in enumerate(samples)]
        sent = [item for item in items if item is not None]
        if group and len(sent) > 1 and await self._score_group(sent, outcomes):
            return outcomes
        by_url: dict[str, list[_Item]] = defaultdict(list)
        for item in sent:
            by_url[item.url].append(item)
        chunks = [
            chunk[start : start + BATCH_SIZE]
            for chunk in by_url.values()
            for start in range(0, len(chunk), BATCH_SIZE)
        ]
        await asyncio.gather(*(self._score_chunk(chunk, outcomes) for chunk in chunks))
        return outcomes

    async def _score_group(self, items: list[_Item], outcomes: list[Outcome]) -> bool:
        """Grade `items` as one group, if they are one and the service has the endpoint;
        False when they must go another way."""
        url = items[0].url
        first = items[0].body
        same = all(
            i.url == url
            and i.body["prompt"] == first["prompt"]
            and i.body["label"] == first["label"]
            for i in items
        )
        if not same or len(items) > BATCH_SIZE or not self._has_group.get(url, True):
            return False
        body = {**first, "responses": [i.body["response"] for i in items]}
        del body["response"]
        try:
            answer = await self._http.post(group_url(url), body)
            rewards = batch_values(answer, len(items))
            masks = batch_values(answer, len(items), "loss_multipliers")
            details = answer.get("details") or [None] * len(items)
            found = [
                Outcome(
                    as_reward(reward), as_reward(mask), detail if isinstance(detail, dict) else None
                )
                for reward, mask, detail in zip(rewards, masks, details, strict=True)
            ]
        except RequestRejected as exc:
            if exc.status_code in _NO_BATCH:
                self._has_group[url] = False
                logger.info("%s has no group endpoint; sending groups as batches", redact(url))
                return False
            failure = _failure(exc)
        except (UnexpectedAnswer, ValueError) as exc:
            failure = f"got an unexpected answer ({exc})"
        else:
            for item, outcome in zip(items, found, strict=True):
                outcomes[item.index] = outcome
            return True
        logger.warning("group of %d %s; sending it as a batch", len(items), failure)
        return False

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

    async def _score_chunk(self, items: list[_Item], outcomes: list[Outcome]) -> None:
        url = items[0].url
        values = await self._score_batch(url, items) if self._has_batch.get(url, True) else None
        if values is None:
            values = await asyncio.gather(*(self._score_one(item) for item in items))
        for item, outcome in zip(items, values, strict=True):
            outcomes[item.index] = outcome

    async def _score_batch(self, url: str, items: list[_Item]) -> list[Outcome] | None:
        """The outcomes of one batch request; None when the samples must go one by one."""
        try:
            answer = await self._http.post(batch_url(url), {"items": [i.body for i in items]})
            values = batch_values(answer, len(items))
            details = answer.get("details")
            if not isinstance(details, list) or len(details) != len(items):
                details = [None] * len(items)
        except RequestRejected as exc:
            if exc.status_code in _NO_BATCH:
                self._has_batch[url] = False
                logger.info("%s has no batch endpoint; posting samples one by one", redact(url))
                return None
            failure = _failure(exc)
        except UnexpectedAnswer as exc:
            failure = _failure(exc)
        else:
            return [
                self._outcome(i.index, v, detail)
                for i, v, detail in zip(items, values, details, strict=True)
            ]
        logger.warning("batch of %d %s; posting one by one", len(items), failure)
        return None

    async def _score_one(self, item: _Item) -> Outcome:
        try:
            answer = await self._http.post(item.url, item.body)
        except (RequestRejected, UnexpectedAnswer) as exc:
            logger.warning("sample %d %s; reward %s", item.index, _failure(exc), FALLBACK_REWARD)
            return FALLBACK
        return self._outcome(item.index, answer, answer)

    @staticmethod
    def _outcome(index: int, value: Any, detail: Any) -> Outcome:
        try:
            reward = as_reward(value.get("reward") if isinstance(value, dict) else value)
        except UnexpectedAnswer:
            logger.warning(
                "sample %d got %.200r, not a number; reward %s", index, value, FALLBACK_REWARD
            )
            return FALLBACK
        return _outcome(reward, detail)


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
    """SLIME's custom reward hook: a reward for one sample, a list for a list (a group,
    sent to the group endpoint when it is one).

    With ``--reward-key KEY`` set, each reward is ``{KEY: value}``, as SLIME
    then reads it: the detail's ``KEY`` where it has one, else the reward.
    A sample whose reward is a fallback gets ``remove_sample = True``. With
    ``inplace_set_reward_field`` (newer SLIME rollouts) each ``sample.reward`` is
    set and nothing is returned.
    """
    group = samples if isinstance(samples, list) else [samples]
    key = getattr(args, "reward_key", None)
    outcomes = await _client(args).grade(group, group=isinstance(samples, list))
    for sample, outcome in zip(group, outcomes, strict=True):
        if outcome.loss_multiplier == 0.0:
            _remove(sample)
    rewards: list[Reward] = [
        {key: outcome.value(key)} if key else outcome.reward for outcome in outcomes
    ]
    if inplace_set_reward_field:
        for sample, reward in zip(group, rewards, strict=True):
            sample.reward = reward
        return None
    return rewards if isinstance(samples, list) else rewards[0]


def _remove(sample: Any) -> None:
    """Mark `sample` as one SLIME must not learn from (its loss mask zeroed)."""
    with contextlib.suppress(AttributeError):  # a sample type without the field: unmarked
        sample.remove_sample = True


async def aclose() -> None:
    """Close this event loop's pooled clients (at shutdown, or between tests)."""
    for client in _clients.pop(asyncio.get_running_loop(), {}).values():
        await client.aclose()
