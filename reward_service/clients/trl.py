"""TRL reward functions backed by reward-service, for `GRPOTrainer` (and open-r1 on top of it).

    from reward_service.clients.trl import ServiceRewards

    rewards = ServiceRewards("http://reward:8000", scorer="open_r1", label_column="solution")
    trainer = GRPOTrainer(
        model=model, train_dataset=dataset,
        reward_funcs=rewards.components("accuracy", "format", "tag_count"),
        args=GRPOConfig(reward_weights=[1.0, 1.0, 1.0], ...),
    )

TRL calls each reward function as `f(prompts=..., completions=..., **columns)` with one
list entry per completion and each dataset column as a keyword, and reads back one float
per completion, or None where the reward does not apply. A `ServiceRewards` makes such
functions: `reward()` answers the scorer's reward, `component(name)` one named component
of a composite scorer (`REWARD_COMPOSITES`), so that TRL's `reward_weights` (and its
`normalize_then_sum`) weigh the components as they weigh open-r1's separate functions.

One trainer call is one HTTP request: the completions go to `/score[/<scorer>]/batch`
with `?detail=1` (in chunks only past `batch_size`), and every function of one
`ServiceRewards` called with the same batch reads the answer its first call fetched, so
three components cost one request and one grading per completion. A function called a
second time with the same batch asks again (a batch that repeats is graded again).
The plain functions pickle, and copies pickled together share one request in turn, as
TRL's AsyncGRPOTrainer needs (it hands them to a spawned rollout process).

A completion whose reward is a fallback (`loss_multiplier` 0: `timeout`, `error`,
`judge_failed`) gets None from every function of the scorer. TRL leaves a None out of
the weighted sum; a completion for which every reward function answers None is
unscorable to TRL, left out of its group's baseline and given no advantage: the mask. A
component that a sample's answer does not hold (a label object routing that sample to a
scorer that is not the composite) is None too: TRL's "does not apply".

Completions are text, or conversational: a list of messages, of which the last
assistant message is graded (tool results are not the model's words; a last turn cut
short answers nothing, whatever an earlier turn said), its `reasoning_content` put back
before it in a `<think>` block, as the model wrote it, when the chat template parsed it
out. The label of each completion is its dataset row's
`label_column`; a label object there routes or configures that sample as on `/score`.

Requests go through `reward_service.clients.http`, whose `RetryPolicy` retries overload
(429/503, waiting at least `Retry-After`), gateway errors and dropped connections; a
service that stays down raises `RewardServiceUnavailable`, which stops training rather
than feed it made-up rewards. This module imports neither trl nor torch.
"""

from __future__ import annotations

import asyncio
import os
import threading
import weakref
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from reward_service.clients.http import (
    JSON,
    AsyncRewardClient,
    RetryPolicy,
    RewardClient,
    as_reward,
    loss_multiplier,
)

Rewards = list[float | None]
RewardFunction = Callable[..., Rewards] | Callable[..., Awaitable[Rewards]]
"""What `GRPOTrainer` takes in `reward_funcs`: a plain or an async callable."""

BATCH_SIZE = 1024
"""Completions per request: the service's default cap, so a trainer call is one request."""
MASKED_METRIC = "reward_service/masked"
"""The share of a batch whose reward is a fallback, logged through TRL's `log_metric`."""
STATUS_COLUMN = "reward_service/status"
"""Each completion's grading status, logged through TRL's `log_extra` (the completions table)."""
_TRAINER_KEYWORDS = frozenset(
    {"completion_ids", "trainer_state", "log_extra", "log_metric", "environments"}
)
"""What `GRPOTrainer` passes its reward functions besides prompts, completions and columns."""


