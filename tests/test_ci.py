"""CI (`.ci/run`) fails on a lint, format or type error, not only on a failing test."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests import conftest

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


def test_ci_fails_where_a_tool_it_promises_is_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    """`.ci/run` exports REWARD_CI=1, under which a test lacking a tool CI installs fails
    (elsewhere it skips, saying why)."""
    assert "export REWARD_CI=1" in CI.read_text().splitlines()
    monkeypatch.setattr(conftest, "IN_CI", True)
    with pytest.raises(pytest.fail.Exception, match="CI promises this tool: go: not found"):
        conftest.tool_missing("go: not found")
    monkeypatch.setattr(conftest, "IN_CI", False)
    with pytest.raises(pytest.skip.Exception, match="go: not found"):
        conftest.tool_missing("go: not found")
