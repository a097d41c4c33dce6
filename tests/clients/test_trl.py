"""TRL reward functions: one request per trainer call, shared by a composite's components,
masks as None, retries, conversational completions and labels from dataset columns; against a
scripted stand-in, and against the shared live server for what the service itself answers."""

from __future__ import annotations

import asyncio
import inspect
import pickle
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest

from reward_service.clients.http import RetryPolicy, RewardServiceUnavailable
from reward_service.clients.trl import (
    MASKED_METRIC,
    STATUS_COLUMN,
    ServiceRewards,
    response_text,
)
from reward_service.testing import LiveServer, Reply, StandIn, free_port

FAST = RetryPolicy(attempts=3, backoff_s=0.01, max_wait_s=0.05)
BATCH = "/score/open_r1/batch?detail=1"
WELL_FORMED = "<think>\nhalf and a quarter\n</think>\n<answer>\n\\boxed{\\frac{3}{4}}\n</answer>"


def _detail(
    reward: float, status: str = "ok", loss_multiplier: float = 1.0, **components: float
) -> dict[str, Any]:
    return {
        "reward": reward,
        "status": status,
        "scorer": "open_r1",
        "loss_multiplier": loss_multiplier,
        "components": components,
    }


def _graded(body: Any) -> Reply:
    """A composite's answer: accuracy 1 where the response is the label, format 0.5 always."""
    details = [
        _detail(
            1.5 if item["response"] == item["label"] else 0.5,
            accuracy=1.0 if item["response"] == item["label"] else 0.0,
            format=0.5,
        )
        for item in body["items"]
    ]
    return Reply(200, {"rewards": [d["reward"] for d in details], "details": details})


@pytest.fixture(scope="module")
def scripted() -> Iterator[StandIn]:
    """One scripted server for the module: stopping one costs half a second."""
    with StandIn() as server:
        yield server


@pytest.fixture
def stand_in(scripted: StandIn) -> StandIn:
    """The module's scripted server with no routes and no requests yet."""
    scripted.routes.clear()
    scripted.requests.clear()
    return scripted


@pytest.fixture
def rewards(stand_in: StandIn) -> Iterator[ServiceRewards]:
    """Functions of the `open_r1` composite against the stand-in, labels in `answer`."""
    stand_in.route(BATCH, _graded)
    made = ServiceRewards(stand_in.url, scorer="open_r1", label_column="answer", retry=FAST)
    yield made
    made.close()


def call(function: Any, completions: list[Any], answers: list[Any], **more: Any) -> Any:
    """Call `function` as GRPOTrainer does: keywords, each dataset column a list."""
    prompts = [f"prompt {i}" for i in range(len(completions))]
    return function(prompts=prompts, completions=completions, answer=answers, **more)


def test_a_trainer_call_is_one_request(stand_in: StandIn, rewards: ServiceRewards) -> None:
    """Eight completions are graded in one batch request, in order, details asked for."""
    completions = [str(i) for i in range(8)]
    values = call(rewards.reward(), completions, ["3"] * 8)
    assert values == [0.5, 0.5, 0.5, 1.5, 0.5, 0.5, 0.5, 0.5]
    assert stand_in.paths() == [BATCH]
    assert [item["response"] for item in stand_in.requests[0][2]["items"]] == completions


def test_components_share_one_request(stand_in: StandIn, rewards: ServiceRewards) -> None:
    """A composite's components, called in turn with one batch as TRL calls them, cost one
    request between them, and each answers its own component."""
    accuracy, form = rewards.components("accuracy", "format")
    completions, answers = ["1", "2"], ["1", "1"]
    assert call(accuracy, completions, answers) == [1.0, 0.0]
    assert call(form, completions, answers) == [0.5, 0.5]
    assert stand_in.paths() == [BATCH]


def test_a_function_called_again_asks_again(stand_in: StandIn, rewards: ServiceRewards) -> None:
    """The same function called twice with the same batch (a later step that repeats it)
    gets a fresh grading, as does a batch that differs."""
    accuracy = rewards.component("accuracy")
    call(accuracy, ["1"], ["1"])
    call(accuracy, ["1"], ["1"])
    call(rewards.component("format"), ["2"], ["1"])
    assert stand_in.paths() == [BATCH] * 3


