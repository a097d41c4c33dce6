"""The judge scorers in a live service, over real sockets, beside a stand-in judge: SLIME's
remote_rm client, `?detail=1`, `/scorers`, metrics, an outage, 503 by policy."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from reward_service.bench.chat_stand_in import (
    ChatStandIn,
    Reply,
    completion,
    prompt_of,
    section,
    verdict_form,
)
from reward_service.grading.engine import Graded
from reward_service.scorers.base import Score, Status
from reward_service.scorers.llm_judge.client import FAILURES
from reward_service.server import metrics
from reward_service.settings import Settings
from reward_service.testing import LiveServer, live_server
from tests.server.test_contract import _slime_client

SECRET = "sk-live-never-shown-9876543210"
BREAKER_OPEN_S = 10
"""Room for the outage test's posts and scrape while the circuit is open, on any host."""


@pytest.fixture(scope="module")
def service(judge_server: ChatStandIn) -> Iterator[LiveServer]:
    env = {
        "REWARD_JUDGE__BASE_URL": judge_server.base_url,
        "REWARD_JUDGE__MODEL": "judge-model",
        "REWARD_JUDGE__API_KEY": SECRET,
        "REWARD_JUDGE__MAX_RETRIES": "0",
        "REWARD_JUDGE__BREAKER_FAILURES": "3",
        "REWARD_JUDGE__BREAKER_OPEN_S": str(BREAKER_OPEN_S),
        "REWARD_ACCESS_LOG": "off",
    }
    with live_server(workers=1, env=env) as server:
        yield server


def words_judge(request: dict[str, Any]) -> Reply:
    """A judge that knows `four` is 4: CORRECT for 4 or four, else INCORRECT."""
    prompt = prompt_of(request)
    answer = section(prompt, "Candidate's final answer:")
    correct = answer.strip().rstrip(".").lower() in {"4", "four", "the answer is four"}
    return completion(f"{verdict_form(prompt)}{'CORRECT' if correct else 'INCORRECT'}")


