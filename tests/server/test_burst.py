"""An arrival burst (2,000 judge answers, each on its own connection, all at once) never
pauses the event loop long enough to fail a liveness probe.

The stand-in judge and the burst's client each run as a process of their own, so
neither shares an interpreter with the probe that times `/livez`.
"""

from __future__ import annotations

from collections.abc import Iterator

import orjson
import pytest

from loadtest.burst import burst_in_a_process
from reward_service.testing import LivenessProbe, LiveServer, live_server, stand_in_judge

BURST = 2_000
GROUP = 8
JUDGE_LATENCY_S = 0.5


@pytest.fixture(scope="module")
def judge_url() -> Iterator[str]:
    """A stand-in judge process answering after 0.25-0.75 s."""
    with stand_in_judge(JUDGE_LATENCY_S) as url:
        yield url


@pytest.fixture(scope="module")
def service(judge_url: str) -> Iterator[LiveServer]:
    """One worker (the judge grades on the loop), the default admission bound (2,048)."""
    env = {
        "REWARD_JUDGE__BASE_URL": judge_url,
        "REWARD_JUDGE__MODEL": "judge",
        "REWARD_ACCESS_LOG": "off",
    }
    with live_server(workers=1, env=env) as server:
        yield server


def _answers(count: int) -> tuple[list[bytes], list[float]]:
    """`count` judge answers in GRPO groups of `GROUP` (half of each right): bodies, rewards.

    A group's equal answers share a verdict, so the judge is called for a quarter of them:
    the burst's arrival is measured, not the judge's rate."""
    bodies, rewards = [], []
    for n in range(count):
        answer = 42 if n % 2 else 41
        body = {
            "prompt": f"Question {n // GROUP}: what is six times seven?",
            "response": f"<think>six sevens</think>{answer}",
            "label": "42",
        }
        bodies.append(orjson.dumps(body))
        rewards.append(1.0 if answer == 42 else 0.0)
    return bodies, rewards


@pytest.mark.slow
@pytest.mark.alone
def test_an_arrival_burst_leaves_the_loop_answering(service: LiveServer) -> None:
    """2,000 judge answers posted at once, each on its own connection: every one graded right,
    and /livez, probed on one kept-alive connection and on a new connection each time (as
    Kubernetes probes), never waits 0.5 s while the burst's connections are accepted and read."""
    bodies, rewards = _answers(BURST)
    with LivenessProbe(service.url) as kept, LivenessProbe(service.url, True) as fresh:
        answers = burst_in_a_process(service.url, "/score/judge", bodies)
    got = [float(a.body) if a.status == 200 else f"http {a.status}" for a in answers]
    seen = ", ".join(
        f"{name} max {probe.slowest_s * 1000:.0f} ms p95 {probe.p95_s * 1000:.0f} ms "
        f"({probe.answers} probes)"
        for name, probe in (("kept-alive", kept), ("fresh", fresh))
    )
    print(seen)
    assert got == rewards
    assert kept.failures == fresh.failures == 0, seen
    assert kept.slowest_s < 0.5 and fresh.slowest_s < 0.5, seen
