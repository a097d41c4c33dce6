"""Run the locust load test headless and hold it to `loadtest/thresholds.toml`.

    python loadtest/run_ci.py                      # a loopback service, the CI run
    python loadtest/run_ci.py --host http://svc:8000 --users 256 --run-time-s 300

Without `--host` it starts `reward-service serve` on 127.0.0.1 (the
thresholds' worker count) and stops it afterwards. Reports go to
`results/loadtest/`: `locust_stats.csv`, `locust_failures.csv`,
`locust.html` and the console summary in `locust.log`. The exit code is 0
when every threshold holds; each broken one is printed.

This module does not import locust (gevent patches the process it runs in):
locust always runs as a `python -m locust` subprocess with a hard timeout.
"""

from __future__ import annotations

import argparse
import csv
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib
else:
    import tomli as tomllib

ROOT = Path(__file__).resolve().parent.parent
LOCUSTFILE = ROOT / "loadtest" / "locustfile.py"
THRESHOLDS = ROOT / "loadtest" / "thresholds.toml"
RESULTS = ROOT / "results" / "loadtest"
_PREFIX = "locust"


@dataclass(frozen=True)
class LoadStats:
    """The aggregated numbers of one locust run."""

    requests: int
    failures: int
    wrong_rewards: int
    p99_ms: float
    max_ms: float
    requests_per_s: float


def load_thresholds(path: Path = THRESHOLDS) -> dict[str, Any]:
    """The `[run]` and `[limits]` tables of the thresholds file."""
    with path.open("rb") as handle:
        return tomllib.load(handle)


def run_locust(
    host: str, run: dict[str, Any], results: Path, extra_args: tuple[str, ...] = ()
) -> subprocess.CompletedProcess[str]:
    """Run locust headless against `host`, bounded by `run`; write CSV, HTML and log to `results`.

    `results` has no default, so a test cannot write into the repository by omission;
    locust runs in it, so nothing it leaves behind lands anywhere else.
    """
    results.mkdir(parents=True, exist_ok=True)
    cmd = [
        sys.executable,
        "-m",
        "locust",
        "-f",
        str(LOCUSTFILE),
        "--host",
        host,
        "--headless",
        "--users",
        str(run["users"]),
        "--spawn-rate",
        str(run["spawn_rate"]),
        "--run-time",
        f"{run['run_time_s']}s",
        "--stop-timeout",
        str(run["stop_timeout_s"]),
        "--csv",
        str(results / _PREFIX),
        "--html",
        str(results / f"{_PREFIX}.html"),
        "--only-summary",
        "--exit-code-on-error",
        "0",
        *extra_args,
    ]
    hard_timeout_s = run["run_time_s"] + run["stop_timeout_s"] + 60
    completed = subprocess.run(
        cmd, capture_output=True, text=True, timeout=hard_timeout_s, cwd=results, check=False
    )
    (results / f"{_PREFIX}.log").write_text(completed.stdout + completed.stderr)
    return completed


def read_stats(results: Path) -> LoadStats:
    """The `Aggregated` row of the stats CSV and the wrong rewards of the failures CSV."""
    with (results / f"{_PREFIX}_stats.csv").open(newline="") as handle:
        [total] = [row for row in csv.DictReader(handle) if row["Name"] == "Aggregated"]
    with (results / f"{_PREFIX}_failures.csv").open(newline="") as handle:
        wrong = sum(
            int(row["Occurrences"])
            for row in csv.DictReader(handle)
            if "wrong reward" in row["Error"]
        )
    return LoadStats(
        requests=int(total["Request Count"]),
        failures=int(total["Failure Count"]),
        wrong_rewards=wrong,
        p99_ms=float(total["99%"]) if total["99%"] != "N/A" else 0.0,
        max_ms=float(total["Max Response Time"]),
        requests_per_s=float(total["Requests/s"]),
    )


def violations(stats: LoadStats, limits: dict[str, Any]) -> list[str]:
    """Each threshold the run broke, as a sentence; empty when all hold."""
    checks = [
        (stats.failures <= limits["max_failures"], f"{stats.failures} failed requests"),
        (stats.wrong_rewards <= limits["max_wrong_rewards"], f"{stats.wrong_rewards} wrong"),
        (stats.requests >= limits["min_requests"], f"only {stats.requests} requests"),
        (stats.p99_ms <= limits["p99_ms"], f"p99 {stats.p99_ms:.0f} ms"),
        (stats.max_ms <= limits["max_ms"], f"max {stats.max_ms:.0f} ms"),
    ]
    return [f"threshold broken: {what}" for held, what in checks if not held]


def summary(completed: subprocess.CompletedProcess[str]) -> str:
    """The console summary tables locust printed at the end of the run."""
    lines = completed.stdout.splitlines() + completed.stderr.splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith("Type ")), len(lines))
    return "\n".join(lines[start:])


@contextmanager
def _loopback_service(workers: int) -> Iterator[str]:
    from reward_service.testing import live_server

    with live_server(workers=workers) as server:
        yield server.url


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--host", help="base URL of a running service; default: start one")
    parser.add_argument("--users", type=int)
    parser.add_argument("--run-time-s", type=int)
    parser.add_argument(
        "--results", type=Path, default=RESULTS, help="report directory (results/loadtest/)"
    )
    args = parser.parse_args(argv)
    thresholds = load_thresholds()
    run = dict(thresholds["run"])
    if args.users:
        run["users"] = args.users
    if args.run_time_s:
        run["run_time_s"] = args.run_time_s
    if args.host:
        completed = run_locust(args.host, run, args.results)
    else:
        with _loopback_service(run["workers"]) as url:
            completed = run_locust(url, run, args.results)
    print(summary(completed))
    broken = violations(read_stats(args.results), thresholds["limits"])
    print("\n".join(broken) or "all thresholds hold")
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main())
