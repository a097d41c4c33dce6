"""CI (`.ci/run`) fails on a lint, format or type error, not only on a failing test."""

from __future__ import annotations

from pathlib import Path

CI = Path(__file__).resolve().parents[1] / ".ci" / "run"
CHECKS = ["ruff check .", "ruff format --check .", "mypy"]


def test_ci_runs_ruff_and_mypy_after_the_tests_in_the_venv() -> None:
    """Right after step 1's pytest (whose venv stays active), each check is a line of its own,
    under `set -e`, so any finding fails the run."""
    lines = [line.strip() for line in CI.read_text().splitlines()]
    assert "set -euo pipefail" in lines
    tests = next(i for i, line in enumerate(lines) if line.endswith("&& python -m pytest"))
    assert ". .venv/bin/activate" in lines[tests]
    commands = [line for line in lines[tests + 1 :] if line and not line.startswith("#")]
    assert commands[: len(CHECKS)] == CHECKS
