"""The service on a real local Ray cluster: a head that declares a GPU, and a CPU-only node.

One cluster for the module (started and stopped here, nothing left running), since a
cluster's start costs more than most tests on it: the application is deployed through the
CLI as the README says, then scaled, killed and redeployed by the tests in order; then the
direct path the same way; then a SLIME job submitted with the bash launcher.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shlex
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from reward_service.bench.workload import grpo_workload, request_body
from reward_service.launcher.slime_command import launcher_script
from reward_service.local_server import _children
from reward_service.rayserve.cluster import AppStatus, Dashboard
from reward_service.rayserve.direct_cluster import DirectStatus, direct_status
from reward_service.rayserve.placement import PlacementError
from reward_service.rayserve.spec import ServeSpec
from reward_service.rayserve.throughput import slime_rewards
from tests.conftest import FAKE_SCORER

from .local_cluster import RAY_WORKER_PORTS, LocalCluster, local_cluster, port, ray_cli

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]

BACKOFF_SCALE = 0.05
"""SLIME's backoff (1, 2, 4 ... 30 s) at 1/20: the same ten attempts, in seconds."""


def _cli(*args: str, timeout_s: float = 300) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "reward_service", *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=timeout_s)


@pytest.fixture(scope="module")
def cluster() -> Iterator[LocalCluster]:
    pytest.importorskip("ray.serve", reason="needs Ray Serve: pip install 'ray[serve]'")
    with local_cluster() as running:
        yield running


def _port_pair() -> int:
    """A free port whose successor is free too, both outside Ray's worker range."""
    while True:
        first = port()
        with contextlib.suppress(OSError), socket.socket() as probe:
            probe.bind(("127.0.0.1", first + 1))
            if first + 1 not in RAY_WORKER_PORTS:
                return first


@pytest.fixture(scope="module")
def metrics_port() -> int:
    return _port_pair()


@pytest.fixture(scope="module")
def deployed(cluster: LocalCluster, metrics_port: int) -> str:
    """`reward-service ray deploy`: two replicas of one CPU; the Serve endpoint's /score URL."""
    result = _cli(
        *("ray", "deploy", "--address", cluster.dashboard, "--replicas", "2"),
        *("--cpus-per-replica", "1", "--http-host", "127.0.0.1"),
        *("--http-port", str(cluster.serve_port), "--wait-s", "240"),
        *("--metrics-port", str(metrics_port)),
        *("--replica-env", f"REWARD_EXTRA_SCORERS={FAKE_SCORER}"),
    )
    assert result.returncode == 0, result.stdout + result.stderr + cluster.log()
    return f"http://127.0.0.1:{cluster.serve_port}/score"


def _status(cluster: LocalCluster) -> AppStatus:
    with Dashboard(cluster.dashboard) as dashboard:
        status = dashboard.status()
    assert status is not None
    return status


def _running(cluster: LocalCluster) -> list[str]:
    return sorted(r.replica_id for r in _status(cluster).replicas if r.state == "RUNNING")


def _wait_for(
    cluster: LocalCluster, replicas: int, timeout_s: float = 120, gone: str = ""
) -> list[str]:
    """Running replica ids, once `replicas` of them run healthy and `gone` is not one."""
    deadline = time.monotonic() + timeout_s
    while (
        len(running := _running(cluster)) != replicas
        or gone in running
        or not _status(cluster).settled
    ):
        assert time.monotonic() < deadline, _status(cluster).describe()
        time.sleep(0.5)
    return running


def _cpu_node(cluster: LocalCluster) -> str:
    with Dashboard(cluster.dashboard) as dashboard:
        nodes = dashboard.nodes()
    (cpu_node,) = [node.node_id for node in nodes if not node.gpus]
    return cpu_node


def _rewards(url: str, items: list[dict[str, Any]]) -> tuple[list[float], int]:
    result = asyncio.run(
        slime_rewards(url, [request_body(i) for i in items], backoff_scale=BACKOFF_SCALE)
    )
    return result.rewards, result.retries


