"""The `reward-service` command line."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
from typing import Literal, get_args, get_origin

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


def test_score_starts_only_the_scorer_it_grades_with() -> None:
    """`score` checks and opens only its scorer (and the default one): no other scorer's
    start-up check is run or printed; a label object's scorer is the one started."""
    result = _run("score", "--label", "7", "--scorer", "exact", "--response", "7")
    assert result.returncode == 0, result.stderr
    assert "start-up check" not in result.stderr
    assert "for exact" in result.stderr
    routed = _run("score", "--label", '{"scorer": "choice", "answer": "B"}', "--response", "B")
    assert json.loads(routed.stdout)["scorer"] == "choice"


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


def test_serve_help_lists_the_values_each_choice_setting_takes() -> None:
    """Each setting with a fixed set of values has them in `serve --help`, and each is accepted:
    the help and the settings cannot disagree."""
    help_lines = {
        line.split()[0]: line for line in _run("serve", "--help").stdout.splitlines() if line
    }
    choices = {
        name: get_args(field.annotation)
        for name, field in Settings.model_fields.items()
        if get_origin(field.annotation) is Literal
    }
    assert choices, "no choice setting found"
    for name, values in choices.items():
        line = help_lines[f"REWARD_{name.upper()}"]
        assert f"One of: {', '.join(values)}." in line
        for value in values:
            assert getattr(Settings.read(**{name: value}), name) == value


def test_bad_setting_stops_serve_with_message() -> None:
    """An invalid setting stops `serve` before it listens, naming its variable, not a field."""
    result = _run("serve", "--port", "0")
    assert result.returncode != 0
    assert "REWARD_PORT: Input should be greater than or equal to 1" in result.stderr
    assert "pydantic" not in result.stderr


def test_a_refused_choice_names_the_variable_and_the_values_it_takes() -> None:
    """`REWARD_ACCESS_LOG=none` is refused with the variable and its accepted values."""
    env = {**os.environ, "REWARD_ACCESS_LOG": "none"}
    result = subprocess.run(
        [sys.executable, "-m", "reward_service", "serve"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode != 0
    assert "REWARD_ACCESS_LOG: Input should be 'off', 'sampled' or 'all'" in result.stderr


def test_serve_on_a_taken_port_fails_with_message() -> None:
    """`serve` on a port already listened on exits non-zero, naming the address."""
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = str(taken.getsockname()[1])
        result = _run("serve", "--host", "127.0.0.1", "--port", port, "--workers", "1")
    assert result.returncode != 0
    assert f"cannot listen on 127.0.0.1:{port}" in result.stderr


def test_score_with_its_output_closed_ends_quietly() -> None:
    """`score` whose stdout reader went away exits 1 without a traceback (no SIGPIPE death)."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    with os.fdopen(write_end, "wb") as stdout:
        process = subprocess.run(
            [sys.executable, "-m", "reward_service", "score", "--label", "1", "--response", "1"],
            stdout=stdout,
            stderr=subprocess.PIPE,
            text=True,
            timeout=120,
        )
    assert process.returncode == 1, process.stderr
    assert "Traceback" not in process.stderr


def test_slime_launch_execs_the_trainer_with_default_sigpipe() -> None:
    """`slime launch` hands the train command SIGPIPE's default action, not Python's ignore."""
    script = "grep SigIgn /proc/$$/status"
    result = _run(
        *("slime", "launch", "--skip-preflight", "--url", "http://127.0.0.1:9/score"),
        *("--", "sh", "-c", script),
    )
    assert result.returncode == 0, result.stderr
    ignored = int(result.stdout.split()[1], 16)
    assert not ignored & (1 << (signal.SIGPIPE - 1))


def test_slime_script_prints_the_packaged_launcher() -> None:
    """`reward-service slime script` prints the bash launcher that execs `slime launch`."""
    result = subprocess.run(
        [sys.executable, "-m", "reward_service", "slime", "script"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("#!/usr/bin/env bash\n")
    assert "-m reward_service slime launch -- \\\n" in result.stdout
    syntax = subprocess.run(["bash", "-n"], input=result.stdout, text=True, capture_output=True)
    assert syntax.returncode == 0, syntax.stderr
