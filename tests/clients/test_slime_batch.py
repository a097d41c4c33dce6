"""The batch adapter SLIME loads with --custom-rm-path."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

import pytest

from reward_service.clients.slime_batch import RewardClient, ServiceUnavailable, aclose, batched_rm
from reward_service.testing import Reply, StandIn, free_port
from tests.stand_in import grade_like_math


@dataclass
class Sample:
    """Shaped like SLIME's `Sample`, as far as a reward function sees it."""

    prompt: Any
    response: str
    label: Any
    metadata: dict[str, Any] = field(default_factory=dict)
    reward: Any = None


RIGHT = Sample("1+1?", "so \\boxed{2}", "2")
WRONG = Sample("1+1?", "so \\boxed{3}", "2")


def _batch(body: Any) -> Reply:
    return Reply(200, {"rewards": [grade_like_math(item) for item in body["items"]]})


def _one(body: Any) -> Reply:
    return Reply(200, grade_like_math(body))


@pytest.fixture
async def pooled() -> AsyncIterator[None]:
    """Closes the adapter's pooled clients of this event loop after the test."""
    yield
    await aclose()


async def test_single_sample_gets_one_reward(stand_in: StandIn, pooled: None) -> None:
    """Called with one sample, as SLIME's async_rm does, the adapter answers one number."""
    stand_in.route("/score", _one)
    args = SimpleNamespace(rm_url=f"{stand_in.url}/score")
    assert await batched_rm(args, RIGHT) == 1.0
    assert await batched_rm(args, WRONG) == 0.0


def _group(body: Any) -> Reply:
    """The group endpoint, graded as the stand-in grades; the third answer timed out."""
    rewards = [grade_like_math({**body, "response": r}) for r in body["responses"]]
    masks = [0.0 if i == 2 else 1.0 for i in range(len(rewards))]
    return Reply(200, {"rewards": rewards, "loss_multipliers": masks, "group": {}})


@dataclass
class SlimeSample(Sample):
    """With SLIME's `remove_sample`, which zeroes a sample's loss mask."""

    remove_sample: bool = False


async def test_group_goes_to_the_group_endpoint(stand_in: StandIn, pooled: None) -> None:
    """A group (one prompt, one label) is scored in one group request, in input order."""
    stand_in.route("/score/group", _group)
    args = SimpleNamespace(rm_url=f"{stand_in.url}/score")
    group = [SlimeSample(s.prompt, s.response, s.label) for s in (RIGHT, WRONG, RIGHT, WRONG)]
    assert await batched_rm(args, group) == [1.0, 0.0, 1.0, 0.0]
    assert stand_in.paths() == ["/score/group"]
    [body] = [b for _, _, b in stand_in.requests]
    assert (body["prompt"], body["label"], len(body["responses"])) == ("1+1?", "2", 4)


async def test_a_masked_answer_is_removed_from_the_loss(stand_in: StandIn, pooled: None) -> None:
    """loss_multiplier 0 (a fallback reward) sets SLIME's remove_sample; the others stay."""
    stand_in.route("/score/group", _group)
    args = SimpleNamespace(rm_url=f"{stand_in.url}/score")
    group = [SlimeSample(s.prompt, s.response, s.label) for s in (RIGHT, WRONG, RIGHT)]
    await batched_rm(args, group)
    assert [s.remove_sample for s in group] == [False, False, True]


async def test_without_group_endpoint_a_group_goes_to_the_batch_endpoint(
    stand_in: StandIn, pooled: None
) -> None:
    """An older service (404 at /group): the group is one batch request, and stays so."""
    stand_in.route("/score/batch", _batch)
    args = SimpleNamespace(rm_url=f"{stand_in.url}/score")
    assert await batched_rm(args, [RIGHT, WRONG, WRONG, RIGHT]) == [1.0, 0.0, 0.0, 1.0]
    assert await batched_rm(args, [WRONG, RIGHT]) == [0.0, 1.0]
    assert stand_in.paths() == ["/score/group", "/score/batch", "/score/batch"]


async def test_a_list_of_prompts_goes_to_the_batch_endpoint(
    stand_in: StandIn, pooled: None
) -> None:
    """Samples of different prompts or labels are no group: one batch request."""
    stand_in.route("/score/batch", _batch)
    other = Sample("2+2?", "so \\boxed{4}", "4")
    args = SimpleNamespace(rm_url=f"{stand_in.url}/score")
    assert await batched_rm(args, [RIGHT, other]) == [1.0, 1.0]
    assert stand_in.paths() == ["/score/batch"]