def samples(server: LiveServer) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    text = httpx.get(f"{server.url}/metrics", timeout=10).text
    return {
        (s.name, frozenset(s.labels.items())): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def test_slime_remote_rm_gets_judge_rewards_from_math_judge(
    service: LiveServer, stand_in: ChatStandIn
) -> None:
    """SLIME's client shape (one session, 64 connections, bare-number JSON) at
    /score/math_judge: rule matches, a worded answer the judge accepts, a wrong one it
    rejects; eight answers per prompt, one judge call per distinct final answer."""
    stand_in.reset(words_judge)
    groups = [
        ("\\boxed{4}", 1.0),
        ("<think>2+2</think>The answer is four.", 1.0),
        ("<think>2+3</think>\\boxed{5}", 0.0),
    ]
    items = [
        {"prompt": [{"role": "user", "content": f"Q{g}: 2+2?"}], "response": r, "label": "4"}
        for g, (r, _) in enumerate(groups)
        for _ in range(8)
    ]
    rewards = asyncio.run(_slime_client(f"{service.url}/score/math_judge", items))
    assert rewards == [reward for _, reward in groups for _ in range(8)]
    assert stand_in.calls == 2, "the rule's match asks nothing; each group's answer once"
    assert stand_in.headers[0]["authorization"] == f"Bearer {SECRET}"


def test_detail_says_which_path_decided(service: LiveServer, stand_in: ChatStandIn) -> None:
    """`?detail=1` shows `path: rule` for math_verify's match and `path: judge` with the
    verdict for the judge's."""
    stand_in.reset(words_judge)
    url = f"{service.url}/score/math_judge?detail=1"
    rule = httpx.post(url, json={"prompt": "p", "response": "\\boxed{4}", "label": 4}).json()
    judged = httpx.post(url, json={"prompt": "p", "response": "four", "label": 4}).json()
    assert (rule["path"], rule["status"], rule["rule"]["status"]) == ("rule", "ok", "ok")
    assert (judged["path"], judged["verdict"], judged["reward"]) == ("judge", "CORRECT", 1.0)
    assert judged["rule"]["status"] == "no_answer" and judged["scorer"] == "math_judge"


def test_scorers_listing_shows_the_judge_but_never_its_key(service: LiveServer) -> None:
    """GET /scorers lists judge and math_judge with their start-up checks; the key is nowhere."""
    answer = httpx.get(f"{service.url}/scorers", timeout=10)
    listing = answer.json()
    assert {"judge", "math_judge", "boxed_judge"} <= set(listing["scorers"])
    assert listing["checks"]["judge"]["ok"] and listing["checks"]["judge"]["model"] == "judge-model"
    assert SECRET not in answer.text


def test_outage_costs_no_run_and_is_counted(service: LiveServer, stand_in: ChatStandIn) -> None:
    """With the judge failing every answer still gets 200 and the fallback reward, status
    `judge_failed`; the breaker opens and stops the calls; metrics count it all; after the
    wait (polled, not slept) a good probe closes the circuit again."""
    before = samples(service)
    stand_in.reset(lambda request: Reply(500, b"{}"))
    url = f"{service.url}/score/judge?detail=1"
    answers = [
        httpx.post(url, json={"prompt": "p", "response": f"x{n}", "label": "4"}, timeout=30)
        for n in range(6)
    ]
    assert [a.status_code for a in answers] == [200] * 6
    assert {(a.json()["status"], a.json()["reward"]) for a in answers} == {("judge_failed", 0.0)}
    kinds = [a.json()["judge"]["failure"] for a in answers]
    assert kinds == ["server_error"] * 3 + ["circuit_open"] * 3
    assert stand_in.calls == 3
    after = samples(service)

    def delta(name: str, **labels: str) -> float:
        key = (name, frozenset(labels.items()))
        return after.get(key, 0.0) - before.get(key, 0.0)

    assert delta("reward_outcomes_total", scorer="judge", status="judge_failed") == 6
    assert delta("reward_judge_failures_total", scorer="judge", kind="server_error") == 3
    assert delta("reward_judge_failures_total", scorer="judge", kind="circuit_open") == 3
    assert delta("reward_judge_calls_total", scorer="judge") == 3
    assert after[("reward_judge_circuit", frozenset({("scorer", "judge"), ("state", "open")}))] == 1
    stand_in.reset()
    deadline = time.monotonic() + BREAKER_OPEN_S + 30
    while True:
        body = {"prompt": "p", "response": "4", "label": "4"}
        probe = httpx.post(url, json=body, timeout=30).json()
        if probe["judge"].get("failure") != "circuit_open":
            break
        assert time.monotonic() < deadline, probe
        time.sleep(0.2)
    assert (probe["status"], probe["judge"]["circuit"]) == ("ok", "closed")
    assert SECRET not in httpx.get(f"{service.url}/metrics", timeout=10).text


def test_metrics_know_every_failure_kind() -> None:
    """The metrics' set of judge failure kinds is the client's: none is counted as `other`."""
    assert metrics._JUDGE_FAILURES == FAILURES


def test_judge_facts_outside_known_values_add_no_series() -> None:
    """Judge facts a scorer reports with unknown kinds or states, or values that are not
    numbers, are counted as `other` or not at all: no client string becomes a label."""
    recorded = metrics.ServiceMetrics()
    for i in range(50):
        facts = {"calls": "many", "tokens_in": -3, "failure": f"kind-{i}", "circuit": f"s{i}"}
        recorded.record(Graded(Score(0.0, Status.JUDGE_FAILED, {"judge": facts}), "judge", 1.0))
    text = recorded.exposition().decode()
    assert 'reward_judge_failures_total{kind="other",scorer="judge"} 50.0' in text
    assert "kind-" not in text and 'state="s' not in text
    assert "reward_judge_calls_total{" not in text and "reward_judge_tokens_total{" not in text


async def test_retry_later_policy_answers_503_with_retry_after(stand_in: ChatStandIn) -> None:
    """With `on_outage=retry_later` an open circuit is a 503 with the breaker's Retry-After,
    through the error tree, for a team that would rather wait than train on fallbacks."""
    from reward_service.server.app import create_app

    stand_in.reset(lambda request: Reply(500, b"{}"))
    judge = {
        "base_url": stand_in.base_url,
        "model": "m",
        "max_retries": 0,
        "on_outage": "retry_later",
        "breaker_failures": 1,
        "breaker_open_s": 9,
    }
    app = create_app(Settings(workers=1, scorers={"judge": judge}))
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://svc") as client:
            body = {"prompt": "p", "response": "4", "label": "4"}
            answer = await client.post("/score/judge", json=body)
    assert answer.status_code == 503 and answer.headers["retry-after"] == "9"
    assert "unavailable" in answer.json()["error"]
