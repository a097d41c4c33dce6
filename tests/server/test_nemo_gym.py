"""NeMo Gym's resources-server routes, in-process: each environment's rollouts get the rewards
NeMo Gym's own servers give them, and `/aggregate_metrics` its numbers.

The known rewards are those NeMo Gym's servers give on the same samples, read from their
code and tests (`math_with_judge`: `test_verify_answer_with_library_async`; `mcqa`'s
grading modes; `code_gen`'s reasoning-format check; `ifbench`'s loose variants). One app
(one grading worker) serves the module; a test that changes its settings puts them back.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
import pytest_asyncio
from fastapi import FastAPI

from reward_service.errors import InvalidSetting
from reward_service.server.app import create_app
from reward_service.settings import Settings
from reward_service.testing import LiveServer
from tests.contracts.nemo_gym_rollouts import message, reasoning, rollout

pytestmark = pytest.mark.asyncio(loop_scope="module")

ADD_ONE = {"inputs": ["1\n", "5\n"], "outputs": ["2\n", "6\n"], "fn_name": None}
SOLVED = "```python\nprint(int(input()) + 1)\n```"


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def app() -> AsyncIterator[FastAPI]:
    settings = Settings(
        workers=1,
        nemo_gym_environment="math",
        scorer_deadlines={"ifeval": 20, "ifbench": 20, "code": 20},
    )
    served = create_app(settings)
    async with served.router.lifespan_context(served):
        yield served


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def client(app: FastAPI) -> AsyncIterator[httpx.AsyncClient]:
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://gym") as client:
        yield client


async def _verify(client: httpx.AsyncClient, path: str, body: dict[str, Any]) -> dict[str, Any]:
    answer = await client.post(path, json=body, timeout=60)
    assert answer.status_code == 200, answer.text
    result: dict[str, Any] = answer.json()
    return result


MATH = [
    ("4", "2 + 2 = \\boxed{4}", 1.0, "4"),
    ("\\boxed{12}", "3 * 4 = \\boxed{12}", 1.0, "12"),
    ("4.0", "2 + 2 = \\boxed{\\frac{8}{2}}", 1.0, None),
    ("\\boxed{12}", "3 * 4 = 13", 0.0, None),
    ("17.001", "17", 0.0, None),
    ("$\\frac{1}{2}$", "so \\boxed{0.5}", 1.0, None),
]


@pytest.mark.parametrize(("expected", "text", "reward", "extracted"), MATH)
async def test_math_rollouts_earn_what_nemo_gyms_math_server_gives(
    client: httpx.AsyncClient, expected: str, text: str, reward: float, extracted: str | None
) -> None:
    """`/nemo_gym/math/verify`: math_verify on the final message, NeMo Gym's rewards."""
    body = rollout("q", reasoning("working"), message(text), expected_answer=expected)
    answer = await _verify(client, "/nemo_gym/math/verify", body)
    assert (answer["reward"], answer["library_reward"]) == (reward, reward)
    if extracted is not None:
        assert answer["extracted_answer"] == extracted
    assert answer["response"] == body["response"] and "_ng_failure_class" not in answer


async def test_a_bare_number_pays_only_with_nemo_gyms_extraction(client: httpx.AsyncClient) -> None:
    """A bare `3` is no answer here (a truncated chain of thought would pay) unless the URL
    asks for math_verify's `extraction=any`, which reads as NeMo Gym's server reads."""
    body = rollout("q", message("3"), expected_answer="3")
    assert (await _verify(client, "/nemo_gym/math/verify", body))["reward"] == 0.0
    lenient = await _verify(client, "/nemo_gym/math/verify?extraction=any", body)
    assert lenient["reward"] == 1.0


@pytest.mark.parametrize(
    ("items", "why"),
    [
        ((reasoning("so \\boxed{4}"),), "the answer only in reasoning"),
        ((reasoning("\\boxed{4}"), message("I could not finish.")), "the answer in reasoning"),
        ((message("\\boxed{4}", item_id="a"), message("\\boxed{5}", item_id="b")), "a draft"),
        ((message("<think>\\boxed{4}"),), "an answer inside an unclosed think block"),
        ((message("\\boxed{4}", role="user"),), "a message in the user's role"),
    ],
)
async def test_answers_outside_the_final_message_earn_nothing(
    client: httpx.AsyncClient, items: tuple[dict[str, Any], ...], why: str
) -> None:
    """Reward hacking through the output's items: only the final message's answer is paid."""
    body = rollout("What is 2 + 2?", *items, expected_answer="4")
    assert (await _verify(client, "/nemo_gym/math/verify", body))["reward"] == 0.0, why