async def test_reward_key_reads_a_component_from_the_details(
    stand_in: StandIn, pooled: None
) -> None:
    """--reward-key format with a ?detail=1 URL: each reward is the detail's `format`,
    and a detail whose status is a fallback marks its sample removed."""
    details = [
        {"reward": 2.0, "status": "ok", "format": 1.0},
        {"reward": 0.0, "status": "timeout"},
    ]
    stand_in.route(
        "/score/open_r1/batch?detail=1",
        lambda body: Reply(200, {"rewards": [2.0, 0.0], "details": details}),
    )
    args = SimpleNamespace(rm_url=f"{stand_in.url}/score/open_r1?detail=1", reward_key="format")
    samples = [SlimeSample("p", "a", "1"), SlimeSample("q", "b", "2")]
    assert await batched_rm(args, samples) == [{"format": 1.0}, {"format": 0.0}]
    assert [s.remove_sample for s in samples] == [False, True]


async def test_reward_key_wraps_each_reward(stand_in: StandIn, pooled: None) -> None:
    """With --reward-key set, each reward is an object SLIME reads under that key."""
    stand_in.route("/score/batch", _batch)
    args = SimpleNamespace(rm_url=f"{stand_in.url}/score", reward_key="reward")
    assert await batched_rm(args, [RIGHT, WRONG]) == [{"reward": 1.0}, {"reward": 0.0}]


async def test_inplace_sets_sample_rewards(stand_in: StandIn, pooled: None) -> None:
    """Called with inplace_set_reward_field, the adapter sets sample.reward and returns None."""
    stand_in.route("/score/batch", _batch)
    group = [Sample("1+1?", "so \\boxed{2}", "2"), Sample("1+1?", "so \\boxed{3}", "2")]
    args = SimpleNamespace(rm_url=f"{stand_in.url}/score")
    assert await batched_rm(args, group, inplace_set_reward_field=True) is None
    assert [sample.reward for sample in group] == [1.0, 0.0]


async def test_without_batch_endpoint_posts_one_by_one(stand_in: StandIn) -> None:
    """A 404 on /batch falls back to SLIME-shaped single posts, and is remembered."""
    stand_in.route("/score", _one)
    async with RewardClient(f"{stand_in.url}/score") as client:
        assert await client.score([WRONG, RIGHT]) == [0.0, 1.0]
        assert await client.score([RIGHT]) == [1.0]
    assert stand_in.paths() == ["/score/batch", "/score", "/score", "/score"]
    single = [body for _, path, body in stand_in.requests if path == "/score"]
    assert {"prompt": "1+1?", "response": "so \\boxed{3}", "label": "2"} in single[:2]
    assert sorted(body["response"] for body in single) == sorted(
        ["so \\boxed{3}", "so \\boxed{2}", "so \\boxed{2}"]
    )


async def test_one_bad_sample_gets_the_fallback(
    stand_in: StandIn, caplog: pytest.LogCaptureFixture
) -> None:
    """An unsendable sample and one the service refuses get 0.0; the rest are graded."""
    stand_in.route("/score/batch", lambda _: Reply(400, {"error": "bad item 1"}))
    stand_in.route(
        "/score", lambda body: Reply(400, {"error": "bad"}) if body["label"] == [] else _one(body)
    )
    unsendable = Sample("p", "r", {1, 2})
    refused = Sample("p", "so \\boxed{2}", [])
    with caplog.at_level(logging.WARNING, "reward_service.clients.slime_batch"):
        async with RewardClient(f"{stand_in.url}/score") as client:
            assert await client.score([RIGHT, unsendable, refused, RIGHT]) == [1.0, 0.0, 0.0, 1.0]
    warnings = [record.getMessage() for record in caplog.records]
    assert any("sample 1 cannot be sent" in line for line in warnings)
    assert any("sample 2 refused (HTTP 400" in line for line in warnings)


async def test_non_number_reward_gets_the_fallback(stand_in: StandIn) -> None:
    """A null or text reward in the batch answer becomes 0.0 for that sample only."""
    stand_in.route("/score/batch", lambda _: Reply(200, {"rewards": [1.0, None, "x", 0.5]}))
    async with RewardClient(f"{stand_in.url}/score") as client:
        assert await client.score([RIGHT] * 4) == [1.0, 0.0, 0.0, 0.5]


async def test_overload_is_retried_after_retry_after(stand_in: StandIn) -> None:
    """503 with Retry-After is waited out and retried, then graded."""
    answers = iter([Reply(503, {"error": "busy"}, {"Retry-After": "0"})])
    stand_in.route("/score/batch", lambda body: next(answers, None) or _batch(body))
    async with RewardClient(f"{stand_in.url}/score", backoff_s=0.01) as client:
        assert await client.score([RIGHT, WRONG]) == [1.0, 0.0]
    assert stand_in.paths() == ["/score/batch", "/score/batch"]


