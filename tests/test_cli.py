"""The `reward-service` command line."""

from __future__ import annotations

import json
import subprocess
import sys

from reward_service.settings import Settings


def _run(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "reward_service", *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_score_prints_reward_and_details() -> None:
    """`score` grades one answer in a local worker and prints the detail object."""
    result = _run("score", "--label", "\\frac{1}{2}", "--response", "so \\boxed{0.5}")
    assert result.returncode == 0, result.stderr
    detail = json.loads(result.stdout)
    assert (detail["reward"], detail["status"], detail["scorer"]) == (1.0, "ok", "math_verify")


def test_score_reads_response_from_stdin() -> None:
    """Without `--response` the answer is read from stdin."""
    result = _run("score", "--label", "7", "--scorer", "exact", stdin="8\n")
    assert json.loads(result.stdout)["status"] == "wrong"


def test_score_unknown_scorer_fails_with_known_names() -> None:
    """An unknown scorer exits non-zero and lists the known ones."""
    result = _run("score", "--label", "1", "--response", "1", "--scorer", "nope")
    assert result.returncode != 0
    assert "math_verify" in result.stderr


def test_serve_help_documents_every_setting() -> None:
    """`serve --help` names each REWARD_* variable."""
    result = _run("serve", "--help")
    for name, field in Settings.model_fields.items():
        assert f"REWARD_{name.upper()}" in result.stdout
        assert field.description, f"setting {name} has no description"
    assert "Undefined" not in result.stdout


def test_bad_setting_stops_serve_with_message() -> None:
    """An invalid setting stops `serve` before it listens, saying which."""
    result = _run("serve", "--port", "0")
    assert result.returncode != 0
    assert "port" in result.stderr
