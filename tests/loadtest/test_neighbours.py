"""Nothing one request does slows or disturbs the others (issue 36's closing check): hostile
bodies, builds that try to configure themselves and abandoned runs beside a steady SLIME load.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Iterator

import httpx
import pytest

from loadtest.neighbours import neighbours_in_a_process
from reward_service.testing import LivenessProbe, LiveServer, live_server
from tests.conftest import TEST_ENV, gradings_in_flight

SECONDS = 12.0
IDLE_WITHIN_S = 5.0
"""The last abandoned runs' client hung up at least 2 s before the load ended."""


@pytest.fixture
def service() -> Iterator[LiveServer]:
    """Two workers, the test scorers' short deadlines, access logs off."""
    with live_server(workers=2, env={**TEST_ENV, "REWARD_ACCESS_LOG": "off"}) as running:
        yield running


def _rejected(metrics: str, reason: str) -> float:
    prefix = f'reward_rejected_requests_total{{reason="{reason}"}} '
    return sum(float(line.split()[-1]) for line in metrics.splitlines() if line.startswith(prefix))


@pytest.mark.slow
@pytest.mark.alone
def test_neighbours_never_disturb_a_steady_load(service: LiveServer) -> None:
    """For 12 s: a SLIME-shaped stream, 8 MiB bodies of nested lists (413), bodies nested too
    deep (400) or of 50,000 objects (graded), C++ builds handed files that would configure
    g++ (still `plain`), and spinning runs whose client hangs up after 1 s (stopped). The stream
    loses nothing and gets every reward right; /livez p99 < 50 ms and max < 100 ms."""
    with LivenessProbe(service.url) as probe:
        report = neighbours_in_a_process(service.url, SECONDS)
    p99_s = statistics.quantiles(probe.seconds, n=100)[-1]
    seen = f"livez p99 {p99_s * 1000:.1f} ms, max {probe.slowest_s * 1000:.1f} ms"
    print(seen, f"over {probe.answers} probes; {report.steady_answers} steady answers")
    assert report.steady_wrong == []
    assert report.steady_answers >= 100
    assert {kind: set(statuses) for kind, statuses in report.hostile.items()} == {
        "nested": {413},
        "deep": {400},
        "wide": {200},
    }
    assert report.builds and set(report.builds) == {"plain\n"}
    with httpx.Client(base_url=service.url, timeout=10) as client:
        idle_by = time.monotonic() + IDLE_WITHIN_S
        while gradings_in_flight(metrics := client.get("/metrics").text) > 0:
            assert time.monotonic() < idle_by, "abandoned runs still in flight"
            time.sleep(0.1)
    assert _rejected(metrics, "ClientGone") == report.abandoned
    assert probe.failures == 0
    assert p99_s < 0.05 and probe.slowest_s < 0.1, seen
