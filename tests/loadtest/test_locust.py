"""The CI load run: locust against a loopback service holds loadtest/thresholds.toml."""

from __future__ import annotations

import pytest

from loadtest.run_ci import load_thresholds, read_stats, run_locust, summary, violations
from reward_service.testing import live_server


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_rollout_and_evaluation_load_holds_the_thresholds() -> None:
    """64 SLIME-like users for 60 s: no failure, no wrong reward, p99 and volume in bounds."""
    thresholds = load_thresholds()
    run = thresholds["run"]
    with live_server(workers=run["workers"]) as server:
        completed = run_locust(server.url, run)
    print(summary(completed))
    assert completed.returncode == 0, completed.stderr[-2000:]
    assert violations(read_stats(), thresholds["limits"]) == []
