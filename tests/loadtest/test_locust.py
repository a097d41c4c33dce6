"""The CI load run: locust against a loopback service holds loadtest/thresholds.toml."""

from __future__ import annotations

from pathlib import Path

import pytest

from loadtest.run_ci import load_thresholds, read_stats, run_locust, summary, violations
from reward_service.testing import Reply, StandIn, live_server


@pytest.mark.slow
@pytest.mark.alone
@pytest.mark.timeout(300)
def test_rollout_and_evaluation_load_holds_the_thresholds(tmp_path: Path) -> None:
    """64 SLIME-like users for 15 s: no failure, no wrong reward, p99 and volume in bounds."""
    thresholds = load_thresholds()
    run = thresholds["run"]
    with live_server(workers=run["workers"]) as server:
        completed = run_locust(server.url, run, results=tmp_path)
    print(summary(completed))
    assert completed.returncode == 0, completed.stderr[-2000:]
    assert violations(read_stats(tmp_path), thresholds["limits"]) == []


@pytest.mark.slow  # no `alone`: it counts wrong rewards, whatever the machine's load
@pytest.mark.timeout(120)
def test_a_service_that_grades_wrongly_fails_the_load_test(tmp_path: Path) -> None:
    """Against a stand-in that rewards every answer 1.0, locust counts wrong rewards."""
    run = {"users": 8, "spawn_rate": 8, "run_time_s": 4, "stop_timeout_s": 5}
    with StandIn() as stand_in:
        stand_in.route("/score", lambda body: Reply(body=1.0))
        stand_in.route(
            "/score/batch", lambda body: Reply(body={"rewards": [1.0] * len(body["items"])})
        )
        completed = run_locust(stand_in.url, run, results=tmp_path)
    assert completed.returncode == 0, completed.stderr[-2000:]
    stats = read_stats(tmp_path)
    assert stats.wrong_rewards > 0
    limits = load_thresholds()["limits"]
    assert any("wrong" in broken for broken in violations(stats, limits))