def test_plain_functions_pickle_and_keep_sharing(
    stand_in: StandIn, rewards: ServiceRewards
) -> None:
    """Plain functions pickle together, clients open or not (TRL's AsyncGRPOTrainer sends
    them to a spawned process), and the copies share one request, on a client of their own."""
    functions = rewards.components("accuracy", "format")
    call(functions[0], ["1"], ["1"])
    copies = pickle.loads(pickle.dumps(functions))
    assert [copy.__name__ for copy in copies] == ["accuracy", "format"]
    assert [call(copy, ["1", "2"], ["1", "1"]) for copy in copies] == [[1.0, 0.0], [0.5, 0.5]]
    assert stand_in.paths() == [BATCH, BATCH]


def test_functions_carry_the_names_trl_logs(rewards: ServiceRewards) -> None:
    """TRL logs each function under its `__name__`: the component's, or the scorer's."""
    names = [f.__name__ for f in (*rewards.components("accuracy", "format"), rewards.reward())]
    assert names == ["accuracy", "format", "open_r1"]
    assert rewards.component("format", name="format_reward").__name__ == "format_reward"


def test_a_fallback_is_none_in_every_function(stand_in: StandIn) -> None:
    """A fallback reward (loss_multiplier 0, or an older service's `timeout` status without
    it) is None from the reward and from every component: TRL's unscorable sample."""
    details = [
        _detail(0.0, "timeout", 0.0),
        {"reward": 0.0, "status": "judge_failed", "scorer": "open_r1"},
        _detail(2.0, accuracy=1.0, format=1.0),
    ]
    stand_in.route(BATCH, lambda _: Reply(200, {"rewards": [0, 0, 2], "details": details}))
    rewards = ServiceRewards(stand_in.url, scorer="open_r1", label_column="answer", retry=FAST)
    functions = [rewards.reward(), *rewards.components("accuracy", "format")]
    assert [call(f, ["a", "b", "c"], [1, 1, 1]) for f in functions] == [
        [None, None, 2.0],
        [None, None, 1.0],
        [None, None, 1.0],
    ]
    assert stand_in.paths() == [BATCH]


def test_a_component_the_answer_lacks_is_none(stand_in: StandIn) -> None:
    """A sample routed by its label object to a plain scorer holds no `format`: None, TRL's
    "does not apply", while its reward is still read."""
    plain = {"reward": 1.0, "status": "ok", "scorer": "choice", "loss_multiplier": 1.0}
    stand_in.route(BATCH, lambda _: Reply(200, {"rewards": [1.0], "details": [plain]}))
    rewards = ServiceRewards(stand_in.url, scorer="open_r1", label_column="answer")
    assert call(rewards.component("format"), ["B"], [{"scorer": "choice", "answer": "B"}]) == [None]
    assert call(rewards.reward(), ["B"], [{"scorer": "choice", "answer": "B"}]) == [1.0]


def test_overload_is_retried_after_retry_after(stand_in: StandIn) -> None:
    """A 503 with `Retry-After` is waited out and retried, then graded: one trainer call."""
    replies = iter([Reply(503, {"error": "busy"}, {"Retry-After": "0"})])
    stand_in.route(BATCH, lambda body: next(replies, None) or _graded(body))
    rewards = ServiceRewards(stand_in.url, scorer="open_r1", label_column="answer", retry=FAST)
    assert call(rewards.component("accuracy"), ["1"], ["1"]) == [1.0]
    assert stand_in.paths() == [BATCH, BATCH]


def test_a_service_that_stays_down_stops_training() -> None:
    """With nothing listening the function raises after its attempts, never inventing
    rewards for the trainer to learn from."""
    rewards = ServiceRewards(f"http://127.0.0.1:{free_port()}", label_column="answer", retry=FAST)
    with pytest.raises(RewardServiceUnavailable, match="after 3 attempts: ConnectError"):
        call(rewards.reward(), ["1"], ["1"])


def test_labels_come_from_the_named_column(stand_in: StandIn, rewards: ServiceRewards) -> None:
    """Each item's label is its row's `label_column`; other columns are not sent."""
    call(rewards.reward(), ["a", "b"], [{"scorer": "choice", "answer": "B"}, 7], level=[1, 2])
    items = stand_in.requests[0][2]["items"]
    assert [item["label"] for item in items] == [{"scorer": "choice", "answer": "B"}, 7]
    assert all(set(item) == {"prompt", "response", "label"} for item in items)