def _text(content: Any) -> str:
    """A message's content as text: a string, or the text of its parts (multimodal messages)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            part.get("text") or "" if isinstance(part, Mapping) else str(part) for part in content
        )
    return ""


def response_text(completion: Any) -> str:
    """What the service grades of one TRL completion: the text itself, or the last
    assistant message, its parsed-out reasoning back in a `<think>` block."""
    if isinstance(completion, str):
        return completion
    messages = [completion] if isinstance(completion, Mapping) else completion
    if not isinstance(messages, Sequence):
        raise TypeError(f"a completion is text or a list of messages, not {type(completion)}")
    for message in reversed(messages):
        if not isinstance(message, Mapping) or message.get("role", "assistant") != "assistant":
            continue
        content = _text(message.get("content"))
        reasoning = _text(message.get("reasoning_content") or message.get("thinking"))
        return f"<think>\n{reasoning}\n</think>\n{content}" if reasoning else content
    return ""


def _prompt(prompt: Any) -> JSON:
    """The prompt as the service reads it: text, or the conversation's roles and texts (an
    image in a multimodal prompt is not JSON; the reward model reads the texts)."""
    if isinstance(prompt, str) or prompt is None:
        return prompt
    if isinstance(prompt, Sequence):
        return [
            {"role": m.get("role"), "content": _text(m.get("content"))}
            for m in prompt
            if isinstance(m, Mapping)
        ]
    return str(prompt)


def _value(detail: Mapping[str, JSON], component: str | None) -> float | None:
    """One function's reward from a detail object: None for a fallback, or for a
    component this answer does not hold."""
    if loss_multiplier(detail) == 0.0:
        return None
    if component is None:
        return as_reward(detail["reward"])
    components = detail.get("components")
    value = components.get(component) if isinstance(components, Mapping) else None
    return None if value is None else as_reward(value)


@dataclass
class _Fetched:
    """The answer to the last batch, and which functions have read it."""

    items: list[dict[str, JSON]]
    details: asyncio.Future[list[dict[str, JSON]]] | list[dict[str, JSON]]
    readers: set[str] = field(default_factory=set)

    def serves(self, items: list[dict[str, JSON]], reader: str) -> bool:
        """True (and `reader` counted) when `reader` has not yet read this same batch."""
        if reader in self.readers or self.items != items:
            return False
        self.readers.add(reader)
        return True


class ServiceRewards:
    """Reward functions for TRL's `GRPOTrainer` that grade through one scorer of the service.

    `url` is the service root (`http://host:8000`); `scorer` a scorer or composite name
    (None: the service's default); `label_column` the dataset column holding each
    prompt's label. With `asynchronous` the functions are coroutine functions, which
    TRL runs on its own event loop, concurrently with its other async reward functions.
    """

    def __init__(
        self,
        url: str = "http://127.0.0.1:8000",
        *,
        scorer: str | None = None,
        label_column: str = "solution",
        asynchronous: bool = False,
        api_token: str | None = None,
        timeout_s: float = 120.0,
        retry: RetryPolicy | None = None,
        batch_size: int = BATCH_SIZE,
    ) -> None:
        self.url = url
        self.scorer = scorer
        self.label_column = label_column
        self.asynchronous = asynchronous
        self._client_options: dict[str, Any] = {
            "api_token": api_token,
            "timeout_s": timeout_s,
            "retry": retry,
            "batch_size": batch_size,
            "max_connections": 4,
        }
        self._start()

    def _start(self) -> None:
        """The state of a live object: no client, no batch fetched yet."""
        self._lock = threading.Lock()
        self._fetched: _Fetched | None = None
        self._client: tuple[int, RewardClient] | None = None
        self._async_clients: weakref.WeakKeyDictionary[
            asyncio.AbstractEventLoop, AsyncRewardClient
        ] = weakref.WeakKeyDictionary()

    def __getstate__(self) -> dict[str, Any]:
        """The configuration only: a copy in another process opens its own clients."""
        state = dict(self.__dict__)
        for live in ("_lock", "_fetched", "_client", "_async_clients"):
            del state[live]
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._start()

    def reward(self, name: str | None = None) -> RewardFunction:
        """A function answering the scorer's reward (a composite's combined one); TRL logs
        it as `name`, by default the scorer's name."""
        return self._function(None, name or self.scorer or "reward_service")

    def component(self, component: str, name: str | None = None) -> RewardFunction:
        """A function answering one named component of the composite scorer; TRL logs it
        as `name`, by default the component's name."""
        return self._function(component, name or component)

    def components(self, *names: str) -> list[RewardFunction]:
        """One function per component named, in that order; with no names, every
        component of the composite, in its definition's order, as `/scorers` lists them."""
        return [self.component(name) for name in names or self.composite_components()]

    def composite_components(self) -> list[str]:
        """The composite scorer's component names, as the service lists them."""
        with RewardClient(self.url, **self._client_options) as client:
            listing = client.get("/scorers")
        composites = listing.get("composites") if isinstance(listing, dict) else None
        found = composites.get(self.scorer) if isinstance(composites, dict) else None
        if not isinstance(found, list) or not found:
            raise ValueError(
                f"{self.scorer!r} is not a composite scorer of the service at {self.url}; "
                f"its composites: {sorted(composites or {})}"
            )
        return [str(name) for name in found]

    def _function(self, component: str | None, name: str) -> RewardFunction:
        if not self.asynchronous:
            return _ServiceReward(self, component, name)

        async def scored(
            prompts: Sequence[Any], completions: Sequence[Any], **columns: Any
        ) -> Rewards:
            details = await self.agrade(prompts, completions, columns, reader=component or "")
            return [_value(detail, component) for detail in details]

        scored.__name__ = scored.__qualname__ = name
        return scored

    def items(
        self, prompts: Sequence[Any], completions: Sequence[Any], columns: Mapping[str, Any]
    ) -> list[dict[str, JSON]]:
        """The batch request's items for one trainer call, in order."""
        if self.label_column not in columns:
            shown = sorted(set(columns) - _TRAINER_KEYWORDS)
            raise KeyError(
                f"no dataset column {self.label_column!r} holds the labels; the columns: {shown}"
            )
        labels = columns[self.label_column]
        if not len(prompts) == len(completions) == len(labels):
            raise ValueError(
                f"{len(prompts)} prompts, {len(completions)} completions and {len(labels)} "
                f"labels: one of each per completion"
            )
        return [
            {"prompt": _prompt(prompt), "response": response_text(completion), "label": label}
            for prompt, completion, label in zip(prompts, completions, labels, strict=True)
        ]

    def grade(
        self,
        prompts: Sequence[Any],
        completions: Sequence[Any],
        columns: Mapping[str, Any],
        *,
        reader: str = "",
    ) -> list[dict[str, JSON]]:
        """The service's detail object for each completion; `reader`'s first read of a
        batch another function already fetched costs no request."""
        items = self.items(prompts, completions, columns)
        with self._lock:
            fetched = self._fetched
            if (
                fetched is not None
                and isinstance(fetched.details, list)
                and fetched.serves(items, reader)
            ):
                return fetched.details
            details = self._sync_client().score_batch(items, self.scorer, detail=True)
            self._fetched = _Fetched(items, details, {reader})
        _log(details, columns)
        return details

    async def agrade(
        self,
        prompts: Sequence[Any],
        completions: Sequence[Any],
        columns: Mapping[str, Any],
        *,
        reader: str = "",
    ) -> list[dict[str, JSON]]:
        """`grade` on the running event loop: functions awaited together share one request."""
        items = self.items(prompts, completions, columns)
        loop = asyncio.get_running_loop()
        fetched = self._fetched
        if (
            fetched is not None
            and isinstance(fetched.details, asyncio.Future)
            and fetched.details.get_loop() is loop
            and fetched.serves(items, reader)
        ):
            return await asyncio.shield(fetched.details)
        details: asyncio.Future[list[dict[str, JSON]]] = loop.create_future()
        self._fetched = _Fetched(items, details, {reader})
        try:
            found = await self._async_client(loop).score_batch(items, self.scorer, detail=True)
        except asyncio.CancelledError:
            details.cancel()
            raise
        except Exception as exc:
            details.set_exception(exc)
            details.exception()  # retrieved here: the functions sharing it raise it too
            raise
        details.set_result(found)
        _log(found, columns)
        return found

    def _sync_client(self) -> RewardClient:
        """This process's client, made anew in a forked child (its sockets are the parent's)."""
        if self._client is None or self._client[0] != os.getpid():
            self._client = (os.getpid(), RewardClient(self.url, **self._client_options))
        return self._client[1]

    def _async_client(self, loop: asyncio.AbstractEventLoop) -> AsyncRewardClient:
        client = self._async_clients.get(loop)
        if client is None:
            client = self._async_clients[loop] = AsyncRewardClient(self.url, **self._client_options)
        return client

    def close(self) -> None:
        """Close the blocking client; the next call opens another."""
        with self._lock:
            client, self._client = self._client, None
        if client is not None and client[0] == os.getpid():
            client[1].close()

    async def aclose(self) -> None:
        """Close the running loop's async client; the next call opens another."""
        client = self._async_clients.pop(asyncio.get_running_loop(), None)
        if client is not None:
            await client.aclose()


