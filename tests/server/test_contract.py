"""The SLIME remote_rm contract, over real sockets (DESIGN.md section 1)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import aiohttp
import httpx
import pytest

from reward_service.bench.workload import grpo_workload, request_body
from reward_service.testing import LiveServer


def _post(server: LiveServer, body: Any, path: str = "/score", **kwargs: Any) -> httpx.Response:
    content = body if isinstance(body, bytes) else json.dumps(body).encode()
    headers = {"Content-Type": "application/json"}
    return httpx.post(f"{server.url}{path}", content=content, headers=headers, timeout=30, **kwargs)


async def _slime_client(url: str, items: list[dict[str, Any]]) -> list[float]:
    """Posts as SLIME does: one session, 64 connections, raise_for_status, resp.json()."""
    connector = aiohttp.TCPConnector(limit=64)
    timeout = aiohttp.ClientTimeout(total=120)
    async with aiohttp.ClientSession(connector=connector, timeout=timeout) as session:

        async def post(item: dict[str, Any]) -> float:
            async with session.post(url, json=request_body(item)) as resp:
                resp.raise_for_status()
                reward: float = await resp.json()
                return reward

        return await asyncio.gather(*(post(item) for item in items))


def test_slime_client_grades_grpo_batch_correctly(server: LiveServer) -> None:
    """Groups of 8 answers per label, mixed label types and forms, all graded right."""
    items = grpo_workload(seed=7, answers=320, min_chars=1_000, max_chars=20_000)
    rewards = asyncio.run(_slime_client(f"{server.url}/score", items))
    assert rewards == [item["expected"] for item in items]
    assert {type(item["label"]) for item in items} >= {int, str, float}
    assert 0 < sum(rewards) < len(rewards)


LONG = "x " * 500_000
WELL_FORMED: dict[str, tuple[dict[str, Any], float, str]] = {
    "string label": ({"prompt": "p", "response": "\\boxed{3}", "label": "3"}, 1.0, "ok"),
    "int label": ({"prompt": "p", "response": "\\boxed{3}", "label": 3}, 1.0, "ok"),
    "float label": ({"prompt": "p", "response": "\\boxed{0.5}", "label": 0.5}, 1.0, "ok"),
    "object label": (
        {"prompt": "p", "response": "\\boxed{3}", "label": {"answer": "3"}},
        1.0,
        "ok",
    ),
    "list label": ({"prompt": "p", "response": "\\boxed{3}", "label": ["2", "3"]}, 1.0, "ok"),
    "wrong answer": ({"prompt": "p", "response": "\\boxed{4}", "label": "3"}, 0.0, "wrong"),
    "null label": ({"prompt": "p", "response": "\\boxed{3}", "label": None}, 0.0, "error"),
    "bool label": ({"prompt": "p", "response": "\\boxed{3}", "label": True}, 0.0, "error"),
    "chat prompt": (
        {
            "prompt": [{"role": "user", "content": [{"type": "text", "text": "hi"}]}],
            "response": "\\boxed{3}",
            "label": "3",
        },
        1.0,
        "ok",
    ),
    "missing fields": ({}, 0.0, "error"),
    "only response": ({"response": "\\boxed{3}"}, 0.0, "error"),
    "extra fields": (
        {"prompt": "p", "response": "\\boxed{3}", "label": "3", "metadata": {"a": 1}},
        1.0,
        "ok",
    ),
    "non-ascii": ({"prompt": "数学", "response": "答案是 \\boxed{3} ✓", "label": "3"}, 1.0, "ok"),
    "special tokens": (
        {"response": "<think>.</think>\\boxed{3}<|im_end|><|endoftext|>", "label": 3},
        1.0,
        "ok",
    ),
    "empty response": ({"prompt": "p", "response": "", "label": "3"}, 0.0, "no_answer"),
    "non-string response": ({"prompt": "p", "response": 3, "label": "3"}, 0.0, "no_answer"),
    "1 MB response": ({"prompt": "p", "response": LONG + "\\boxed{3}", "label": "3"}, 1.0, "ok"),
    "code injection": (
        {"response": "\\boxed{__import__('os').system('touch /tmp/reward_pwned')}", "label": "3"},
        0.0,
        "wrong",
    ),
}


@pytest.mark.parametrize(("body", "reward", "status"), WELL_FORMED.values(), ids=WELL_FORMED.keys())
def test_well_formed_bodies_get_200_and_the_right_reward(
    server: LiveServer, body: dict[str, Any], reward: float, status: str
) -> None:
    """No well-formed SLIME body ever gets a 4xx: the answer is 200 and the right bare number."""
    response = _post(server, body)
    assert response.status_code == 200, response.text
    assert response.headers["content-type"] == "application/json"
    assert response.content == json.dumps(reward).encode()
    detail = _post(server, body, params={"detail": "1"}).json()
    assert (detail["reward"], detail["status"], detail["scorer"]) == (reward, status, "math_verify")


@pytest.mark.parametrize(
    ("body", "reward", "status"),
    [
        ({"response": "\\boxed{3}", "label": 3}, 1.0, "ok"),
        ({"response": "\\boxed{\\frac12}", "label": "0.5"}, 1.0, "ok"),
        ({"response": "\\boxed{2\\sqrt3}", "label": "\\sqrt{12}"}, 1.0, "ok"),
        ({"response": "\\boxed{4}", "label": 3}, 0.0, "wrong"),
        ({"response": "I ran out of tok", "label": 3}, 0.0, "no_answer"),
        ({"response": "\\boxed{3}", "label": None}, 0.0, "error"),
        ({"response": "<|im_end|>\\boxed{3}<|endoftext|>", "label": "3"}, 1.0, "ok"),
    ],
)
def test_detail_answer_tells_failure_from_wrong(
    server: LiveServer, body: dict[str, Any], reward: float, status: str
) -> None:
    """`?detail=1` answers reward, status, scorer and elapsed_ms."""
    detail = _post(server, body, params={"detail": "1"}).json()
    assert (detail["reward"], detail["status"], detail["scorer"]) == (reward, status, "math_verify")
    assert {"reward", "status", "scorer", "elapsed_ms"} <= detail.keys()
    assert isinstance(detail["elapsed_ms"], float)


def test_elapsed_ms_covers_the_grading(server: LiveServer) -> None:
    """`elapsed_ms` includes the scorer's time: an answer graded in 0.3 s reports 300 ms or more."""
    detail = _post(server, {"response": "sleep:0.3"}, "/score/fake?detail=1").json()
    assert (detail["reward"], detail["status"], detail["scorer"]) == (1.0, "ok", "fake")
    assert detail["elapsed_ms"] >= 300