def test_a_missing_label_column_names_the_columns(rewards: ServiceRewards) -> None:
    """A dataset without the label column fails at the first call, naming the columns it has
    and not the trainer's own keywords."""
    with pytest.raises(KeyError, match=r"'answer'.*\['level', 'solution'\]"):
        rewards.reward()(
            prompts=["p"],
            completions=["c"],
            solution=["1"],
            level=[1],
            trainer_state=None,
            log_metric=print,
        )


def test_unequal_lengths_are_refused(rewards: ServiceRewards) -> None:
    """Prompts, completions and labels of different lengths are a caller's bug: refused."""
    with pytest.raises(ValueError, match="2 prompts, 2 completions and 1 labels"):
        rewards.reward()(prompts=["p", "q"], completions=["a", "b"], answer=["1"])


def test_the_masked_share_and_statuses_are_logged_once(stand_in: StandIn) -> None:
    """Through TRL's `log_metric` and `log_extra` the request's masked share and statuses
    are logged once per request, not once per component."""
    details = [_detail(0.0, "error", 0.0), _detail(1.0, accuracy=1.0, format=0.0)]
    stand_in.route(BATCH, lambda _: Reply(200, {"rewards": [0, 1], "details": details}))
    rewards = ServiceRewards(stand_in.url, scorer="open_r1", label_column="answer")
    metrics: list[tuple[str, float]] = []
    extra: list[tuple[str, list[Any]]] = []
    logs = {"log_metric": lambda *a: metrics.append(a), "log_extra": lambda *a: extra.append(a)}
    for function in rewards.components("accuracy", "format"):
        call(function, ["a", "b"], [1, 1], **logs)
    assert metrics == [(MASKED_METRIC, 0.5)]
    assert extra == [(STATUS_COLUMN, ["error", "ok"])]


async def test_async_components_awaited_together_share_one_request(
    stand_in: StandIn, rewards: ServiceRewards
) -> None:
    """The async variant's functions are coroutine functions (TRL runs them on its loop);
    gathered together, as TRL gathers them, they share one request."""
    shared = ServiceRewards(
        stand_in.url, scorer="open_r1", label_column="answer", asynchronous=True
    )
    accuracy, form = shared.components("accuracy", "format")
    assert inspect.iscoroutinefunction(accuracy) and inspect.iscoroutinefunction(form)
    completions, answers = ["1", "2", "1"], ["1", "1", "1"]
    values = await asyncio.gather(
        call(accuracy, completions, answers), call(form, completions, answers)
    )
    assert values == [[1.0, 0.0, 1.0], [0.5, 0.5, 0.5]]
    assert stand_in.paths() == [BATCH]
    await shared.aclose()


async def test_async_functions_share_a_failure(stand_in: StandIn) -> None:
    """When the shared request fails, every function awaiting it raises the same error."""
    stand_in.route(BATCH, lambda _: Reply(503, {"error": "draining"}, {"Retry-After": "0"}))
    shared = ServiceRewards(
        stand_in.url, scorer="open_r1", label_column="answer", asynchronous=True, retry=FAST
    )
    results = await asyncio.gather(
        *(call(f, ["1"], ["1"]) for f in shared.components("accuracy", "format")),
        return_exceptions=True,
    )
    assert [type(r) for r in results] == [RewardServiceUnavailable] * 2
    assert stand_in.paths() == [BATCH] * 3
    await shared.aclose()


@pytest.mark.parametrize(
    ("completion", "graded"),
    [
        ("so \\boxed{2}", "so \\boxed{2}"),
        ([{"role": "assistant", "content": "so \\boxed{2}"}], "so \\boxed{2}"),
        ([{"role": "assistant", "content": [{"type": "text", "text": "so 2"}]}], "so 2"),
        (
            [{"role": "assistant", "reasoning_content": "1+1", "content": "so 2"}],
            "<think>\n1+1\n</think>\nso 2",
        ),
        (
            [
                {"role": "assistant", "content": "", "tool_calls": [{"name": "calc"}]},
                {"role": "tool", "content": "2"},
                {"role": "assistant", "content": "it is 2"},
            ],
            "it is 2",
        ),
        ([{"role": "assistant", "content": "2"}, {"role": "tool", "content": "\\boxed{9}"}], "2"),
        ([{"role": "tool", "content": "\\boxed{9}"}], ""),
        (
            [
                {"role": "assistant", "content": "\\boxed{2}", "tool_calls": [{"name": "calc"}]},
                {"role": "tool", "content": "2"},
                {"role": "assistant", "content": ""},
            ],
            "",
        ),
        ([], ""),
    ],
    ids=[
        "text",
        "message",
        "parts",
        "reasoning",
        "tool-turns",
        "tool-last",
        "tool-only",
        "cut-short",
        "empty",
    ],
)
def test_the_response_is_the_last_assistant_message(completion: Any, graded: str) -> None:
    """A conversational completion is graded by its last assistant message, its parsed-out
    reasoning back in a `<think>` block; a tool's output, or an earlier turn's answer when
    the last turn is empty (cut short), is never graded."""
    assert response_text(completion) == graded