async def _answering(load: asyncio.Task[Any], ports: list[int]) -> None:
    """Until the replicas' /metrics on `ports` count answers to `load`, which must still run."""
    before = sum(await asyncio.gather(*(asyncio.to_thread(_scored, p) for p in ports)))
    deadline = time.monotonic() + 60
    while sum(await asyncio.gather(*(asyncio.to_thread(_scored, p) for p in ports))) <= before:
        assert not load.done(), "the load ended before either replica counted an answer"
        assert time.monotonic() < deadline, "no answer counted within 60 s"
        await asyncio.sleep(0.05)
    assert not load.done(), "the load ended before it could be disturbed"


def _metrics_ports(cluster: LocalCluster, metrics_port: int, timeout_s: float = 60) -> list[int]:
    """The /metrics port each running replica listens on, read from its process: a replica takes
    the first free port from `metrics_port`, which is not `metrics_port + i` while a stopping
    replica or another process holds one (seen once in CI), and a new replica can be RUNNING a
    moment before its `reconfigure` has started the server (seen once in a full run)."""
    from reward_service.rayserve.deployment import METRICS_PORTS  # imports Ray

    deadline = time.monotonic() + timeout_s
    while True:
        with Dashboard(cluster.dashboard) as dashboard:
            app = dashboard.details()["applications"]["reward-service"]
        replicas = app["deployments"]["RewardService"]["replicas"]
        pids = [int(r["pid"]) for r in replicas if r["state"] == "RUNNING"]
        ports = sorted(
            c.laddr.port
            for pid in pids
            for c in _listening(pid)
            if metrics_port <= c.laddr.port < metrics_port + METRICS_PORTS
        )
        if len(ports) == len(pids):
            return ports
        assert time.monotonic() < deadline, f"replicas {pids} listen on {ports}"
        time.sleep(0.2)


def _listening(pid: int) -> list[Any]:
    import psutil  # Ray's

    with contextlib.suppress(psutil.NoSuchProcess):
        return [c for c in psutil.Process(pid).net_connections("tcp") if c.status == "LISTEN"]
    return []


REPLICA_ENV = {"REWARD_EXTRA_SCORERS": FAKE_SCORER}
"""What `deployed` gives its replicas: a redeploy that keeps it changes them in place."""


def _slow(answers: int, seconds: float = 0.25) -> list[dict[str, Any]]:
    """Answers the fake scorer grades 1.0 after sleeping: load that keeps requests in flight at
    a few a second, where math answers would cost Serve ~10 ms of CPU each at hundreds a
    second (its proxy and replica; the grading is the least of it)."""
    return [{"prompt": "", "response": f"sleep:{seconds}", "label": ""}] * answers


def test_replicas_land_on_the_cpu_node_and_slime_gets_every_reward(
    cluster: LocalCluster, deployed: str
) -> None:
    """Both replicas run on the CPU-only node; a SLIME client through Serve gets right rewards."""
    status = _status(cluster)
    assert status.settled and len(status.replicas) == 2
    assert {r.node_id for r in status.replicas} == {_cpu_node(cluster)}
    items = grpo_workload(seed=16, answers=512)
    rewards, retries = _rewards(deployed, items)
    assert rewards == [item["expected"] for item in items]
    assert retries == 0  # deploy returned once every replica was warm: nothing to retry
    assert 0 < sum(rewards) < len(rewards)
    ready = httpx.get(deployed.replace("/score", "/readyz"), timeout=10)
    assert ready.status_code == 200 and ready.json()["workers"] == 1