def test_code_injection_runs_nothing(server: LiveServer, tmp_path: Any) -> None:
    """A response that tries to make a parser run Python is graded, never executed."""
    marker = tmp_path / "pwned"
    payload = f"\\boxed{{__import__('os').system('touch {marker}')}}"
    anchored = f"Answer: __import__('pathlib').Path('{marker}').touch()"
    for expr, status in ((payload, "wrong"), (anchored, "no_answer")):
        detail = _post(server, {"response": expr, "label": "3"}, params={"detail": "1"}).json()
        assert (detail["reward"], detail["status"]) == (0.0, status)
    assert not marker.exists()


def test_scorer_chosen_by_path(server: LiveServer) -> None:
    """`/score/<scorer>` grades with that scorer."""
    body = {"response": " a  b ", "label": "a b"}
    detail = _post(server, body, "/score/exact?detail=1").json()
    assert (detail["scorer"], detail["reward"], detail["status"]) == ("exact", 1.0, "ok")
    wrong = _post(server, {"response": "a c", "label": "a b"}, "/score/exact?detail=1").json()
    assert (wrong["scorer"], wrong["reward"], wrong["status"]) == ("exact", 0.0, "wrong")


def test_scorer_chosen_by_label_object(server: LiveServer) -> None:
    """A label object with `scorer` routes that one sample, `answer` being the gold."""
    body = {"response": "a b", "label": {"scorer": "exact", "answer": "a  b"}}
    detail = _post(server, body, params={"detail": "true"}).json()
    assert (detail["scorer"], detail["reward"], detail["status"]) == ("exact", 1.0, "ok")


