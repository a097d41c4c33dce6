"""The client library against a live server, and against a scripted stand-in for failures."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from reward_service.clients.http import (
    AsyncRewardClient,
    RequestRejected,
    RetryPolicy,
    RewardClient,
    RewardServiceUnavailable,
    UnexpectedAnswer,
    loss_multiplier,
)
from reward_service.testing import LiveServer, Reply, StandIn, free_port, live_server

FAST = RetryPolicy(attempts=3, backoff_s=0.01, max_wait_s=0.05)
ITEMS = [{"response": str(i / 10), "label": None} for i in range(5)]


@pytest.fixture
def stand_in() -> Iterator[StandIn]:
    """A scripted server on loopback with no routes yet."""
    with StandIn() as server:
        yield server


def script(stand_in: StandIn, path: str, *replies: Reply) -> None:
    """Answer `path` with `replies` in turn, repeating the last one."""
    queue = list(replies)

    def answer(_: object) -> Reply:
        return queue.pop(0) if len(queue) > 1 else queue[0]

    stand_in.route(path, answer)


def test_score_returns_the_reward(server: LiveServer) -> None:
    """`score` answers the service's reward as a float."""
    with RewardClient(server.url) as client:
        assert client.score("0.25", None, scorer="fake") == 0.25


def test_score_uses_the_default_scorer(server: LiveServer) -> None:
    """Without a scorer the answer goes to `/score`, graded by math_verify."""
    with RewardClient(server.url) as client:
        assert client.score("so \\boxed{\\frac{3}{4}}", "0.75", prompt="1/2 + 1/4?") == 1.0


def test_score_detail_returns_the_detail_object(server: LiveServer) -> None:
    """`detail=True` answers the service's detail object."""
    with RewardClient(server.url) as client:
        detail = client.score("0.5", None, scorer="fake", detail=True)
    assert (detail["reward"], detail["status"], detail["scorer"]) == (0.5, "ok", "fake")


def test_score_batch_keeps_input_order_across_chunks(server: LiveServer) -> None:
    """A batch larger than `batch_size` is split, and rewards come back in input order."""
    with RewardClient(server.url, batch_size=2) as client:
        assert client.score_batch(ITEMS, scorer="fake") == [0.0, 0.1, 0.2, 0.3, 0.4]


def test_score_batch_detail_returns_detail_objects(server: LiveServer) -> None:
    """`score_batch(detail=True)` answers one detail object per item, in order."""
    with RewardClient(server.url) as client:
        details = client.score_batch(ITEMS[:2], scorer="fake", detail=True)
    assert [(d["reward"], d["scorer"]) for d in details] == [(0.0, "fake"), (0.1, "fake")]


def test_ready_is_true_for_a_live_server(server: LiveServer) -> None:
    """`ready` is True while `/readyz` answers 200."""
    with RewardClient(server.url) as client:
        assert client.ready()


def test_ready_is_false_when_nothing_listens() -> None:
    """`ready` answers False, without retrying, when the port is closed."""
    with RewardClient(f"http://127.0.0.1:{free_port()}", retry=FAST) as client:
        assert not client.ready()


def test_unknown_scorer_is_rejected_with_the_server_message(server: LiveServer) -> None:
    """A 404 raises `RequestRejected` at once, carrying the service's `error` text."""
    with RewardClient(server.url) as client, pytest.raises(RequestRejected) as caught:
        client.score("1", None, scorer="nope")
    assert caught.value.status_code == 404
    assert "unknown scorer 'nope'" in str(caught.value) and "fake" in caught.value.message


@pytest.mark.parametrize("status", [429, 502, 503, 504])
def test_overload_and_gateway_statuses_are_retried(stand_in: StandIn, status: int) -> None:
    """429, 502, 503 and 504 are retried until the service answers."""
    script(stand_in, "/score", Reply(status, {"error": "busy"}), Reply(200, 0.75))
    with RewardClient(stand_in.url, retry=FAST) as client:
        assert client.score("x", "y") == 0.75
    assert stand_in.paths() == ["/score", "/score"]


def test_retry_after_is_honoured(stand_in: StandIn) -> None:
    """The client waits at least the `Retry-After` seconds the service asks for."""
    script(stand_in, "/score", Reply(503, {"error": "full"}, {"Retry-After": "1"}), Reply(200, 1))
    started = time.monotonic()
    with RewardClient(stand_in.url, retry=RetryPolicy(backoff_s=0.01)) as client:
        assert client.score("x", "y") == 1.0
    assert time.monotonic() - started >= 1.0


def test_retry_after_is_capped(stand_in: StandIn) -> None:
    """A `Retry-After` beyond `max_wait_s` is cut down to it."""
    script(stand_in, "/score", Reply(429, {}, {"Retry-After": "3600"}), Reply(200, 0.5))
    started = time.monotonic()
    with RewardClient(stand_in.url, retry=FAST) as client:
        assert client.score("x", "y") == 0.5
    assert time.monotonic() - started < 5