def test_status_and_slime_url_resolve_the_serve_endpoint(
    cluster: LocalCluster, deployed: str
) -> None:
    """`ray status` shows the app running and `slime url`/`preflight` find its endpoint."""
    status = _cli("ray", "status", "--address", cluster.dashboard)
    assert status.returncode == 0, status.stderr
    assert "RUNNING" in status.stdout and deployed in status.stdout
    url = _cli("slime", "url", "--ray-address", cluster.dashboard, "--scorer", "math_verify")
    assert url.returncode == 0, url.stderr
    assert url.stdout.strip() == f"{deployed}/math_verify"
    check = _cli("slime", "preflight", "--ray-address", cluster.dashboard, "--wait-s", "30")
    assert check.returncode == 0, check.stderr
    assert "known-correct sample graded 1" in check.stderr


def test_each_replica_serves_its_own_metrics(
    cluster: LocalCluster, deployed: str, metrics_port: int
) -> None:
    """`ray status` lists one /metrics per replica; each answers with that replica's own pool."""
    status = _cli("ray", "status", "--address", cluster.dashboard)
    listed = [line for line in status.stdout.splitlines() if "replica metrics:" in line]
    assert [line.rsplit(":", 1)[1] for line in listed] == [
        f"{metrics_port}/metrics",
        f"{metrics_port + 1}/metrics",
    ]
    for replica_port in (metrics_port, metrics_port + 1):
        text = httpx.get(f"http://127.0.0.1:{replica_port}/metrics", timeout=10).text
        assert "reward_workers_alive 1.0" in text and "reward_ready 1.0" in text


def test_slime_submit_and_launch_check_the_service_on_ray(
    cluster: LocalCluster, deployed: str, tmp_path: Any
) -> None:
    """`--ray-serve check`: submit gives the job the Serve URL; launch execs train with it."""
    job = _cli(
        *("slime", "submit", "--address", cluster.dashboard, "--ray-serve", "check"),
        *("--env", "SLIME_REWARD_SCORER=math_verify", "--dry-run", "--", "bash", "run.sh"),
    )
    assert job.returncode == 0, job.stderr
    env = json.loads(job.stdout)["runtime_env"]["env_vars"]
    assert env["SLIME_REWARD_URL"] == f"{deployed}/math_verify"
    record = tmp_path / "argv.json"
    train = f"import json, sys; json.dump(sys.argv[1:], open({str(record)!r}, 'w'))"
    launch = _cli(
        *("slime", "launch", "--ray-address", cluster.dashboard, "--ray-serve", "check"),
        *("--wait-s", "30", "--", sys.executable, "-c", train, "--lr", "1e-6"),
    )
    assert launch.returncode == 0, launch.stderr
    argv = json.loads(record.read_text())
    assert argv == ["--lr", "1e-6", "--rm-type", "remote_rm", "--rm-url", deployed]


def test_serve_against_direct_throughput_prints_a_ratio(
    cluster: LocalCluster, deployed: str
) -> None:
    """`ray bench` grades the same answers through Serve and plain serve, all right, and a ratio."""
    result = _cli(
        *("ray", "bench", "--address", cluster.dashboard, "--answers", "100", "--rounds", "1")
    )
    assert result.returncode == 0, result.stdout + result.stderr
    print(result.stdout)
    assert result.stdout.count("wrong: 0") == 2
    assert "serve/direct throughput: x" in result.stdout


def test_replica_killed_under_load_is_replaced_and_no_reward_is_lost(
    cluster: LocalCluster, deployed: str, metrics_port: int
) -> None:
    """SIGKILL of one replica mid-load: SLIME's retries get every reward, Serve starts another."""
    before = _wait_for(cluster, 2)
    ports = _metrics_ports(cluster, metrics_port)
    with Dashboard(cluster.dashboard) as dashboard:
        app = dashboard.details()["applications"]["reward-service"]
    victim = app["deployments"]["RewardService"]["replicas"][0]
    bodies = _slow(64)  # 8 s for the two replicas' one worker each: the kill comes at once

    async def load_and_kill() -> list[float]:
        load = asyncio.create_task(
            slime_rewards(f"{deployed}/fake", bodies, backoff_scale=BACKOFF_SCALE)
        )
        await _answering(load, ports)  # both replicas hold answers in flight by then
        os.kill(int(victim["pid"]), signal.SIGKILL)
        result = await load
        return result.rewards

    rewards = asyncio.run(load_and_kill())
    assert rewards == [1.0] * len(bodies)  # a lost answer raises; a fallback would be 0.0
    assert victim["replica_id"] in before
    _wait_for(cluster, 2, gone=victim["replica_id"])


