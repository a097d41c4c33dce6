"""The direct path through the Ray dashboard: deploy, delete (Ray jobs), status (actor list).

No Ray here, as for the Serve path (`cluster`): deploying submits
`reward_service.rayserve.direct_driver` as a job (`POST /api/jobs/`) and
waits for it; status reads the replica actors (`/api/v0/actors`) and their
nodes, the ports being in the actors' names (`ReplicaName`). The URL SLIME
posts to is a node's shared port; a node's replicas all answer there.
"""

from __future__ import annotations

import shlex
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from reward_service.rayserve.cluster import Dashboard, Say, _host, _stderr
from reward_service.rayserve.direct_spec import ACTOR_CLASS, NAMESPACE, DirectSpec, ReplicaName
from reward_service.rayserve.placement import check_placement
from reward_service.rayserve.spec import RayServeError

DRIVER = ("python", "-m", "reward_service.rayserve.direct_driver")
"""The job's entrypoint: the head's `python`, which has reward-service as every node does."""
_JOB_DONE = frozenset({"SUCCEEDED", "FAILED", "STOPPED"})


@dataclass(frozen=True)
class DirectReplicaState:
    """One replica actor as the dashboard lists it."""

    name: ReplicaName
    state: str
    """ALIVE, RESTARTING (Ray starting it again), PENDING_CREATION (no room yet)."""
    node_ip: str
    node_id: str
    actor_pid: int
    restarts: int
    cpus: float = 1.0

    @property
    def workers(self) -> int:
        """Its server's grading workers: the actor's whole CPUs (unless REWARD_WORKERS says)."""
        return max(1, int(self.cpus + 1e-9))

    @property
    def url(self) -> str:
        return f"http://{_host(self.node_ip)}:{self.name.port}"

    @property
    def metrics(self) -> str:
        return f"http://{_host(self.node_ip)}:{self.name.own_port}/metrics"


@dataclass(frozen=True)
class DirectStatus:
    """Every direct replica on the cluster (all ports)."""

    replicas: tuple[DirectReplicaState, ...]

    @property
    def serving(self) -> bool:
        return any(r.state == "ALIVE" for r in self.replicas)

    def endpoints(self) -> list[str]:
        """Each node's shared URL (`http://ip:port`), the one with the most live replicas first."""
        alive = Counter(r.url for r in self.replicas if r.state == "ALIVE")
        return [url for url, _ in sorted(alive.items(), key=lambda kv: (-kv[1], kv[0]))]

    @property
    def endpoint(self) -> str:
        """The URL for a client that takes one (SLIME's `--rm-url`); `RayServeError` if none."""
        found = self.endpoints()
        if not found:
            raise RayServeError("no direct replica is alive: reward-service ray direct deploy ...")
        return found[0]

    def describe(self) -> str:
        lines = [f"direct replicas: {sum(r.state == 'ALIVE' for r in self.replicas)} alive"]
        lines += [f"  endpoint: {url}/score" for url in self.endpoints()]
        lines += [
            f"  replica {r.name.index} (port {r.name.port}): {r.state} on {r.node_ip}, "
            f"actor restarts {r.restarts}, metrics {r.metrics}"
            for r in sorted(self.replicas, key=lambda r: r.name)
        ]
        return "\n".join(lines)


def direct_status(dashboard: Dashboard) -> DirectStatus:
    """The replica actors that are not dead, with their nodes' addresses."""
    params: list[tuple[str, str | int]] = [("limit", 10_000), ("detail", "true")]
    for key, value in (("class_name", ACTOR_CLASS), ("ray_namespace", NAMESPACE)):
        params += [("filter_keys", key), ("filter_predicates", "="), ("filter_values", value)]
    answer = dashboard.api("GET", "/api/v0/actors", params=params).json()
    ips = {node.node_id: node.ip for node in dashboard.nodes()}
    return DirectStatus(tuple(_replicas(answer["data"]["result"]["result"], ips)))


def _replicas(
    actors: Sequence[Mapping[str, Any]], ips: Mapping[str, str]
) -> list[DirectReplicaState]:
    found = []
    for actor in actors:
        name = ReplicaName.parse(str(actor.get("name") or ""))
        if name is None or actor.get("state") == "DEAD":
            continue
        found.append(
            DirectReplicaState(
                name=name,
                state=str(actor.get("state", "")),
                node_ip=ips.get(str(actor.get("node_id")), "?"),
                node_id=str(actor.get("node_id", "")),
                actor_pid=int(actor.get("pid") or 0),
                restarts=int(actor.get("num_restarts") or 0),
                cpus=float((actor.get("required_resources") or {}).get("CPU", 1.0)),
            )
        )
    return found


def run_job(
    dashboard: Dashboard,
    args: Sequence[str],
    env: Mapping[str, str],
    timeout_s: float,
    say: Say = _stderr,
) -> str:
    """Run the driver with `args` as a Ray job; its log. `RayServeError` unless it succeeds."""
    body: dict[str, Any] = {"entrypoint": shlex.join([*DRIVER, *args])}
    if env:
        body["runtime_env"] = {"env_vars": dict(env)}
    job = dashboard.api("POST", "/api/jobs/", json=body).json()["submission_id"]
    deadline = time.monotonic() + timeout_s
    while True:
        info = dashboard.api("GET", f"/api/jobs/{job}").json()
        if info.get("status") in _JOB_DONE:
            break
        if time.monotonic() > deadline:
            dashboard.api("POST", f"/api/jobs/{job}/stop")
            raise RayServeError(f"job {job} still running after {timeout_s:g}s: stopped")
        time.sleep(0.5)
    logs = str(dashboard.api("GET", f"/api/jobs/{job}/logs").json().get("logs", ""))
    for line in logs.splitlines():
        if line.startswith("direct: "):
            say(f"ray {line}")
    if info["status"] != "SUCCEEDED":
        raise RayServeError(
            f"job {job} {info['status']}: {info.get('message', '')}\n{logs[-4000:]}"
        )
    return logs


def deploy_direct(
    dashboard: Dashboard,
    spec: DirectSpec,
    secrets: Mapping[str, str],
    *,
    wait_s: float = 600.0,
    say: Say = _stderr,
) -> DirectStatus:
    """Check placement, start or update the replicas (a job), wait until they are warm."""
    eligible = check_placement(dashboard.nodes(), spec)
    where = ", ".join(f"{n.ip} ({n.node_id[:8]})" for n in eligible)
    say(f"ray direct: {len(eligible)} CPU node(s) may hold replicas: {where}")
    args = ["deploy", spec.to_json(), "--wait-s", f"{wait_s:g}"]
    run_job(dashboard, args, {n: secrets[n] for n in spec.secret_names}, wait_s + 120, say)
    return direct_status(dashboard)


def delete_direct(
    dashboard: Dashboard, port: int | None, drain_s: float, say: Say = _stderr
) -> None:
    """Drain and remove the replicas on `port` (None: every one)."""
    args = ["delete", "--drain-s", f"{drain_s:g}"]
    if port is not None:
        args += ["--port", str(port)]
    run_job(dashboard, args, {}, drain_s * 2 + 180, say)