class _ServiceReward:
    """A plain reward function of a `ServiceRewards`: a callable object rather than a closure,
    so that it pickles (TRL's AsyncGRPOTrainer hands its reward functions to a spawned
    rollout process; functions pickled together keep sharing one `ServiceRewards`). An
    async function cannot be one: Python 3.11 sees no coroutine function in an object."""

    def __init__(self, rewards: ServiceRewards, component: str | None, name: str) -> None:
        self.rewards = rewards
        self.component = component
        self.__name__ = name

    def __call__(
        self, prompts: Sequence[Any], completions: Sequence[Any], **columns: Any
    ) -> Rewards:
        details = self.rewards.grade(prompts, completions, columns, reader=self.component or "")
        return [_value(detail, self.component) for detail in details]

    def __repr__(self) -> str:
        return f"<reward function {self.__name__!r} of {self.rewards.url}>"


def _log(details: list[dict[str, JSON]], columns: Mapping[str, Any]) -> None:
    """Tell TRL, once per request, how much of the batch is masked and each status."""
    log_metric, log_extra = columns.get("log_metric"), columns.get("log_extra")
    if callable(log_metric) and details:
        masked = sum(loss_multiplier(detail) == 0.0 for detail in details)
        log_metric(MASKED_METRIC, masked / len(details))
    if callable(log_extra):
        log_extra(STATUS_COLUMN, [str(detail.get("status")) for detail in details])


__all__ = [
    "MASKED_METRIC",
    "STATUS_COLUMN",
    "RewardFunction",
    "ServiceRewards",
    "response_text",
]