def test_scaling_down_under_load_drains_the_removed_replica(
    cluster: LocalCluster, deployed: str, metrics_port: int
) -> None:
    """Redeploying 2 -> 1 replica under load: every request answered first time, none retried."""
    before = _wait_for(cluster, 2)
    ports = _metrics_ports(cluster, metrics_port)
    bodies = _slow(96)  # 12 s for two replicas, 24 s for one: in flight throughout the scaling
    spec = ServeSpec(
        replicas=1,
        host="127.0.0.1",
        port=cluster.serve_port,
        metrics_port=metrics_port,
        env=REPLICA_ENV,
    )

    async def load_and_scale() -> tuple[list[float], int]:
        load = asyncio.create_task(
            slime_rewards(f"{deployed}/fake", bodies, backoff_scale=BACKOFF_SCALE)
        )
        await _answering(load, ports)
        with Dashboard(cluster.dashboard) as dashboard:
            await asyncio.to_thread(dashboard.deploy, spec, {}, wait_s=120, say=print)
        result = await load
        return result.rewards, result.retries

    rewards, retries = asyncio.run(load_and_scale())
    assert rewards == [1.0] * len(bodies)
    assert retries == 0
    (kept,) = _wait_for(cluster, 1)
    assert kept in before  # scaled in place: the other replica was not restarted


def _scored(metrics_port: int) -> float:
    """Requests to /score (any scorer's) a replica answered, from its own /metrics."""
    text = httpx.get(f"http://127.0.0.1:{metrics_port}/metrics", timeout=10).text
    return sum(
        float(line.rsplit(" ", 1)[1])
        for line in text.splitlines()
        if line.startswith("reward_http_requests_total{") and 'route="/score' in line
    )


def test_autoscaling_adds_a_replica_under_load_and_removes_it_after(
    cluster: LocalCluster, deployed: str, metrics_port: int
) -> None:
    """Sustained load brings a second replica, which takes traffic; idle, it goes again."""
    spec = ServeSpec(
        metrics_port=metrics_port,
        replicas=1,
        max_replicas=2,
        target_ongoing_requests=4,
        upscale_delay_s=1,
        downscale_delay_s=4,
        look_back_period_s=2,
        host="127.0.0.1",
        port=cluster.serve_port,
        env=REPLICA_ENV,
    )
    with Dashboard(cluster.dashboard) as dashboard:
        dashboard.deploy(spec, {}, wait_s=120, say=print)
    _wait_for(cluster, 1)
    slow = f"{deployed}/fake"

    async def load_until_two() -> float:
        started = time.monotonic()
        while len(_running(cluster)) < 2:
            assert time.monotonic() - started < 120, _status(cluster).describe()
            result = await slime_rewards(slow, _slow(32, 0.5))
            assert result.rewards == [1.0] * 32
        return time.monotonic() - started

    upscaled_after = asyncio.run(load_until_two())
    print(f"second replica after {upscaled_after:.1f}s of load")
    ports = _metrics_ports(cluster, metrics_port)
    before = [_scored(port) for port in ports]
    items = grpo_workload(seed=99, answers=256)  # math answers: routed to both replicas
    asyncio.run(slime_rewards(deployed, [request_body(i) for i in items]))
    after = [_scored(port) for port in ports]
    assert all(a > b for a, b in zip(after, before, strict=True)), (before, after)
    _wait_for(cluster, 1, timeout_s=120)


