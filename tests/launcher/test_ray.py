"""End to end on a real local Ray cluster: submit helper, bash launcher, live service.

The job is what a SLIME recipe submits, with a stand-in `train.py` that
records its argv and posts SLIME-shaped requests to the `--rm-url` it got.
"""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from reward_service.launcher.slime_command import launcher_script
from tests.rayserve.local_cluster import PORT_OPTIONS, port

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]

MODEL_ARGS = [
    *("--num-layers", "36", "--hidden-size", "2560", "--ffn-hidden-size", "9728"),
    *("--swiglu", "--vocab-size", "151936", "--rotary-base", "1000000"),
    *("--run-name", "qwen3 4B run #1", "--note", "it's \"quoted\" & 'single'"),
    *("--template", "$HOME ${MODEL_ARGS[@]} `id` $(id) \\n", "--glob", "*"),
    *("--empty", "", "--semicolon", "a;b | c", "--newline", "line1\nline2"),
]
EXTRA_ARGS = ["--rollout-batch-size", "8", "--tag", "caller's $TAG"]

TRAIN_PY = """\
import json, os, sys, urllib.request

argv = sys.argv[1:]
url = argv[len(argv) - 1 - argv[::-1].index("--rm-url") + 1]
rewards = []
for response in ("so \\\\boxed{2}", "so \\\\boxed{3}"):
    body = json.dumps({"prompt": "1+1?", "response": response, "label": "2"}).encode()
    request = urllib.request.Request(url, body, {"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=60) as answer:
        rewards.append(json.loads(answer.read()))
record = {"argv": argv, "rewards": rewards, "secret_seen": os.environ.get("JOB_SECRET") == "s3"}
with open(os.environ["RECORD_PATH"], "w") as out:
    json.dump(record, out)
"""


@pytest.fixture(scope="module")
def ray_dashboard() -> Iterator[str]:
    """A one-CPU Ray head on 127.0.0.1, started for this module and stopped after."""
    pytest.importorskip("ray", reason="the Ray test needs Ray: pip install 'ray[default]'")
    ray_cli = shutil.which("ray", path=str(Path(sys.executable).parent)) or shutil.which("ray")
    if ray_cli is None:
        pytest.skip("ray is importable but its `ray` command is not on PATH")
    temp_dir = tempfile.mkdtemp(prefix="ray-", dir="/tmp")
    dashboard_port = port()
    command = [ray_cli, "start", "--head", "--block", "--node-ip-address", "127.0.0.1"]
    command += ["--port", str(port()), "--disable-usage-stats", "--num-cpus", "1"]
    command += ["--include-dashboard", "true", "--dashboard-host", "127.0.0.1"]
    command += ["--dashboard-port", str(dashboard_port), "--temp-dir", temp_dir]
    for option in ("--ray-client-server-port", *PORT_OPTIONS):
        command += [option, str(port())]
    log_path = Path(temp_dir) / "ray-start.log"
    log = open(log_path, "wb")  # noqa: SIM115 - closed in the finally below
    # --block keeps `ray start` in the foreground, so the cluster is stopped by
    # signalling the process (and session) we started, not `ray stop` by name.
    head = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    address = f"http://127.0.0.1:{dashboard_port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(f"{address}/api/version", timeout=2).status_code == 200:
                    break
            if head.poll() is not None or time.monotonic() > deadline:
                log.flush()
                pytest.fail(f"Ray head did not start:\n{log_path.read_text()}")
            time.sleep(0.5)
        yield address
    finally:
        head.send_signal(signal.SIGTERM)
        try:
            head.wait(60)
        except subprocess.TimeoutExpired:
            head.kill()
            head.wait()
        with contextlib.suppress(ProcessLookupError):
            os.killpg(head.pid, signal.SIGKILL)
        log.close()
        shutil.rmtree(temp_dir, ignore_errors=True)


def _working_dir(tmp_path: Path) -> Path:
    work = tmp_path / "recipe"
    (work / "scripts").mkdir(parents=True)
    (work / "scripts" / "slime_launcher.sh").write_text(launcher_script())
    (work / "train.py").write_text(TRAIN_PY)
    (work / "model.sh").write_text(f"MODEL_ARGS=({shlex.join(MODEL_ARGS)})\n")
    return work


def test_job_gets_argv_intact_and_rewards_right(
    ray_dashboard: str, reward_url: str, tmp_path: Path
) -> None:
    """A job submitted through the helper and launcher gets every argument and the rm URL once."""
    record = tmp_path / "record.json"
    rm_url = f"{reward_url}/score/math_verify"
    command = [sys.executable, "-m", "reward_service", "slime", "submit", "--wait"]
    command += ["--address", ray_dashboard, "--working-dir", str(_working_dir(tmp_path))]
    for name, value in {
        "MODEL_SCRIPT": "model.sh",
        "PYTHON": sys.executable,
        "PYTHONPATH": str(REPO),
        "RECORD_PATH": str(record),
        "SLIME_REWARD_URL": rm_url,
        "SLIME_REWARD_WAIT_S": "30",
    }.items():
        command += ["--env", f"{name}={value}"]
    command += ["--secret-env", "JOB_SECRET", "--"]
    command += ["bash", "scripts/slime_launcher.sh", *EXTRA_ARGS]
    env = {**os.environ, "JOB_SECRET": "s3"}
    result = subprocess.run(command, env=env, capture_output=True, text=True, timeout=240)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "<secret from $JOB_SECRET>" in result.stdout
    assert '"s3"' not in result.stdout + result.stderr

    job = json.loads(record.read_text())
    assert len(MODEL_ARGS) >= 20
    assert job["argv"] == [*MODEL_ARGS, *EXTRA_ARGS, "--rm-type", "remote_rm", "--rm-url", rm_url]
    assert job["argv"].count("--rm-type") == 1
    assert job["argv"].count("--rm-url") == 1
    assert job["rewards"] == [1.0, 0.0]
    assert job["secret_seen"] is True
