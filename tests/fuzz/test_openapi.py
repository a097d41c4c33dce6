"""Schemathesis against the live OpenAPI schema: no operation answers a 5xx."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from reward_service.testing import LiveServer

RESULTS = Path(__file__).resolve().parents[2] / "results" / "fuzz"


@pytest.mark.slow
@pytest.mark.timeout(400)
def test_no_operation_in_the_schema_answers_a_server_error(fuzz_server: LiveServer) -> None:
    """Every phase, 30 examples per operation, seeded: `not_a_server_error` holds throughout."""
    RESULTS.mkdir(parents=True, exist_ok=True)
    cmd = [
        *(sys.executable, "-m", "schemathesis.cli", "run", f"{fuzz_server.url}/openapi.json"),
        *("--checks", "not_a_server_error", "--max-examples", "30", "--seed", "1"),
        *("--workers", "2", "--request-timeout", "20", "--report", "junit"),
        *("--report-dir", str(RESULTS), "--no-color"),
    ]
    completed = subprocess.run(cmd, capture_output=True, text=True, timeout=360, check=False)
    (RESULTS / "schemathesis.log").write_text(completed.stdout + completed.stderr)
    assert completed.returncode == 0, completed.stdout[-4000:] + completed.stderr[-2000:]
    assert fuzz_server.process.poll() is None
