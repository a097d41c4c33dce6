"""Raw HTTP fuzzing: hostile bodies get a clear 4xx or a graded 200, never a 5xx."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reward_service.testing import LiveServer, live_server
from tests.conftest import TEST_ENV

ROUTES = ["/score", "/score/math", "/score/batch", "/score/exact/batch", "/get_reward"]
CLEAR = {200, 400, 404, 413}
"""Statuses a malformed body may get; 503 is for overload only, which this never reaches."""
MiB = 1024 * 1024

_JSON: st.SearchStrategy[Any] = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**63)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=60),
    lambda children: (
        st.lists(children, max_size=5) | st.dictionaries(st.text(max_size=12), children, max_size=5)
    ),
    max_leaves=20,
)
_SAMPLE = st.fixed_dictionaries(
    {},
    optional={"prompt": _JSON, "response": _JSON | st.text(max_size=500), "label": _JSON},
)
_BODY = (
    _JSON
    | _SAMPLE
    | st.fixed_dictionaries({"items": st.lists(_SAMPLE | _JSON, max_size=8)})
    | st.fixed_dictionaries({"query": _JSON, "prompts": _JSON, "labels": _JSON})
)


@pytest.fixture(scope="module")
def client(fuzz_server: LiveServer) -> Iterator[httpx.Client]:
    """A keep-alive client on the fuzz server."""
    with httpx.Client(base_url=fuzz_server.url, timeout=30) as session:
        yield session


def _post(client: httpx.Client, route: str, content: bytes, detail: bool = False) -> httpx.Response:
    params = {"detail": "1"} if detail else None
    headers = {"content-type": "application/json"}
    return client.post(route, content=content, headers=headers, params=params)


def _assert_clear(response: httpx.Response) -> None:
    """A clear status with a JSON body; a 200 on one answer is a bare number."""
    request = response.request
    reproducer = f"{request.method} {request.url.path} body[:300]={request.content[:300]!r}"
    assert response.status_code in CLEAR, f"{response.status_code} for {reproducer}"
    assert response.headers["content-type"].startswith("application/json"), reproducer
    answer = response.json()
    if response.status_code == 200 and request.url.path.startswith("/score"):
        if request.url.path.endswith("/batch"):
            assert all(isinstance(r, float) for r in answer["rewards"]), reproducer
        else:
            assert isinstance(answer, float), reproducer


def _assert_alive(client: httpx.Client) -> None:
    assert client.get("/livez").status_code == 200
    assert client.get("/readyz").status_code == 200


@pytest.mark.parametrize("route", ROUTES)
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(body=_BODY)
def test_random_json_bodies_get_clear_answers(client: httpx.Client, route: str, body: Any) -> None:
    """Any JSON value as a body gets 200 with rewards, or a 4xx with a JSON error."""
    _assert_clear(_post(client, route, json.dumps(body).encode()))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(route=st.sampled_from(ROUTES), content=st.binary(max_size=2_000))
def test_random_bytes_get_clear_answers(client: httpx.Client, route: str, content: bytes) -> None:
    """Arbitrary bytes, invalid UTF-8 included, get a 4xx or a graded 200."""
    _assert_clear(_post(client, route, content))


def _nested(depth: int, leaf: str = "1") -> str:
    return "[" * depth + leaf + "]" * depth


def _sample_nested(field: str, depth: int = 1000) -> str:
    """A sample whose `field` is a `depth`-deep array, under orjson's 1,024 limit."""
    others = {key: "1" for key in ("response", "label") if key != field}
    return json.dumps(others)[:-1] + f', "{field}": {_nested(depth)}}}'


def _batch(sample: str) -> str:
    return f'{{"items": [{sample}]}}'


HOSTILE_BODIES = {
    "nesting 10,000 deep": ("/score", b"[" * 10_000),
    "object nesting 10,000 deep": ("/score", b'{"a":' * 10_000 + b"1" + b"}" * 10_000),
    "invalid UTF-8": ("/score", b'{"response": "\xff\xfe\\boxed{1}", "label": "1"}'),
    "lone surrogate escape": ("/score", b'{"response": "\\ud800", "label": "\\udc00"}'),
    "truncated JSON": ("/score", b'{"response": "\\boxed{1}", "label": '),
    "NaN label": ("/score", b'{"response": "\\boxed{1}", "label": NaN}'),
    "integer past float range": ("/score", b'{"response": "1", "label": ' + b"9" * 400 + b"}"),
    "empty body": ("/score", b""),
    "batch of 1,025 items": ("/score/batch", json.dumps({"items": [{}] * 1025}).encode()),
    "body over 8 MiB": ("/score", json.dumps({"response": "x" * (8 * MiB + 1)}).encode()),
}


@pytest.mark.parametrize("case", list(HOSTILE_BODIES))
def test_hostile_body_gets_a_clear_answer(client: httpx.Client, case: str) -> None:
    """Deep nesting, bad encodings, over-size bodies: a 4xx or a graded 200; the server lives."""
    route, content = HOSTILE_BODIES[case]
    _assert_clear(_post(client, route, content))
    _assert_alive(client)


@pytest.fixture
def wedgeable_server() -> Iterator[LiveServer]:
    """A private server for requests that may wedge it; short drain so a hang ends fast."""
    with live_server(workers=2, env={**TEST_ENV, "REWARD_DRAIN_S": "1"}) as running:
        yield running


def test_deeply_nested_label_or_prompt_never_wedges_the_pool(
    wedgeable_server: LiveServer,
) -> None:
    """1,000-deep labels, prompts and queries get clear answers; the next answer is still graded."""
    nested = [
        ("/score", _sample_nested("label")),
        ("/score", _sample_nested("prompt")),
        ("/score/batch", _batch(_sample_nested("label"))),
        ("/get_reward", f'{{"query": [{_nested(1000)}]}}'),
    ]
    with httpx.Client(base_url=wedgeable_server.url, timeout=10) as session:
        for route, body in nested:
            _assert_clear(_post(session, route, body.encode()))
        normal = {"response": "so \\boxed{7}", "label": 7}
        assert _post(session, "/score", json.dumps(normal).encode()).json() == 1.0


@pytest.mark.parametrize("route", ["/score", "/score/batch"])
def test_response_nested_1000_deep_gets_a_clear_answer(client: httpx.Client, route: str) -> None:
    """A `response` that is a 1,000-deep JSON array is graded (0.0), not a 500."""
    sample = _sample_nested("response")
    body = sample if route == "/score" else _batch(sample)
    _assert_clear(_post(client, route, body.encode()))


@pytest.mark.parametrize("size", [1, 1_000_000, 4 * MiB])
def test_huge_response_is_graded(client: httpx.Client, size: int) -> None:
    """A response of up to 4 MiB of text ending in the right answer is graded 1.0."""
    body = {"prompt": "p", "response": "x" * size + " so \\boxed{42}", "label": 42}
    response = _post(client, "/score", json.dumps(body).encode(), detail=True)
    assert response.status_code == 200
    detail = response.json()
    expected = (1.0, "ok") if size < 2_000_000 else (0.0, "no_answer")
    assert (detail["reward"], detail["status"]) == expected
    _assert_alive(client)


def test_wrong_content_type_is_still_read_as_json(client: httpx.Client) -> None:
    """A JSON body sent as text/plain is graded like any other: SLIME's clients vary."""
    body = json.dumps({"response": "\\boxed{2}", "label": 2})
    response = client.post("/score", content=body, headers={"content-type": "text/plain"})
    assert (response.status_code, response.json()) == (200, 1.0)
