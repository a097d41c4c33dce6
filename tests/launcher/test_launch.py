"""Launch: the train command's argv untouched, plus SLIME's reward flags once."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from reward_service.launcher.launch import bypassed, flag_value, slime_argv
from reward_service.testing import free_port

URL = "http://rm.ns.svc.cluster.local:8000/score"

TRICKY = ["--name", "a b", "--q", 'it\'s "quoted"', "--cost", "$HOME ${X[@]} `id`", "", "-"]


TRAIN = ["python3", "train.py"]
ADDED = ["--rm-type", "remote_rm", "--rm-url", URL]


@pytest.mark.parametrize(
    ("command", "reward_key", "expected"),
    [
        ([], None, [*TRAIN, *ADDED]),
        ([*TRAIN, *TRICKY], None, [*TRAIN, *TRICKY, *ADDED]),
        ([*TRAIN, "--rm-type", "remote_rm"], "reward", [*TRAIN, *ADDED, "--reward-key", "reward"]),
        (
            [*TRAIN, "--rm-url=http://other/score", "--reward-key", "r"],
            "reward",
            [*TRAIN, "--rm-url=http://other/score", "--reward-key", "r", "--rm-type", "remote_rm"],
        ),
        (
            [*TRAIN, "--custom-rm-path", "m.f"],
            "reward",
            [*TRAIN, "--custom-rm-path", "m.f", *ADDED],
        ),
    ],
)
def test_slime_argv(command: list[str], reward_key: str | None, expected: list[str]) -> None:
    """The caller's argv is kept as is; only the missing reward flags are appended."""
    assert slime_argv(command, URL, reward_key) == expected


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["--rm-url", "a"], "a"),
        (["--rm-url=a", "--rm-url", "b"], "b"),
        (["--rm-urls", "a"], None),
        (["--rm-url"], None),
    ],
)
def test_flag_value(argv: list[str], expected: str | None) -> None:
    """A flag's value is found in both spellings, the last one winning."""
    assert flag_value(argv, "--rm-url") == expected


def _launch(tmp_path: Path, env: dict[str, str], *options: str) -> subprocess.CompletedProcess[str]:
    record = tmp_path / "argv.json"
    recorder = tmp_path / "train.py"
    recorder.write_text(
        f"import json, sys\nopen({str(record)!r}, 'w').write(json.dumps(sys.argv[1:]))\n"
    )
    command = [sys.executable, "-m", "reward_service.launcher", "launch", *options]
    command += ["--", sys.executable, str(recorder), *TRICKY]
    return subprocess.run(
        command, env={**os.environ, **env}, capture_output=True, text=True, timeout=60
    )


def _recorded(tmp_path: Path) -> list[str]:
    argv: list[str] = json.loads((tmp_path / "argv.json").read_text())
    return argv


def test_launch_execs_the_command_with_argv_intact(tmp_path: Path) -> None:
    """`slime launch -- cmd args` runs cmd with args byte for byte, then the reward flags."""
    env = {"SLIME_REWARD_NAMESPACE": "grading"}
    result = _launch(tmp_path, env, "--skip-preflight", "--detail")
    assert result.returncode == 0, result.stderr
    url = "http://slime-reward.grading.svc.cluster.local:8000/score?detail=1"
    assert _recorded(tmp_path) == [
        *TRICKY,
        *["--rm-type", "remote_rm", "--rm-url", url, "--reward-key", "reward"],
    ]


def test_launch_passes_the_token_in_the_url_and_never_prints_it(tmp_path: Path) -> None:
    """With SLIME_REWARD_TOKEN, SLIME gets the /t/<token>/ URL; the launcher's own line masks it."""
    result = _launch(tmp_path, {"SLIME_REWARD_TOKEN": "c0ffee"}, "--skip-preflight")
    assert result.returncode == 0, result.stderr
    url = "http://slime-reward.reward-service.svc.cluster.local:8000/t/c0ffee/score"
    assert _recorded(tmp_path)[-2:] == ["--rm-url", url]
    assert "c0ffee" not in result.stderr and "/t/***/score" in result.stderr


@pytest.mark.parametrize(
    ("argv", "warned"),
    [
        (["--rm-type", "math"], True),
        (["--rm-type=dapo"], True),
        (["--rm-type", "remote_rm"], False),
        (["--rm-type", "math", "--custom-rm-path", "m.f"], False),
        ([], False),
    ],
)
def test_an_rm_type_that_bypasses_the_service_is_named(argv: list[str], warned: bool) -> None:
    """A kept `--rm-type` other than remote_rm (no custom reward) is reported, naming it."""
    reason = bypassed(argv)
    assert (reason is not None) == warned
    if reason:
        assert flag_value(argv, "--rm-type") in reason and "never calls the service" in reason


def test_launch_warns_when_the_command_keeps_its_own_rm_type(tmp_path: Path) -> None:
    """`slime launch -- ... --rm-type math` runs the command as given and says it bypasses us."""
    record = tmp_path / "argv.json"
    recorder = tmp_path / "train.py"
    recorder.write_text(f"import json, sys\nopen({str(record)!r}, 'w').write('[]')\n")
    command = [sys.executable, "-m", "reward_service.launcher", "launch", "--skip-preflight"]
    command += ["--", sys.executable, str(recorder), "--rm-type", "math"]
    result = subprocess.run(command, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert "warning: the train command sets --rm-type math" in result.stderr


def test_launch_runs_the_preflight_first(tmp_path: Path, reward_url: str) -> None:
    """Against a working service the preflight passes and the command gets its URL."""
    result = _launch(tmp_path, {"SLIME_REWARD_URL": f"{reward_url}/score/math_verify"})
    assert result.returncode == 0, result.stderr
    assert "known-correct sample graded 1" in result.stderr
    assert _recorded(tmp_path)[-2:] == ["--rm-url", f"{reward_url}/score/math_verify"]


def test_launch_refuses_when_the_service_is_down(tmp_path: Path) -> None:
    """With no service the command never starts, and the exit code says so."""
    url = f"http://127.0.0.1:{free_port()}/score"
    env = {"SLIME_REWARD_URL": url, "SLIME_REWARD_WAIT_S": "0.5"}
    result = _launch(tmp_path, env)
    assert result.returncode == 1
    assert "reward-service slime: error: reward service not ready" in result.stderr
    assert not (tmp_path / "argv.json").exists()


def test_ray_serve_without_a_cluster_is_refused() -> None:
    """`launch --ray-serve check` with no Ray address exits 1 naming the missing option."""
    command = [sys.executable, "-m", "reward_service", "slime", "launch", "--ray-serve", "check"]
    result = subprocess.run(
        [*command, "--", "true"],
        env={k: v for k, v in os.environ.items() if not k.startswith("SLIME_REWARD_")},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 1
    assert "--ray-serve/--ray-direct need the cluster: --ray-address" in result.stderr