def test_last_failed_attempt_raises_naming_url_and_status(stand_in: StandIn) -> None:
    """After the last 503 the error names the URL, the attempts and the status."""
    script(stand_in, "/score/fake", Reply(503, {"error": "full"}, {"Retry-After": "0"}))
    with (
        RewardClient(stand_in.url, retry=FAST) as client,
        pytest.raises(RewardServiceUnavailable) as caught,
    ):
        client.score("x", "y", scorer="fake")
    assert caught.value.status == 503 and len(stand_in.requests) == 3
    assert f"{stand_in.url}/score/fake unavailable after 3 attempts: HTTP 503" in str(caught.value)


def test_connection_errors_are_retried_then_raise() -> None:
    """A closed port is retried, then raises `RewardServiceUnavailable` with no status."""
    with (
        RewardClient(f"http://127.0.0.1:{free_port()}", retry=FAST) as client,
        pytest.raises(RewardServiceUnavailable, match="after 3 attempts: ConnectError") as caught,
    ):
        client.score("x", "y")
    assert caught.value.status is None


@pytest.mark.parametrize("status", [400, 401, 413, 500])
def test_other_errors_are_not_retried(stand_in: StandIn, status: int) -> None:
    """Client errors (and 500) raise `RequestRejected` after one request."""
    script(stand_in, "/score", Reply(status, {"error": "no good"}))
    with (
        RewardClient(stand_in.url, retry=FAST) as client,
        pytest.raises(RequestRejected, match=f"HTTP {status}: no good"),
    ):
        client.score("x", "y")
    assert len(stand_in.requests) == 1


@pytest.mark.parametrize("body", [{"reward": 1}, "1.0", True])
def test_an_answer_that_is_not_a_reward_raises(stand_in: StandIn, body: object) -> None:
    """A 200 whose body is not a number raises `UnexpectedAnswer`."""
    script(stand_in, "/score", Reply(200, body))
    with RewardClient(stand_in.url, retry=FAST) as client, pytest.raises(UnexpectedAnswer):
        client.score("x", "y")


def test_batch_of_the_wrong_length_raises(stand_in: StandIn) -> None:
    """A batch answer with fewer rewards than items raises `UnexpectedAnswer`."""
    script(stand_in, "/score/batch", Reply(200, {"rewards": [1.0]}))
    with RewardClient(stand_in.url, retry=FAST) as client, pytest.raises(UnexpectedAnswer):
        client.score_batch(ITEMS[:2])


def test_api_token_is_sent_as_bearer() -> None:
    """With `api_token` a token-guarded service grades; without it the 401 is not retried."""
    with live_server(workers=1, env={"REWARD_API_TOKEN": "s3cret"}) as guarded:
        with RewardClient(guarded.url, api_token="s3cret") as client:
            assert client.score("yes", "yes", scorer="exact") == 1.0
        with (
            RewardClient(f"{guarded.url}/t/wrong", retry=FAST) as client,
            pytest.raises(RequestRejected, match="HTTP 401: unauthorized") as caught,
        ):
            client.score("x", "y")
    assert "/t/***/score" in caught.value.url and "wrong" not in str(caught.value)


async def test_async_score_and_batch(server: LiveServer) -> None:
    """The async client scores one answer, a detail object and a chunked batch."""
    async with AsyncRewardClient(server.url, batch_size=2) as client:
        assert await client.ready()
        assert await client.score("0.5", None, scorer="fake") == 0.5
        detail = await client.score("0.5", None, scorer="fake", detail=True)
        assert detail["status"] == "ok"
        assert await client.score_batch(ITEMS, scorer="fake") == [0.0, 0.1, 0.2, 0.3, 0.4]


async def test_async_retries_then_succeeds(stand_in: StandIn) -> None:
    """The async client retries a 503 and returns the next answer."""
    script(stand_in, "/score", Reply(503, {}, {"Retry-After": "0"}), Reply(200, 0.25))
    async with AsyncRewardClient(stand_in.url, retry=FAST) as client:
        assert await client.score("x", "y") == 0.25


async def test_async_last_failed_attempt_raises(stand_in: StandIn) -> None:
    """The async client raises `RewardServiceUnavailable` after its last attempt."""
    script(stand_in, "/score", Reply(502, {}))
    async with AsyncRewardClient(stand_in.url, retry=FAST) as client:
        with pytest.raises(RewardServiceUnavailable, match="HTTP 502"):
            await client.score("x", "y")


@pytest.mark.parametrize(
    ("detail", "expected"),
    [
        ({"status": "timeout"}, 0.0),
        ({"status": "wrong"}, 1.0),
        ({"status": "ok", "loss_multiplier": 0}, 0.0),
        ({"status": "from a future version"}, 1.0),
    ],
)
def test_the_mask_is_read_from_the_status_when_the_service_sends_none(
    detail: dict[str, object], expected: float
) -> None:
    """An older service sends no loss_multiplier: the status says it."""
    assert loss_multiplier(detail) == expected
