"""Submit: the entrypoint survives Ray's shell, and secrets stay out of sight."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from reward_service.launcher.submit import JobSpec

ARGS = ["a b", "it's", '"dq"', "$HOME", "${MODEL_ARGS[@]}", "`id`", "x;y", "", "*", "--k=v w"]


def test_entrypoint_survives_sh_c() -> None:
    """Through `/bin/sh -c`, as Ray runs it, the entrypoint yields the same argv."""
    line = JobSpec(entrypoint=[sys.executable, "-c", "import sys; print(sys.argv[1:])", *ARGS])
    shown = subprocess.run(
        ["/bin/sh", "-c", line.entrypoint_line()], capture_output=True, text=True, check=True
    )
    assert shown.stdout.strip() == repr(ARGS)


def test_runtime_env_is_data() -> None:
    """Working dir, plain variables and secret values land in Ray's runtime_env dict."""
    spec = JobSpec(working_dir="/w", env={"A": "1 2"}, secret_names=["TOKEN"])
    assert spec.runtime_env({"TOKEN": "s3cret"}) == {
        "working_dir": "/w",
        "env_vars": {"A": "1 2", "TOKEN": "s3cret"},
    }


def test_describe_names_secrets_without_values() -> None:
    """The printable description shows where a secret comes from, never its value."""
    spec = JobSpec(entrypoint=["bash", "l.sh", "$X"], secret_names=["TOKEN"])
    shown = json.loads(spec.describe())
    assert shown == {
        "entrypoint": "bash l.sh '$X'",
        "runtime_env": {"env_vars": {"TOKEN": "<secret from $TOKEN>"}},
    }


def test_dry_run_prints_the_job_without_secret_values() -> None:
    """`slime submit --dry-run` prints the job; a secret's value appears nowhere."""
    command = [sys.executable, "-m", "reward_service.launcher", "submit", "--dry-run"]
    command += ["--secret-env", "WANDB_API_KEY", "--env", "SLIME_REWARD_SCORER=math_verify"]
    command += ["--", "bash", "reward_service/launcher/slime_launcher.sh", "--lr", "1e-6"]
    env = {**os.environ, "WANDB_API_KEY": "value-that-must-not-leak"}
    result = subprocess.run(command, env=env, capture_output=True, text=True, check=True)
    assert "value-that-must-not-leak" not in result.stdout + result.stderr
    shown = json.loads(result.stdout)
    assert shown["entrypoint"] == "bash reward_service/launcher/slime_launcher.sh --lr 1e-6"
    assert shown["runtime_env"]["env_vars"]["WANDB_API_KEY"] == "<secret from $WANDB_API_KEY>"


def test_missing_secret_fails_before_submitting() -> None:
    """A secret named but unset in this shell stops the submit with its name."""
    command = [sys.executable, "-m", "reward_service.launcher", "submit", "--secret-env", "NOPE_X"]
    env = {k: v for k, v in os.environ.items() if k != "NOPE_X"}
    result = subprocess.run(command, env=env, capture_output=True, text=True)
    assert result.returncode == 1
    assert "NOPE_X" in result.stderr
