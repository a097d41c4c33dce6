"""verl's `custom_reward_function` (`compute_score`) against a live server."""

from __future__ import annotations

import array
import json
import os
import threading
from collections.abc import Iterator

import pytest

from reward_service.clients import verl
from reward_service.testing import LiveServer

KEYS = {"score", "status", "scorer", "loss_multiplier"}


@pytest.fixture
def service(server: LiveServer, monkeypatch: pytest.MonkeyPatch) -> Iterator[LiveServer]:
    """The live server as `REWARD_SERVICE_URL`, with a fresh module client."""
    monkeypatch.setenv(verl.URL_VARIABLE, server.url)
    verl.close()
    yield server
    verl.close()


def test_compute_score_grades_through_the_service(service: LiveServer) -> None:
    """A correct answer earns score 1.0, status ok, from math_verify, not masked."""
    result = verl.compute_score("openai/gsm8k", "... so \\boxed{18}", "18", {"index": 3})
    assert result == {"score": 1.0, "status": "ok", "scorer": "math_verify", "loss_multiplier": 1.0}


def test_a_sample_that_could_not_be_graded_is_masked(service: LiveServer) -> None:
    """A null label is an `error`: its fallback score comes with loss_multiplier 0.0."""
    result = verl.compute_score("math", "\\boxed{4}", None)
    assert (result["status"], result["loss_multiplier"]) == ("error", 0.0)


@pytest.mark.parametrize(
    ("solution", "ground_truth"),
    [("\\boxed{18}", "18"), ("\\boxed{17}", "18"), ("I ran out of tok", "18"), ("x", None)],
)
def test_every_answer_has_the_same_keys(
    service: LiveServer, solution: str, ground_truth: str | None
) -> None:
    """Right, wrong, unanswered and ungradable samples all answer the same keys."""
    assert set(verl.compute_score("math", solution, ground_truth)) == KEYS


def test_extra_info_scorer_picks_the_scorer(service: LiveServer) -> None:
    """`extra_info["scorer"]` sends the sample to `/score/<scorer>`."""
    result = verl.compute_score("mine", "0.25", None, extra_info={"scorer": "fake"})
    assert (result["score"], result["scorer"]) == (0.25, "fake")


def test_ground_truth_object_routes_the_sample(service: LiveServer) -> None:
    """A ground truth with a `scorer` key is routed as a SLIME label would be."""
    truth = {"scorer": "choice", "answer": "Paris", "choices": ["London", "Paris"]}
    result = verl.compute_score("gpqa", "Answer: B", truth)
    assert (result["score"], result["scorer"]) == (1.0, "choice")


def test_array_ground_truth_is_sent_as_a_list(service: LiveServer) -> None:
    """Array-like ground truths (parquet columns) are sent as JSON lists of alternatives."""
    result = verl.compute_score("math", "\\boxed{4}", array.array("i", [3, 4]))
    assert result["score"] == 1.0


def test_one_client_serves_many_threads(service: LiveServer) -> None:
    """Concurrent calls from threads share one client and each get their own reward."""
    results: dict[int, float] = {}

    def grade(i: int) -> None:
        results[i] = verl.compute_score("m", f"0.{i}", None, {"scorer": "fake"})["score"]

    threads = [threading.Thread(target=grade, args=(i,)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert results == {i: float(f"0.{i}") for i in range(8)}
    assert verl._shared_client() is verl._shared_client()


def test_forked_child_builds_its_own_client(service: LiveServer) -> None:
    """After `fork`, the child drops the parent's client and grades through its own."""
    parent_client = verl._shared_client()
    verl.compute_score("m", "0.5", None, {"scorer": "fake"})
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(read_end)
            fresh = verl._client is None
            score = verl.compute_score("m", "0.75", None, {"scorer": "fake"})["score"]
            os.write(write_end, json.dumps([fresh, score]).encode())
        finally:
            os._exit(0)
    os.close(write_end)
    with os.fdopen(read_end) as pipe:
        child = json.loads(pipe.read())
    os.waitpid(pid, 0)
    assert child == [True, 0.75]
    assert verl._shared_client() is parent_client


def test_url_defaults_to_loopback(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without `REWARD_SERVICE_URL` the client targets `http://127.0.0.1:8000`."""
    monkeypatch.delenv(verl.URL_VARIABLE, raising=False)
    verl.close()
    try:
        assert str(verl._shared_client()._http.base_url) == "http://127.0.0.1:8000"
    finally:
        verl.close()
