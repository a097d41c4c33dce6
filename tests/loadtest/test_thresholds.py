"""The CI runner reads locust's CSVs right and names every broken threshold."""

from __future__ import annotations

from pathlib import Path

from loadtest.run_ci import LoadStats, load_thresholds, read_stats, violations

_STATS_HEADER = (
    "Type,Name,Request Count,Failure Count,Median Response Time,Average Response Time,"
    "Min Response Time,Max Response Time,Average Content Size,Requests/s,Failures/s,"
    "50%,66%,75%,80%,90%,95%,98%,99%,99.9%,99.99%,100%\n"
)


def _write_run(results: Path, failures: str) -> None:
    results.mkdir(parents=True, exist_ok=True)
    (results / "locust_stats.csv").write_text(
        _STATS_HEADER
        + "POST,/score [rollout],900,3,400,430,9,1800,3.0,150,0.05,"
        + "400,480,540,590,730,830,930,1100,1700,1800,1800\n"
        + ",Aggregated,1000,3,400,440,0,2000,3.0,163,0.05,"
        + "400,490,560,610,760,850,970,1200,2000,2000,2000\n"
    )
    (results / "locust_failures.csv").write_text("Method,Name,Error,Occurrences\n" + failures)


def test_read_stats_takes_the_aggregated_row_and_counts_wrong_rewards(tmp_path: Path) -> None:
    """Totals come from `Aggregated`; wrong rewards are summed from the failures table."""
    _write_run(
        tmp_path,
        "POST,/score [rollout],wrong reward: expected 1.0 got 0.0,2\nPOST,/score,HTTP 503,1\n",
    )
    assert read_stats(tmp_path) == LoadStats(1000, 3, 2, 1200.0, 2000.0, 163.0)


def test_violations_name_each_broken_threshold() -> None:
    """A run with failures, wrong rewards and a slow tail breaks exactly those limits."""
    limits = load_thresholds()["limits"]
    stats = LoadStats(5000, 3, 2, limits["p99_ms"] + 1, 100.0, 80.0)
    broken = violations(stats, limits)
    assert len(broken) == 3
    assert violations(LoadStats(5000, 0, 0, 100.0, 100.0, 80.0), limits) == []
