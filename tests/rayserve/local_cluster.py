"""A real two-node Ray cluster on 127.0.0.1: a head that declares a GPU, and a CPU-only node.

Both nodes run `ray start --block` in sessions of their own, so stopping the
cluster signals exactly the processes started here (never `ray stop`, which
would end every Ray process on the machine, other tests' clusters included);
`stop` then checks that no process of either session is left.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from reward_service.testing import free_port

RAY_WORKER_PORTS = range(10002, 20000)
NODE_RESOURCE = "reward_cpu"
CPU_NODE_CPUS = 2
WORKER_ATTEMPTS = 3
"""A CPU node's `ray start` gives up when the head does not answer within 30 s (seen on a
loaded machine: "Failed to get node info ... Deadline Exceeded"); it is started again."""
PORT_OPTIONS = (
    "--node-manager-port",
    "--object-manager-port",
    "--dashboard-agent-listen-port",
    "--dashboard-agent-grpc-port",
    "--metrics-export-port",
    "--runtime-env-agent-port",
)


_GIVEN: set[int] = set()


def port() -> int:
    """A free loopback port outside Ray's worker port range, never one given before.

    A port is free when asked and stays unbound until Ray binds it, so two asks
    can get the same one back; Ray refuses to start when two of its components
    share a port.
    """
    while (found := free_port()) in RAY_WORKER_PORTS or found in _GIVEN:
        pass
    _GIVEN.add(found)
    return found


def ray_cli() -> str:
    found = shutil.which("ray", path=str(Path(sys.executable).parent)) or shutil.which("ray")
    if found is None:
        raise RuntimeError("ray is importable but its `ray` command is not on PATH")
    return found


def _sessions(sids: set[int]) -> list[int]:
    """PIDs of live processes in any of the sessions `sids`."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError, ValueError, IndexError):
            fields = stat.read_text().rsplit(")", 1)[1].split()
            if fields[0] != "Z" and int(fields[3]) in sids:
                found.append(int(stat.parent.name))
    return found


@dataclass
class LocalCluster:
    """The running cluster: its dashboard address and the processes to stop."""

    dashboard: str
    temp_dir: str
    serve_port: int
    nodes: list[subprocess.Popen[bytes]] = field(default_factory=list)

    def log(self) -> str:
        return "\n".join(
            p.read_text(errors="replace")[-3000:] for p in Path(self.temp_dir).glob("*.log")
        )

    def node_count(self) -> int:
        answer = httpx.get(f"{self.dashboard}/api/v0/nodes", timeout=10).json()
        nodes = answer["data"]["result"]["result"]
        return sum(node["state"] == "ALIVE" for node in nodes)

    def leftovers(self) -> list[int]:
        return _sessions({node.pid for node in self.nodes})

    def stop(self) -> list[int]:
        """Stop both nodes; return the PIDs of their sessions still alive afterwards.

        Serve is shut down first: a node stopped under a live replica waits out
        the replica's whole drain (30 s) before it exits.
        """
        with contextlib.suppress(httpx.HTTPError):
            httpx.delete(f"{self.dashboard}/api/serve/applications/", timeout=60)
        for node in reversed(self.nodes):
            if node.poll() is None:
                node.send_signal(signal.SIGTERM)
        for node in reversed(self.nodes):
            try:
                node.wait(60)
            except subprocess.TimeoutExpired:
                node.kill()
                node.wait()
        deadline = time.monotonic() + 30
        while (left := self.leftovers()) and time.monotonic() < deadline:
            time.sleep(0.5)
        for pid in left:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.5)
        shutil.rmtree(self.temp_dir, ignore_errors=True)
        return self.leftovers()


def _start(command: list[str], log: Path) -> subprocess.Popen[bytes]:
    """Start a node; its jobs' `python` is this interpreter (`ray direct` runs one)."""
    path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"
    with log.open("wb") as out:
        return subprocess.Popen(
            command,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            env={**os.environ, "PATH": path},
        )


@contextlib.contextmanager
def local_cluster(cpu_node: bool = True, cpus: int = CPU_NODE_CPUS) -> Iterator[LocalCluster]:
    """Head (1 CPU, 1 GPU declared), and with `cpu_node` a CPU-only node offering `cpus` CPUs
    and as many `reward_cpu` (Ray's CPUs are counts, not cores: the machine may have fewer)."""
    ray = ray_cli()
    temp_dir = tempfile.mkdtemp(prefix="ray-", dir="/tmp")
    gcs_port, dashboard_port = port(), port()
    common = ["--block", "--disable-usage-stats", "--node-ip-address", "127.0.0.1"]
    head = [ray, "start", "--head", *common, "--port", str(gcs_port), "--temp-dir", temp_dir]
    head += ["--num-cpus", "1", "--num-gpus", "1", "--include-dashboard", "true"]
    head += ["--dashboard-host", "127.0.0.1", "--dashboard-port", str(dashboard_port)]
    head += ["--ray-client-server-port", str(port())]
    for option in PORT_OPTIONS:
        head += [option, str(port())]
    cluster = LocalCluster(f"http://127.0.0.1:{dashboard_port}", temp_dir, port())
    try:
        cluster.nodes.append(_start(head, Path(temp_dir) / "head.log"))
        _wait(cluster, 1)
        for attempt in range(WORKER_ATTEMPTS if cpu_node else 0):
            worker = [ray, "start", *common, "--address", f"127.0.0.1:{gcs_port}"]
            worker += ["--num-cpus", str(cpus), "--num-gpus", "0"]
            worker += ["--resources", json.dumps({NODE_RESOURCE: cpus})]
            for option in PORT_OPTIONS:
                worker += [option, str(port())]
            log = Path(temp_dir) / f"cpu-node-{attempt}.log"
            cluster.nodes.append(_start(worker, log))
            try:
                _wait(cluster, 2)
                break
            except RuntimeError:
                if cluster.nodes[-1].poll() is None or attempt + 1 == WORKER_ATTEMPTS:
                    raise
                cluster.nodes.pop()  # it gave up on the head (a loaded machine): again
        yield cluster
    finally:
        left = cluster.stop()
        assert left == [], f"Ray processes left running: {left}"


def _wait(cluster: LocalCluster, nodes: int, timeout_s: float = 120) -> None:
    deadline = time.monotonic() + timeout_s
    while True:
        with contextlib.suppress(httpx.HTTPError, KeyError, ValueError):
            if cluster.node_count() >= nodes:
                return
        if any(node.poll() is not None for node in cluster.nodes) or time.monotonic() > deadline:
            raise RuntimeError(f"Ray cluster did not reach {nodes} node(s):\n{cluster.log()}")
        time.sleep(0.5)
