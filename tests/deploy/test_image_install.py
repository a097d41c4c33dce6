"""The image's install steps, performed outside Docker so the recipe cannot rot.

Mirrors reward_service.Dockerfile: copy the build context, build the wheel with
no dependencies, install requirements.lock (hash-checked) and then the wheel
without dependencies into a fresh pip-less virtual environment with the outer
pip, start `reward-service serve`, wait for /readyz, grade one sample, stop it
with SIGTERM and insist on exit status 0. Change both together.

Marked `image`, outside the default run: CI's step 3 (`scripts/image-check`)
builds the Dockerfile itself and checks all of this on the image, so here it
is the check for a machine without buildah (`python -m pytest -m image`).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from .rendering import ROOT

CONTEXT = ("pyproject.toml", "README.md", "requirements.lock", "reward_service")
READY_TIMEOUT_S = 90.0
EXIT_TIMEOUT_S = 60.0
SAMPLE = {"prompt": "q", "response": "so \\boxed{2}", "label": "2"}


def _run(*command: str | Path, timeout_s: float = 600) -> None:
    proc = subprocess.run(
        [str(c) for c in command], capture_output=True, text=True, timeout=timeout_s, check=False
    )
    assert proc.returncode == 0, f"{command} failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _installed_venv(tmp_path: Path) -> Path:
    context = tmp_path / "context"
    context.mkdir()
    for name in CONTEXT:
        source = ROOT / name
        if source.is_dir():
            shutil.copytree(source, context / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(source, context / name)
    dist = tmp_path / "dist"
    _run(sys.executable, "-m", "pip", "wheel", "--no-deps", "--wheel-dir", dist, context)
    [wheel] = dist.glob("reward_service-*.whl")
    venv = tmp_path / "venv"
    _run(sys.executable, "-m", "venv", "--without-pip", venv)
    pip = (sys.executable, "-m", "pip", "--python", venv / "bin" / "python", "install")
    _run(*pip, "--require-hashes", "--no-deps", "-r", context / "requirements.lock")
    _run(*pip, "--no-deps", wheel)
    return venv


def _status(url: str) -> int:
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            status: int = response.status
            return status
    except urllib.error.HTTPError as error:
        return error.code
    except OSError:
        return 0


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The base URL of `reward-service serve` run from a fresh install of the wheel, one
    install for the module's bodies (each install takes about a minute)."""
    tmp_path = tmp_path_factory.mktemp("image-install")
    venv = _installed_venv(tmp_path)
    port = _free_port()
    command = [str(venv / "bin" / "reward-service"), "serve", "--host", "127.0.0.1"]
    command += ["--port", str(port), "--workers", "1"]
    env = {k: v for k, v in os.environ.items() if not k.startswith("REWARD_")}
    log_path = tmp_path / "serve.log"
    base = f"http://127.0.0.1:{port}"
    with log_path.open("w") as log:
        server = subprocess.Popen(command, env=env, cwd=tmp_path, stdout=log, stderr=log)
        try:
            deadline = time.monotonic() + READY_TIMEOUT_S
            while _status(f"{base}/readyz") != 200:
                assert server.poll() is None, log_path.read_text()[-3000:]
                assert time.monotonic() < deadline, f"not ready within {READY_TIMEOUT_S} s"
                time.sleep(0.5)
            yield base
            server.send_signal(signal.SIGTERM)
            # A completed drain is a clean exit: Kubernetes and systemd read a
            # death by signal as a failed shutdown.
            returncode = server.wait(timeout=EXIT_TIMEOUT_S)
            assert returncode == 0, log_path.read_text()[-3000:]
        finally:
            if server.poll() is None:
                server.kill()
                server.wait()


INSTRUCTIONS = {
    "prompt": "p",
    "response": "<think>Plan: No, Caps.</think>all lowercase here",
    "label": {
        "scorer": "ifeval",
        "instruction_id_list": ["change_case:english_lowercase", "punctuation:no_comma"],
    },
}
"""Graded by if-verifiable's checkers, which the lock installs without `datasets`
(scripts/lock-overrides.txt)."""


@pytest.mark.image
@pytest.mark.slow
@pytest.mark.timeout(600)
@pytest.mark.parametrize("body", [SAMPLE, INSTRUCTIONS], ids=["math", "ifeval"])
def test_installed_wheel_serves_and_grades(served: str, body: dict[str, object]) -> None:
    """Installed as the image installs it, the service grades a right answer 1.0."""
    request = urllib.request.Request(
        f"{served}/score",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        assert response.status == 200
        assert json.loads(response.read()) == 1.0