def test_conversational_prompts_are_sent_as_text_messages(
    stand_in: StandIn, rewards: ServiceRewards
) -> None:
    """A conversational prompt is sent as its roles and texts (an image part is not JSON)."""
    prompt = [{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": "1+1?"}]}]
    rewards.reward()(prompts=[prompt], completions=[[{"content": "2"}]], answer=["2"])
    item = stand_in.requests[0][2]["items"][0]
    assert item["prompt"] == [{"role": "user", "content": "1+1?"}]
    assert item["response"] == "2"


def test_the_module_imports_neither_trl_nor_torch() -> None:
    """A reward function is a plain callable: importing the module loads no trainer stack."""
    heavy = ("trl", "torch", "transformers", "sympy", "math_verify", "fastapi")
    code = (
        f"import sys, reward_service.clients.trl; print([m for m in {heavy!r} if m in sys.modules])"
    )
    found = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert found.stdout.strip() == "[]"


# Against the real service (the shared live server): what its composite answers.

QUESTION = [{"role": "user", "content": "What is 1/2 + 1/4?"}]


def test_open_r1_components_from_the_live_service(server: LiveServer) -> None:
    """open_r1's components, found through `/scorers`, read the live service's grading of
    conversational completions; a null label is a fallback, None in every function."""
    rewards = ServiceRewards(server.url, scorer="open_r1")
    functions = rewards.components()
    assert [f.__name__ for f in functions] == ["accuracy", "format", "tag_count"]
    completions = [
        [{"role": "assistant", "content": WELL_FORMED}],
        [{"role": "assistant", "content": "\\boxed{1}"}],
        [{"role": "assistant", "content": WELL_FORMED}],
    ]
    columns = {"solution": ["\\frac{3}{4}", "\\frac{3}{4}", None]}
    values = [f(prompts=[QUESTION] * 3, completions=completions, **columns) for f in functions]
    assert values == [[1.0, 0.0, None], [1.0, 0.0, None], [1.0, 0.0, None]]
    assert rewards.reward()(prompts=[QUESTION] * 3, completions=completions, **columns) == [
        3.0,
        0.0,
        None,
    ]
    rewards.close()


def test_an_answer_only_in_reasoning_or_a_tool_earns_nothing(server: LiveServer) -> None:
    """Reasoning parsed out by the chat template goes back before `</think>`, where no
    scorer reads a final answer (a reasoning that closes the block itself closes it twice:
    no answer), and a tool's output is not the model's: none pays, nor the prompt's
    answer, while the same answer in the model's own message does."""
    rewards = ServiceRewards(server.url, scorer="math_verify")
    completions = [
        [{"role": "assistant", "reasoning_content": "so \\boxed{0.75}", "content": "done"}],
        [
            {"role": "assistant", "content": "let me compute", "tool_calls": [{"name": "py"}]},
            {"role": "tool", "content": "\\boxed{0.75}"},
        ],
        [{"role": "assistant", "reasoning_content": "x\n</think>\n\\boxed{0.75}", "content": ""}],
        [{"role": "assistant", "reasoning_content": "1/2 + 1/4", "content": "\\boxed{0.75}"}],
    ]
    prompts = [[{"role": "user", "content": "1/2 + 1/4? Answer \\boxed{0.75}"}]] * 4
    values = rewards.reward()(prompts=prompts, completions=completions, solution=["3/4"] * 4)
    assert values == [0.0, 0.0, 0.0, 1.0]
    rewards.close()


def test_an_unknown_composite_is_named(server: LiveServer) -> None:
    """Asking every component of a scorer that is no composite fails before training."""
    with pytest.raises(ValueError, match="'math_verify' is not a composite"):
        ServiceRewards(server.url, scorer="math_verify").components()