async def test_server_error_is_not_retried(stand_in: StandIn) -> None:
    """A 500 is a service bug: that sample gets 0.0 at once, the rest are graded."""
    stand_in.route("/score/batch", lambda _: Reply(500, {"error": "bug"}))
    stand_in.route(
        "/score", lambda body: Reply(500, {"error": "bug"}) if body["label"] == [] else _one(body)
    )
    buggy = Sample("p", "so \\boxed{2}", [])
    async with RewardClient(f"{stand_in.url}/score", backoff_s=0.01) as client:
        assert await client.score([RIGHT, buggy]) == [1.0, 0.0]
    assert stand_in.paths().count("/score/batch") == 1
    assert stand_in.paths().count("/score") == 2


async def test_service_overloaded_past_the_last_attempt_raises(stand_in: StandIn) -> None:
    """A service that stays at 503 stops the rollout, naming the status."""
    stand_in.route("/score/batch", lambda _: Reply(503, {"error": "busy"}, {"Retry-After": "0"}))
    async with RewardClient(f"{stand_in.url}/score", attempts=3, backoff_s=0.01) as client:
        with pytest.raises(ServiceUnavailable, match="after 3 attempts: HTTP 503"):
            await client.score([RIGHT])
    assert stand_in.paths() == ["/score/batch"] * 3


async def test_service_down_raises_after_bounded_attempts() -> None:
    """With nothing listening the adapter stops the rollout instead of inventing rewards."""
    url = f"http://127.0.0.1:{free_port()}/score"
    async with RewardClient(url, attempts=2, backoff_s=0.01) as client:
        with pytest.raises(ServiceUnavailable, match="after 2 attempts: ConnectError"):
            await client.score([RIGHT])


async def test_metadata_scorer_routes_the_sample(stand_in: StandIn) -> None:
    """`metadata["scorer"]` sends that sample to /score/<scorer>, others stay on the URL."""
    stand_in.route("/score/batch", _batch)
    stand_in.route("/score/exact/batch", lambda body: Reply(200, {"rewards": [0.5]}))
    routed = Sample("p", "r", "l", metadata={"scorer": "exact"})
    async with RewardClient(f"{stand_in.url}/score") as client:
        assert await client.score([RIGHT, routed, WRONG]) == [1.0, 0.5, 0.0]
    assert sorted(stand_in.paths()) == ["/score/batch", "/score/exact/batch"]


async def test_detail_answers_are_read(stand_in: StandIn) -> None:
    """With a ?detail=1 URL the reward is taken from each detail object."""
    stand_in.route("/score?detail=1", lambda body: Reply(200, {"reward": 1.0, "status": "ok"}))
    async with RewardClient(f"{stand_in.url}/score?detail=1") as client:
        assert await client.score([RIGHT]) == [1.0]


async def test_against_the_real_service(reward_url: str, pooled: None) -> None:
    """The real service grades a group through the adapter, batch endpoint or not."""
    samples = [
        Sample([{"role": "user", "content": "1+1?"}], "The answer is \\boxed{2}", "2"),
        Sample("1+1?", "The answer is \\boxed{3}", "2"),
        Sample("sqrt 2?", "\\boxed{\\sqrt{2}}", "\\sqrt{2}", metadata={"scorer": "math_verify"}),
        Sample("1+1?", "", None),
    ]
    rewards = await batched_rm(SimpleNamespace(rm_url=f"{reward_url}/score"), samples)
    assert rewards == [1.0, 0.0, 1.0, 0.0]


async def test_metadata_reward_options_reach_the_scorer(stand_in: StandIn, pooled: None) -> None:
    """`metadata["reward_options"]` turns the label into a label object with those options."""
    stand_in.route("/score/choice/batch", lambda body: Reply(200, {"rewards": [1.0]}))
    options = {"choices": ["London", "Paris"]}
    sample = Sample(
        "capital?", "Answer: B", "Paris", {"scorer": "choice", "reward_options": options}
    )
    args = SimpleNamespace(rm_url=f"{stand_in.url}/score")
    assert await batched_rm(args, [sample]) == [1.0]
    [(_, _, body)] = stand_in.requests
    assert body["items"][0]["label"] == {"choices": ["London", "Paris"], "answer": "Paris"}