async def test_a_reward_in_the_request_is_never_paid(client: httpx.AsyncClient) -> None:
    """Reward hacking through the request: its own reward and fields are replaced."""
    body = rollout("q", message("\\boxed{5}"), expected_answer="4", reward=1.0, library_reward=1.0)
    body["response"]["output_text"] = "\\boxed{4}"
    answer = await _verify(client, "/nemo_gym/math/verify", body)
    assert (answer["reward"], answer["library_reward"]) == (0.0, 0.0)


async def test_the_root_routes_serve_the_configured_environment(client: httpx.AsyncClient) -> None:
    """`/verify`, `/seed_session` and `/aggregate_metrics` at the root are the `math` ones,
    as NeMo Gym calls a resources server at `host:port` (behind `/ng-rollout/<id>` with
    its observability on)."""
    seeded = await client.post("/seed_session", json={})
    assert (seeded.status_code, seeded.json()) == (200, {})
    body = rollout("q", message("\\boxed{4}"), expected_answer="4")
    for path in ("/verify", "/ng-rollout/7:0/verify"):
        answer = await _verify(client, path, body)
        assert answer["reward"] == 1.0 and answer["reward_detail"]["scorer"] == "math_verify"


async def test_math_with_judge_pays_math_verifys_verdict_without_a_judge_call(
    client: httpx.AsyncClient,
) -> None:
    """A correct answer is settled by math_verify; the judge (unset here) is not asked."""
    body = rollout("q", message("\\boxed{4}"), expected_answer="4", question="What is 2+2?")
    answer = await _verify(client, "/nemo_gym/math_with_judge/verify", body)
    assert (answer["reward"], answer["library_reward"]) == (1.0, 1.0)
    assert "judge_verdict" not in answer and "_ng_failure_class" not in answer


async def test_a_judge_that_gives_no_verdict_is_nemo_gyms_judge_failure(
    client: httpx.AsyncClient,
) -> None:
    """No judge configured: `judge_failed`, reward 0.0, `_ng_failure_class` as NeMo Gym's
    `judge_failsafe` marks it (its failures file, not training)."""
    body = rollout("What is 2 + 2?", message("four"), expected_answer="4")
    answer = await _verify(client, "/nemo_gym/equivalence_llm_judge/verify", body)
    assert (answer["reward"], answer["_ng_failure_class"]) == (0.0, "judge_failed")
    assert answer["reward_detail"]["loss_multiplier"] == 0.0


CODE = [
    (message(SOLVED), 1.0),
    (message("```python\nprint(2)\n```"), 0.0),
    (message(f"<think>easy</think>\n{SOLVED}"), 0.0),
    (message(""), 0.0),
]


@pytest.mark.parametrize(("item", "reward"), CODE)
async def test_code_rollouts_earn_what_nemo_gyms_code_gen_gives(
    client: httpx.AsyncClient, item: dict[str, Any], reward: float
) -> None:
    """`code_gen`: every test passes or 0.0; think tags in the final message are its
    reasoning-format violation (0.0, its default penalty), the code never run."""
    body = rollout("add one", item, verifier_metadata={"unit_tests": ADD_ONE, "difficulty": "easy"})
    answer = await _verify(client, "/nemo_gym/code_gen/verify", body)
    assert (answer["reward"], answer["difficulty"]) == (reward, "easy")


async def test_code_hidden_in_reasoning_earns_nothing(client: httpx.AsyncClient) -> None:
    """Reward hacking: a solution in the reasoning and none in the message is not run."""
    body = rollout(
        "add one",
        reasoning(SOLVED),
        message("see above"),
        verifier_metadata={"unit_tests": ADD_ONE},
    )
    assert (await _verify(client, "/nemo_gym/code_gen/verify", body))["reward"] == 0.0


INSTRUCTIONS = [
    ("all lower case and no commas here", "binary", 1.0, [True, True]),
    ("Hello, World", "binary", 0.0, [False, False]),
    ("hello, world", "fraction", 0.5, [True, False]),
]