def test_deploy_without_an_eligible_node_fails_at_once_with_the_fix(
    cluster: LocalCluster, deployed: str
) -> None:
    """No CPU node can hold the replica: deploy exits 1 naming the nodes and the ray start fix."""
    too_big = _cli("ray", "deploy", "--address", cluster.dashboard, "--cpus-per-replica", "4")
    assert too_big.returncode == 1
    assert "no node can hold a replica" in too_big.stderr
    assert "GPU 1" in too_big.stderr and "--resources '{\"reward_cpu\": 4}'" in too_big.stderr
    with Dashboard(cluster.dashboard) as dashboard, pytest.raises(PlacementError) as raised:
        dashboard.deploy(ServeSpec(node_resource="cpu_pool"), {})
    assert "cpu_pool 0" in str(raised.value)
    assert _status(cluster).settled  # the running application was left alone


def test_redeploying_on_another_port_says_serve_keeps_its_own(
    cluster: LocalCluster, deployed: str, metrics_port: int
) -> None:
    """Serve keeps the HTTP port it started with: deploy says so and reports the real endpoint."""
    said: list[str] = []
    spec = ServeSpec(host="127.0.0.1", port=port(), metrics_port=metrics_port, env=REPLICA_ENV)
    with Dashboard(cluster.dashboard) as dashboard:
        status = dashboard.deploy(spec, {}, wait_s=120, say=said.append)
    assert any(f"already listening on 127.0.0.1:{cluster.serve_port}" in line for line in said)
    assert f"{status.endpoint}/score" == deployed