async def test_metadata_rm_type_becomes_the_label_scorer(stand_in: StandIn, pooled: None) -> None:
    """`metadata["rm_type"]` is the label object's scorer and the other metadata its options."""
    stand_in.route("/score/batch", lambda body: Reply(200, {"rewards": [1.0] * 6}))
    choices = ["London", "Paris"]
    samples = [
        Sample("q", "B", "Paris", {"rm_type": "gpqa", "choices": choices, "answer": "x"}),
        Sample("q", "\\boxed{a}", "a", {"rm_type": " boxed_f1 ", "reward_options": {"k": 1}}),
        Sample("q", "r", {"answer": "B", "scorer": "choice"}, {"rm_type": "gpqa", "k": 2}),
        Sample("q", "r", "l", {"rm_type": "remote_rm", "choices": choices}),
        Sample("q", "r", "l", {"choices": choices}),
        Sample("q", "r", "l", {"rm_type": "dapo", "k": 1, "reward_options": {"k": 3}}),
    ]
    args = SimpleNamespace(rm_url=f"{stand_in.url}/score")
    assert await batched_rm(args, samples) == [1.0] * 6
    [(_, path, body)] = stand_in.requests
    assert path == "/score/batch"
    assert [item["label"] for item in body["items"]] == [
        {"choices": choices, "scorer": "gpqa", "answer": "Paris"},
        {"k": 1, "scorer": "boxed_f1", "answer": "a"},
        {"k": 2, "scorer": "choice", "answer": "B"},
        "l",
        "l",
        {"k": 3, "scorer": "dapo", "answer": "l"},
    ]


async def test_instruction_metadata_reaches_the_label(stand_in: StandIn, pooled: None) -> None:
    """SLIME's ifbench fields are sent in the label object, with or without an rm_type."""
    stand_in.route("/score/ifbench/batch", lambda body: Reply(200, {"rewards": [1.0] * 3}))
    fields = {"instruction_id_list": ["a:b"], "kwargs": [{"n": 1}], "prompt_text": "p"}
    samples = [
        Sample("p", "r", None, {**fields, "record_id": 4, "other": 1}),
        Sample("p", "r", "", {**fields, "rm_type": "ifbench"}),
        Sample("p", "r", None, {"other": 1}),
    ]
    args = SimpleNamespace(rm_url=f"{stand_in.url}/score/ifbench")
    assert await batched_rm(args, samples) == [1.0] * 3
    [(_, _, body)] = stand_in.requests
    assert [item["label"] for item in body["items"]] == [
        {**fields, "record_id": 4, "answer": None},
        {**fields, "scorer": "ifbench", "answer": ""},
        None,
    ]


async def test_ifbench_metadata_against_the_real_service(reward_url: str, pooled: None) -> None:
    """SLIME-shaped ifbench samples (instructions in metadata, no label) get SLIME's rewards."""
    metadata = {"instruction_id_list": ["format:no_whitespace"], "kwargs": [{"N": None}]}
    samples = [
        Sample("p", "<think>a plan</think>nospace", None, metadata),
        Sample("p", "has space", None, metadata),
        Sample("p", "nospace", "", {**metadata, "rm_type": "ifbench"}),
    ]
    args = SimpleNamespace(rm_url=f"{reward_url}/score/ifbench")
    assert await batched_rm(args, samples) == [1.0, 0.0, 1.0]


async def test_unsendable_metadata_costs_only_its_sample(stand_in: StandIn, pooled: None) -> None:
    """Metadata that JSON cannot carry gives that sample the fallback; the rest are graded."""
    stand_in.route("/score/batch", _batch)
    odd = Sample("1+1?", "so \\boxed{2}", "2", {"rm_type": "math", "seen": {1, 2}})
    args = SimpleNamespace(rm_url=f"{stand_in.url}/score")
    assert await batched_rm(args, [RIGHT, odd, RIGHT]) == [1.0, 0.0, 1.0]


async def test_mixed_rm_types_against_the_real_service(reward_url: str, pooled: None) -> None:
    """One group mixing SLIME reward types is graded by each sample's own type."""
    four = ["Nitric oxide", "Carbon dioxide", "Ozone", "Methane"]
    samples = [
        Sample("gas?", "So the answer is C", "Ozone", {"rm_type": "gpqa", "choices": four}),
        Sample("gas?", "So the answer is D", 2, {"rm_type": "gpqa"}),
        Sample("where?", "It is \\boxed{Eiffel Tower}", "Eiffel Tower", {"rm_type": "boxed_f1"}),
        Sample("n?", "Answer: 12", "12", {"rm_type": "dapo"}),
        Sample("n?", "Answer: 12", "12", {"rm_type": "boxed_dapo"}),
        Sample("1+1?", "\\boxed{2}", "2", {"rm_type": "remote_rm"}),
    ]
    rewards = await batched_rm(SimpleNamespace(rm_url=f"{reward_url}/score"), samples)
    assert rewards == [1.0, 0.0, 1.0, 1.0, -1.0, 1.0]


async def test_a_group_against_the_real_service(reward_url: str, pooled: None) -> None:
    """--group-rm against the real service: the group endpoint grades it, nothing removed."""
    group = [SlimeSample("1+1?", f"so \\boxed{{{answer}}}", "2") for answer in (2, 3, 2, "2.0")]
    assert await batched_rm(SimpleNamespace(rm_url=f"{reward_url}/score"), group) == [
        1.0,
        0.0,
        1.0,
        1.0,
    ]
    assert not any(s.remove_sample for s in group)
