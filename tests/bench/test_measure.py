"""The bench's shared measuring pieces: a side's measurement, the service's hit rates, the
package's map of its modules."""

from __future__ import annotations

import ast
from pathlib import Path

import reward_service.bench
from reward_service.bench.measure import Run, _spent, hit_rates, report_line


def test_a_side_s_rounds_add_up_to_one_measurement() -> None:
    """Answers, seconds, wrong verdicts and latencies of the rounds are summed."""
    total = Run(0, 0.0, 0) + Run(3, 1.5, 1, (0.1, 0.2, 0.3)) + Run(2, 0.5, 0, (0.4, 0.5))
    assert total == Run(5, 2.0, 1, (0.1, 0.2, 0.3, 0.4, 0.5))
    assert total.rate == 2.5


def test_a_side_s_line_gives_its_ratio_to_plain_and_its_latencies() -> None:
    """A line names the side, its rate, its ratio to the plain side, p50/p99 and wrong verdicts."""
    plain = Run(100, 2.0, 0)
    line = report_line("/score", Run(100, 1.0, 2, (0.01,) * 50 + (0.03,) * 50), plain)
    assert line == (
        "  /score        100 answers in   1.00 s =   100.0/s  x2.00 vs plain"
        "  p50 30 ms  p99 30 ms  wrong: 2"
    )
    assert "vs plain" not in report_line("plain", plain, None)


def test_hit_rates_are_shares_of_what_happened_between_two_readings() -> None:
    """Only the counts added between the readings count: cache hits of lookups, each path of
    all gradings."""
    before = {"cache_hit": 10.0, "cache_miss": 10.0, "path_inline": 5.0, "path_worker": 5.0}
    after = {"cache_hit": 13.0, "cache_miss": 11.0, "path_inline": 6.0, "path_worker": 8.0}
    assert hit_rates(before, after) == "verdict cache hits 75%, inline 25%, worker 75%"


def test_cpu_spent_counts_a_process_started_in_between_from_zero() -> None:
    """A worker present at both readings counts its growth; one started in between (a spare)
    all of its time; one ended in between nothing."""
    assert _spent({1: 2.0, 2: 5.0}, {1: 3.5, 3: 0.25}) == 1.75


def test_the_package_docstring_lists_each_bench_module_once() -> None:
    """`bench/__init__.py` maps exactly the modules that exist, so it cannot name a lost one."""
    package = Path(reward_service.bench.__file__).parent
    listed = [
        line.split()[0]
        for line in (
            ast.get_docstring(ast.parse((package / "__init__.py").read_text())) or ""
        ).splitlines()[2:]
        if line.strip()
    ]
    assert sorted(listed) == sorted(p.stem for p in package.glob("*.py") if p.stem != "__init__")