def test_serve_deploy_takes_the_generated_yaml_and_the_token_works_through_serve(
    cluster: LocalCluster, deployed: str, tmp_path: Any
) -> None:
    """`ray config` YAML deployed by `serve deploy` runs; the token's path form passes the proxy."""
    config = _cli(
        *("ray", "config", "--replica-env", "REWARD_API_TOKEN=tok3n", "--metrics-port", "0"),
        *("--http-host", "127.0.0.1", "--http-port", str(cluster.serve_port)),
    )
    assert config.returncode == 0, config.stderr
    path = tmp_path / "reward-service.yaml"
    path.write_text(config.stdout)
    serve_cli = str(Path(ray_cli()).with_name("serve"))
    deploy = subprocess.run(
        [serve_cli, "deploy", str(path), "--address", cluster.dashboard],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert deploy.returncode == 0, deploy.stdout + deploy.stderr
    with Dashboard(cluster.dashboard) as dashboard:
        dashboard.wait_running(180, say=print)
    body = {"prompt": "", "response": "\\boxed{2}", "label": "2"}
    assert httpx.post(deployed, json=body, timeout=30).status_code == 401
    base = deployed.removesuffix("/score")
    assert httpx.post(f"{base}/t/tok3n/score", json=body, timeout=30).json() == 1.0
    check = subprocess.run(
        [sys.executable, "-m", "reward_service", "slime", "preflight"],
        env={
            **os.environ,
            "SLIME_REWARD_RAY_ADDRESS": cluster.dashboard,
            "SLIME_REWARD_TOKEN": "tok3n",
        },
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert check.returncode == 0, check.stderr


def test_slime_launch_can_deploy_the_service_first(
    cluster: LocalCluster, deployed: str, metrics_port: int, tmp_path: Any
) -> None:
    """`launch --ray-serve deploy` deploys (here: 1 replica), runs the preflight, execs train."""
    record = tmp_path / "argv.json"
    train = f"import json, sys; json.dump(sys.argv[1:], open({str(record)!r}, 'w'))"
    launch = _cli(
        *("slime", "launch", "--ray-address", cluster.dashboard, "--ray-serve", "deploy"),
        *("--replicas", "1", "--http-host", "127.0.0.1", "--http-port", str(cluster.serve_port)),
        *("--metrics-port", str(metrics_port), "--wait-s", "60", "--"),
        *(sys.executable, "-c", train),
    )
    assert launch.returncode == 0, launch.stderr
    assert "ray: deployed reward-service: 1 replica(s)" in launch.stderr
    assert "known-correct sample graded 1" in launch.stderr
    assert json.loads(record.read_text()) == ["--rm-type", "remote_rm", "--rm-url", deployed]
    assert len(_wait_for(cluster, 1)) == 1


def test_delete_removes_the_application(cluster: LocalCluster, deployed: str) -> None:
    """`ray delete` removes it; `ray status` then exits 1 and says so."""
    result = _cli("ray", "delete", "--address", cluster.dashboard)
    assert result.returncode == 0, result.stderr
    status = _cli("ray", "status", "--address", cluster.dashboard)
    assert status.returncode == 1 and "not deployed" in status.stdout


# The direct path (`ray direct`): `reward-service serve` in Ray actors. Deployed once Serve
# is gone, on the same cluster: two replicas of one CPU sharing one port, with an API token.

DIRECT_TOKEN = "d1rect-tok3n"


@dataclass(frozen=True)
class Direct:
    base: str
    """`http://127.0.0.1:<shared port>`: both replicas answer there."""
    own: tuple[int, int]
    """Each replica's own port (its /metrics, /readyz)."""

    @property
    def score(self) -> str:
        return f"{self.base}/t/{DIRECT_TOKEN}/score"


def _direct_cli(*args: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "reward_service", *args]
    env = {**os.environ, "REWARD_API_TOKEN": DIRECT_TOKEN, "SLIME_REWARD_TOKEN": DIRECT_TOKEN}
    return subprocess.run(command, capture_output=True, text=True, timeout=400, env=env)


@pytest.fixture(scope="module")
def direct(cluster: LocalCluster) -> Direct:
    """`ray direct deploy`: two replicas of one CPU, the token from the shell, warm on return."""
    shared, own = port(), _port_pair()
    result = _direct_cli(
        *("ray", "direct", "deploy", "--address", cluster.dashboard, "--replicas", "2"),
        *("--replica-port", str(shared), "--own-port", str(own), "--wait-s", "240"),
        *("--replica-secret-env", "REWARD_API_TOKEN"),
    )
    assert result.returncode == 0, result.stdout + result.stderr + cluster.log()
    return Direct(f"http://127.0.0.1:{shared}", (own, own + 1))


def _direct_status(cluster: LocalCluster) -> DirectStatus:
    with Dashboard(cluster.dashboard) as dashboard:
        return direct_status(dashboard)


def _server_pid(actor_pid: int) -> int:
    """The `reward-service serve` process an actor holds."""
    (server,) = [pid for pid in _children(actor_pid) if b"serve" in _cmdline(pid)]
    return server


def _cmdline(pid: int) -> bytes:
    with contextlib.suppress(OSError):
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    return b""


def _wait_ready(own_port: int, timeout_s: float = 180) -> None:
    deadline = time.monotonic() + timeout_s
    while True:
        with contextlib.suppress(httpx.HTTPError):
            if httpx.get(f"http://127.0.0.1:{own_port}/readyz", timeout=5).status_code == 200:
                return
        assert time.monotonic() < deadline, f"replica on port {own_port} not ready"
        time.sleep(0.5)


def test_direct_replicas_land_on_the_cpu_node_share_one_url_and_slime_gets_every_reward(
    cluster: LocalCluster, direct: Direct
) -> None:
    """Both replicas run on the CPU-only node; SLIME's client, posting to the one URL, gets
    every reward right with no retry, both replicas answering; no token: 401."""
    status = _direct_status(cluster)
    assert [r.state for r in status.replicas] == ["ALIVE", "ALIVE"]
    assert {r.node_id for r in status.replicas} == {_cpu_node(cluster)}
    before = [_scored(p) for p in direct.own]
    items = grpo_workload(seed=26, answers=512)
    rewards, retries = _rewards(direct.score, items)
    assert rewards == [item["expected"] for item in items]
    assert retries == 0
    after = [_scored(p) for p in direct.own]
    assert all(a > b for a, b in zip(after, before, strict=True)), (before, after)
    body = {"prompt": "", "response": "\\boxed{2}", "label": "2"}
    assert httpx.post(f"{direct.base}/score", json=body, timeout=30).status_code == 401
    too_big = _direct_cli(
        *("ray", "direct", "deploy", "--address", cluster.dashboard, "--cpus-per-replica", "4")
    )
    assert too_big.returncode == 1 and "no node can hold a replica" in too_big.stderr


def test_slime_finds_the_direct_path_and_launch_checks_it(
    cluster: LocalCluster, direct: Direct, tmp_path: Any
) -> None:
    """`slime url` gives the direct URL (token in its path); `launch --ray-direct check` execs
    train with it after the preflight; `ray direct status` lists each replica's metrics."""
    endpoint = _direct_status(cluster).endpoint
    expected = f"{endpoint}/t/{DIRECT_TOKEN}/score"
    url = _direct_cli("slime", "url", "--ray-address", cluster.dashboard)
    assert url.returncode == 0, url.stderr
    assert url.stdout.strip() == expected
    record = tmp_path / "argv.json"
    train = f"import json, sys; json.dump(sys.argv[1:], open({str(record)!r}, 'w'))"
    launch = _direct_cli(
        *("slime", "launch", "--ray-address", cluster.dashboard, "--ray-direct", "check"),
        *("--wait-s", "30", "--", sys.executable, "-c", train),
    )
    assert launch.returncode == 0, launch.stderr
    assert "known-correct sample graded 1" in launch.stderr
    assert json.loads(record.read_text()) == ["--rm-type", "remote_rm", "--rm-url", expected]
    status = _direct_cli("ray", "direct", "status", "--address", cluster.dashboard)
    assert status.returncode == 0
    assert [line.rsplit(":", 1)[1] for line in status.stdout.splitlines() if "metrics" in line] == [
        f"{p}/metrics" for p in direct.own
    ]


def test_direct_against_plain_serve_bench_prints_ratios(
    cluster: LocalCluster, direct: Direct
) -> None:
    """`ray bench` grades the same answers through the direct path and plain serve, all right."""
    result = _direct_cli(
        *("ray", "bench", "--address", cluster.dashboard, "--answers", "100", "--rounds", "1")
    )
    assert result.returncode == 0, result.stdout + result.stderr
    print(result.stdout)
    assert result.stdout.count("wrong: 0") == 2
    assert "ray-direct/direct throughput: x" in result.stdout
    assert "cpu ms per answer: servers" in result.stdout


def test_a_killed_direct_server_is_restarted_and_no_reward_is_lost(
    cluster: LocalCluster, direct: Direct
) -> None:
    """SIGKILL of one replica's server under load: SLIME's retries land on the other replica
    (same URL), every reward right; the actor starts the server again on its own port."""
    replica = min(_direct_status(cluster).replicas, key=lambda r: r.name)
    victim = _server_pid(replica.actor_pid)
    items = grpo_workload(seed=27, answers=800)

    async def load_and_kill() -> list[float]:
        bodies = [request_body(i) for i in items]
        load = asyncio.create_task(slime_rewards(direct.score, bodies, backoff_scale=BACKOFF_SCALE))
        await _answering(load, list(direct.own))
        os.kill(victim, signal.SIGKILL)
        return (await load).rewards

    assert asyncio.run(load_and_kill()) == [item["expected"] for item in items]
    _wait_ready(direct.own[0])
    assert _server_pid(replica.actor_pid) != victim


def test_a_killed_direct_actor_is_restarted_by_ray_and_its_server_goes_with_it(
    cluster: LocalCluster, direct: Direct
) -> None:
    """SIGKILL of a replica's actor: its server dies with it (no orphan holds the ports), Ray
    starts the actor again, warm, and the replica answers again."""
    replica = max(_direct_status(cluster).replicas, key=lambda r: r.name)
    server = _server_pid(replica.actor_pid)
    os.kill(replica.actor_pid, signal.SIGKILL)
    deadline = time.monotonic() + 30
    while _cmdline(server):
        assert time.monotonic() < deadline, "the server outlived its actor"
        time.sleep(0.2)
    deadline = time.monotonic() + 180
    while not any(
        r.name == replica.name and r.state == "ALIVE" and r.restarts == 1
        for r in _direct_status(cluster).replicas
    ):
        assert time.monotonic() < deadline, _direct_status(cluster).describe()
        time.sleep(0.5)
    _wait_ready(direct.own[1])
    items = grpo_workload(seed=28, answers=256)
    assert _rewards(direct.score, items)[0] == [item["expected"] for item in items]


def test_scaling_direct_down_under_load_drains_and_delete_removes_them(
    cluster: LocalCluster, direct: Direct
) -> None:
    """`ray direct deploy --replicas 1` under load drains the second replica with every
    reward right and the first kept as it was; `ray direct delete` removes the rest."""
    (kept,) = [r for r in _direct_status(cluster).replicas if r.name.index == 0]
    items = grpo_workload(seed=29, answers=1500)

    async def load_and_scale() -> list[float]:
        bodies = [request_body(i) for i in items]
        load = asyncio.create_task(slime_rewards(direct.score, bodies, backoff_scale=BACKOFF_SCALE))
        await _answering(load, list(direct.own))
        scaled = await asyncio.to_thread(
            _direct_cli,
            *("ray", "direct", "deploy", "--address", cluster.dashboard, "--replicas", "1"),
            *("--replica-port", direct.base.rsplit(":", 1)[1], "--own-port", str(direct.own[0])),
            *("--replica-secret-env", "REWARD_API_TOKEN"),
        )
        assert scaled.returncode == 0, scaled.stdout + scaled.stderr
        return (await load).rewards

    assert asyncio.run(load_and_scale()) == [item["expected"] for item in items]
    (left,) = _direct_status(cluster).replicas
    assert (left.name, left.actor_pid) == (kept.name, kept.actor_pid)
    deleted = _direct_cli("ray", "direct", "delete", "--address", cluster.dashboard)
    assert deleted.returncode == 0, deleted.stderr
    status = _direct_cli("ray", "direct", "status", "--address", cluster.dashboard)
    assert status.returncode == 1 and "0 alive" in status.stdout


# A SLIME job on the same cluster: `slime submit` and the bash launcher, the service live
# beside the cluster. The job's stand-in `train.py` records its argv and posts SLIME-shaped
# requests to the `--rm-url` it got.

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


def _working_dir(tmp_path: Path) -> Path:
    work = tmp_path / "recipe"
    (work / "scripts").mkdir(parents=True)
    (work / "scripts" / "slime_launcher.sh").write_text(launcher_script())
    (work / "train.py").write_text(TRAIN_PY)
    (work / "model.sh").write_text(f"MODEL_ARGS=({shlex.join(MODEL_ARGS)})\n")
    return work


def test_a_slime_job_gets_argv_intact_and_rewards_right(
    cluster: LocalCluster, reward_url: str, tmp_path: Path
) -> None:
    """A job submitted by `slime submit` with the bash launcher gets every argument and the rm
    URL once; its stand-in `train.py` posts SLIME-shaped requests there and records them."""
    record = tmp_path / "record.json"
    rm_url = f"{reward_url}/score/math_verify"
    command = [sys.executable, "-m", "reward_service", "slime", "submit", "--wait"]
    command += ["--address", cluster.dashboard, "--working-dir", str(_working_dir(tmp_path))]
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