@pytest.mark.parametrize(("text", "mode", "reward", "followed"), INSTRUCTIONS)
async def test_instruction_rollouts_earn_what_nemo_gyms_server_gives(
    client: httpx.AsyncClient, text: str, mode: str, reward: float, followed: list[bool]
) -> None:
    """`instruction_following`: all followed (binary) or the share followed (fraction)."""
    metadata = {
        "instruction_id_list": ["change_case:english_lowercase", "punctuation:no_comma"],
        "kwargs": [None, None],
        "prompt": "Write in lower case without commas.",
        "grading_mode": mode,
    }
    body = rollout("Write.", message(text), id=1, verifier_metadata=metadata)
    answer = await _verify(client, "/nemo_gym/instruction_following/verify", body)
    assert (answer["reward"], answer["follow_instruction_list"]) == (reward, followed)


async def test_instructions_followed_only_in_reasoning_earn_nothing(
    client: httpx.AsyncClient,
) -> None:
    """Reward hacking: a compliant text in the reasoning, a breaking one in the message."""
    metadata = {"instruction_id_list": ["punctuation:no_comma"], "kwargs": [None], "prompt": "p"}
    body = rollout(
        "Write.", reasoning("no commas here"), message("Well, yes"), verifier_metadata=metadata
    )
    answer = await _verify(client, "/nemo_gym/instruction_following/verify", body)
    assert (answer["reward"], answer["follow_all_instructions"]) == (0.0, False)


async def test_ifbench_pays_the_strict_share_and_reports_the_loose_one(
    client: httpx.AsyncClient,
) -> None:
    """`ifbench` (fraction by default): a first line breaking the word count fails strictly
    and passes loosely (the first line dropped), as NeMo Gym's loose variants read it."""
    body = rollout(
        "Write.",
        message("A heading of many words\nthree words here"),
        id=1,
        instruction_id_list=["count:word_count_range", "count:word_count_range"],
        kwargs=[{"min_words": 3, "max_words": 5}, {"min_words": 1, "max_words": 100}],
        prompt="Write between 3 and 5 words.",
    )
    answer = await _verify(client, "/nemo_gym/ifbench/verify", body)
    assert (answer["reward"], answer["reward_loose"]) == (0.5, 1.0)
    assert answer["follow_instruction_list"] == [False, True]


MCQA = [
    ("The answer is \\boxed{B}.", "strict_single_letter_boxed", 1.0),
    ("Answer: B", "strict_single_letter_boxed", 0.0),
    ("Answer: B", "lenient_answer_colon", 1.0),
    ("\\boxed{A, B, C, D}", "strict_single_letter_boxed", 0.0),
    ("\\boxed{A} or maybe \\boxed{B}", "strict_single_letter_boxed", 1.0),
]


@pytest.mark.parametrize(("text", "mode", "reward"), MCQA)
async def test_mcqa_rollouts_earn_what_nemo_gyms_mcqa_gives(
    client: httpx.AsyncClient, text: str, mode: str, reward: float
) -> None:
    """`mcqa`: the boxed modes read the last box only; every letter at once earns nothing."""
    options = [{"A": "3"}, {"B": "4"}, {"C": "5"}, {"D": "6"}]
    body = rollout("2 + 2?", message(text), options=options, expected_answer="B", grading_mode=mode)
    answer = await _verify(client, "/nemo_gym/mcqa/verify", body)
    assert (answer["reward"], answer["expected_answer"]) == (reward, "B")


async def test_aggregate_metrics_reports_nemo_gyms_pass_at_k(client: httpx.AsyncClient) -> None:
    """Verify answers in, NeMo Gym's AggregateMetrics out: pass@k over tasks, key metrics."""
    rows = [
        {"_ng_task_index": task, "_ng_rollout_index": i, "reward": reward, "extracted_answer": "4"}
        for task, rewards in enumerate([[1.0, 0.0], [0.0, 0.0]])
        for i, reward in enumerate(rewards)
    ]
    rows.append({"_ng_task_index": 1, "reward": 0.0, "_ng_failure_class": "timeout"})
    answer = await client.post("/nemo_gym/mcqa/aggregate_metrics", json={"verify_responses": rows})
    metrics = answer.json()
    assert metrics["agent_metrics"]["pass@2/accuracy"] == pytest.approx(50.0)
    assert metrics["key_metrics"]["pass@1[avg-of-2]/accuracy"] == pytest.approx(25.0)
    assert [g["num_rollouts"] for g in metrics["group_level_metrics"]] == [2, 2]


