"""Locust users that load reward-service the way RL post-training does.

Run against any deployment (the path is appended to `--host`):

    python -m locust -f loadtest/locustfile.py --host http://reward-service:8000 \
        --headless --users 64 --spawn-rate 16 --run-time 5m --csv results/loadtest/run

`RolloutUser` is one SLIME rollout stream: groups of `GROUP_SIZE` answers to
one problem (correct, equivalent, wrong and truncated chains of thought,
integer and string labels, chat-list prompts, about 1% hostile answers), one
`POST /score` per answer as SLIME sends it, back to back. `EvaluationUser`
is an evaluation pass: bursts of `BURST` answers, `BURST_CONCURRENCY` in flight
at once, then a batch through `/score/batch`. Each user is one connection,
so `--users 64` is SLIME's 64-connection cap.

Every answer's reward is known in advance; a reward that differs is a
failure named "wrong reward" in the failures table, as is any non-200, a
non-JSON content type or a body that is not a number. So "# Fails" counts
every answer a training run would have got wrong or retried. Response times
include queueing: with more users in flight than grading processes, p50
grows with users / workers while throughput (req/s) stays flat.
"""

from __future__ import annotations

import itertools
import logging
import random
from typing import Any

import gevent.pool
from locust import FastHttpUser, between, constant, task
from locust.contrib.fasthttp import ResponseContextManager

from reward_service.bench.workload import (
    chat_prompt,
    grpo_workload,
    hostile_workload,
    request_body,
)

GROUP_SIZE = 8
"""Answers per prompt (SLIME's `n_samples_per_prompt`)."""
HOSTILE_SHARE = 0.01
BURST = 256
BURST_CONCURRENCY = 32
EVAL_BATCH = 64

log = logging.getLogger("loadtest")
_seeds = itertools.count(1)


def _with_chat_prompts(rng: random.Random, items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Half the groups carry a chat-list prompt instead of a plain string."""
    if rng.random() < 0.5 and isinstance(items[0]["prompt"], str):
        prompt = chat_prompt(rng, items[0]["prompt"])
        return [{**item, "prompt": prompt} for item in items]
    return items


def rollout_group(seed: int) -> list[tuple[str, dict[str, Any]]]:
    """One GRPO group sharing a label, about 1% of answers hostile; each with its stats name."""
    rng = random.Random(seed)
    group = _with_chat_prompts(rng, grpo_workload(seed, GROUP_SIZE, group_size=GROUP_SIZE))
    hostile = iter(hostile_workload(seed, GROUP_SIZE))
    return [
        ("/score [hostile]", next(hostile))
        if rng.random() < HOSTILE_SHARE
        else ("/score [rollout]", item)
        for item in group
    ]


def _reward_problem(response: ResponseContextManager, expected: float) -> str | None:
    """Why this answer would fail a SLIME client, or None if it carries `expected`."""
    if response.status_code != 200:
        return f"HTTP {response.status_code}"
    if not response.headers.get("content-type", "").startswith("application/json"):
        return "not JSON"
    try:
        reward = response.json()
    except ValueError:
        return "not JSON"
    if isinstance(reward, bool) or not isinstance(reward, (int, float)):
        return "reward is not a number"
    if reward != expected:
        return f"wrong reward: expected {expected}, got {reward}"
    return None


def _log_wrong(item: dict[str, Any], problem: str) -> None:
    label = repr(item["label"])[:80]
    log.warning("%s; label %s; response ends %r", problem, label, item["response"][-120:])


class _ScoringUser(FastHttpUser):
    abstract = True

    def score(self, item: dict[str, Any], name: str) -> None:
        """POST one answer as SLIME does and check its reward."""
        with self.client.post(
            "/score", json=request_body(item), name=name, catch_response=True
        ) as response:
            problem = _reward_problem(response, item["expected"])
            if problem is None:
                response.success()
            else:
                _log_wrong(item, problem)
                response.failure(problem)


class RolloutUser(_ScoringUser):
    """A SLIME rollout stream: groups of answers sharing a label, one POST each."""

    wait_time = constant(0)

    @task
    def rollout_group(self) -> None:
        for name, item in rollout_group(next(_seeds)):
            self.score(item, name)


class EvaluationUser(_ScoringUser):
    """An evaluation pass: a burst of answers at once, then a batch request."""

    fixed_count = 1
    concurrency = BURST_CONCURRENCY
    wait_time = between(5, 10)

    @task
    def burst(self) -> None:
        items = grpo_workload(next(_seeds), BURST, max_chars=8_000)
        pool = gevent.pool.Pool(BURST_CONCURRENCY)
        for item in items:
            pool.spawn(self.score, item, "/score [eval burst]")
        pool.join()
        self.batch(grpo_workload(next(_seeds), EVAL_BATCH, max_chars=8_000))

    def batch(self, items: list[dict[str, Any]]) -> None:
        """POST a batch and check every reward in it."""
        body = {"items": [request_body(item) for item in items]}
        with self.client.post(
            "/score/batch", json=body, name="/score/batch [eval]", catch_response=True
        ) as response:
            if response.status_code != 200:
                response.failure(f"HTTP {response.status_code}")
                return
            rewards = response.json().get("rewards")
            wrong = [
                (item, got)
                for item, got in zip(items, rewards or [], strict=False)
                if got != item["expected"]
            ]
            if len(rewards or []) != len(items) or wrong:
                for item, got in wrong:
                    _log_wrong(item, f"wrong reward in batch: got {got}")
                response.failure(f"wrong reward: {len(wrong)} of {len(items)} in batch")
            else:
                response.success()