def test_unknown_scorer_in_label_is_graded_as_error(server: LiveServer) -> None:
    """A dataset naming an unknown scorer gets the fallback reward, not a 4xx SLIME would retry."""
    body = {"response": "1", "label": {"scorer": "nope", "answer": "1"}}
    response = _post(server, body, params={"detail": "1"})
    assert response.status_code == 200
    detail = response.json()
    assert (detail["reward"], detail["status"], detail["scorer"]) == (0.0, "error", "unknown")
    assert detail["reason"].startswith("unknown scorer 'nope'; known scorers: ")
    assert {"exact", "math_verify"} <= set(detail["reason"].split(": ", 1)[1].split(", "))


def test_unknown_scorer_path_is_404_listing_known(server: LiveServer) -> None:
    """An unknown `/score/<name>` is a 404 whose message lists the known scorers."""
    response = _post(server, {"response": "1", "label": "1"}, "/score/nope")
    assert response.status_code == 404
    error = response.json()["error"]
    assert error.startswith("unknown scorer 'nope'; known scorers: ")
    assert {"exact", "math_verify"} <= set(error.split(": ", 1)[1].split(", "))


@pytest.mark.parametrize(
    ("body", "error"),
    [
        (b"[1, 2]", "body must be a JSON object, not list"),
        (b"42", "body must be a JSON object, not int"),
        (b'"text"', "body must be a JSON object, not str"),
        (b"null", "body must be a JSON object, not NoneType"),
        (b"{not json", "body is not valid JSON: "),
        (b"", "body is not valid JSON: "),
    ],
)
def test_non_object_body_is_400_with_message(server: LiveServer, body: bytes, error: str) -> None:
    """A body that is not a JSON object gets 400 and says why."""
    response = _post(server, body)
    assert response.status_code == 400
    assert response.json()["error"].startswith(error)


def test_invalid_utf8_is_400(server: LiveServer) -> None:
    """Bytes that are not UTF-8 are a clear 400, not a 500."""
    response = _post(server, b'{"response": "\xff\xfe", "label": "1"}')
    assert response.status_code == 400
    assert response.json()["error"].startswith("body is not valid JSON: ")


def test_body_over_cap_is_413(server: LiveServer) -> None:
    """A body over `max_body_bytes` (8 MiB by default) gets 413."""
    body = {"response": "x" * (9 * 1024 * 1024), "label": "1"}
    response = _post(server, body)
    assert response.status_code == 413
    assert "over the 8388608-byte cap" in response.json()["error"]


def test_chunked_body_over_cap_is_413(server: LiveServer) -> None:
    """The cap holds for bodies without a Content-Length too."""

    def chunks() -> Any:
        yield b'{"response": "'
        for _ in range(9):
            yield b"x" * (1024 * 1024)
        yield b'"}'

    response = httpx.post(f"{server.url}/score", content=chunks(), timeout=30)
    assert response.status_code == 413
    assert response.json() == {"error": "body is over the 8388608-byte cap"}


def test_health_endpoints(server: LiveServer) -> None:
    """/livez, /readyz and its alias /health answer 200 on a warm server."""
    assert httpx.get(f"{server.url}/livez").json() == {"status": "alive"}
    for path in ("/readyz", "/health"):
        response = httpx.get(f"{server.url}{path}")
        assert (response.status_code, response.json()) == (200, {"status": "ready", "workers": 2})


def test_scorers_lists_every_scorer_and_their_start_up_checks(server: LiveServer) -> None:
    """GET /scorers names the default, every scorer (code included) and each start-up check:
    the code scorer's reports its sandbox's layers."""
    listing = httpx.get(f"{server.url}/scorers", timeout=10).json()
    assert listing["default"] == "math_verify"
    assert {"math_verify", "code", "boxed_code", "fake"} <= set(listing["scorers"])
    check = listing["checks"]["code"]
    assert check["ok"] is True and check["required"] is False, check
    assert {"process", "rlimits"} <= set(check["layers"])