@pytest.mark.parametrize(
    ("path", "body", "status"),
    [
        ("/nemo_gym/nonesuch/verify", {}, 404),
        ("/nemo_gym/math/verify", {"response": {"output": []}}, 400),
        ("/nemo_gym/math/verify?nonesuch=1", rollout("q", message("4"), expected_answer="4"), 400),
        ("/nemo_gym/math/aggregate_metrics", {"verify_responses": [{}]}, 400),
    ],
)
async def test_what_is_no_request_of_the_environment_is_refused(
    client: httpx.AsyncClient, path: str, body: dict[str, Any], status: int
) -> None:
    """An unknown environment is a 404, a body it cannot read or a bad option a 400."""
    answer = await client.post(path, json=body)
    assert answer.status_code == status and answer.json()["error"]


async def test_the_routes_are_in_the_openapi_schema(client: httpx.AsyncClient) -> None:
    """Each NeMo Gym route is described, its environment a path parameter."""
    paths = (await client.get("/openapi.json")).json()["paths"]
    for name in ("verify", "aggregate_metrics", "seed_session"):
        assert "post" in paths[f"/{name}"] and "post" in paths[f"/ng-rollout/{{rollout_id}}/{name}"]
        [parameter] = paths[f"/nemo_gym/{{environment}}/{name}"]["post"]["parameters"]
        assert parameter["name"] == "environment" and "code_gen" in parameter["schema"]["enum"]


async def test_unknown_environments_and_scorers_in_the_settings_stop_the_start() -> None:
    """A root environment or a scorer override naming nothing known fails at start-up."""
    with pytest.raises(InvalidSetting, match="nonesuch"):
        create_app(Settings(workers=1, nemo_gym_environment="nonesuch"))
    with pytest.raises(InvalidSetting, match="nonesuch"):
        create_app(Settings(workers=1, nemo_gym_scorers={"math": "nonesuch"}))


async def test_without_a_root_environment_the_root_routes_say_how_to_set_one() -> None:
    """With no environment set, `/verify` is a 404 naming the setting."""
    app = create_app(Settings(workers=1))
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app), base_url="http://g"
    ) as bare:
        answer = await bare.post("/verify", json={})
    assert answer.status_code == 404 and "REWARD_NEMO_GYM_ENVIRONMENT" in answer.json()["error"]


async def test_an_aggregate_past_its_cost_cap_is_refused_unread(client: httpx.AsyncClient) -> None:
    """One task of 4,500 rollouts costs 20 million steps: a 413, computed from its shape."""
    rows = [{"reward": 0}] * 4_500
    answer = await client.post("/nemo_gym/math/aggregate_metrics", json={"verify_responses": rows})
    assert answer.status_code == 413 and "aggregate fewer" in answer.json()["error"]


async def test_a_composite_behind_an_environment_answers_reward_components(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    """`REWARD_NEMO_GYM_SCORERS` puts open-r1's composite behind `math`: each component comes
    back in `reward_components` and as a top-level number, the reward their sum."""
    served: Settings = app.state.settings
    app.state.settings = served.model_copy(update={"nemo_gym_scorers": {"math": "open_r1"}})
    text = "<think>\n2 and 2\n</think>\n<answer>\n\\boxed{4}\n</answer>"
    try:
        body = rollout("q", message(text), expected_answer="4")
        answer = await _verify(client, "/nemo_gym/math/verify", body)
    finally:
        app.state.settings = served
    assert answer["reward_components"] == {"accuracy": 1.0, "format": 1.0, "tag_count": 1.0}
    assert (answer["reward"], answer["format"]) == (3.0, 1.0)


async def test_the_token_is_asked_before_the_environment() -> None:
    """With an API token set, a request without it is a 401 on every route, known or not."""
    app = create_app(Settings(workers=1, api_token="s3cret", nemo_gym_environment="math"))
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app), base_url="http://g"
    ) as bare:
        for path in ("/verify", "/nemo_gym/nonesuch/verify", "/nemo_gym/math/aggregate_metrics"):
            assert (await bare.post(path, json={})).status_code == 401, path


async def test_a_rollout_over_a_real_socket(server: LiveServer) -> None:
    """The suite's live server (a `reward-service serve` process) answers a NeMo Gym-shaped
    verify over TCP as the in-process app does."""
    body = rollout("q", reasoning("2 + 2"), message("so \\boxed{4}"), expected_answer="4")
    async with httpx.AsyncClient(base_url=server.url, timeout=60) as remote:
        answer = await _verify(remote, "/nemo_gym/math/verify", body)
    assert (answer["reward"], answer["extracted_answer"]) == (1.0, "4")
