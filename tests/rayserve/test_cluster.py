"""Reading Serve's details: our application's status, its endpoint and replica metrics."""

from __future__ import annotations

from typing import Any

from reward_service.rayserve.cluster import Replica, app_status, endpoint
from reward_service.rayserve.placement import Node

HEAD = Node("h", "10.0.0.1", True, True, {"CPU": 8, "GPU": 8})
CPU = Node("c", "10.0.0.2", True, False, {"CPU": 8, "reward_cpu": 8})


def _details(host: str = "0.0.0.0", states: tuple[str, ...] = ("RUNNING",)) -> dict[str, Any]:
    proxies = {
        node: {"node_id": node, "node_ip": ip, "status": "HEALTHY"}
        for node, ip in (("h", "10.0.0.1"), ("c", "10.0.0.2"))
    }
    replicas = [
        {"replica_id": f"r{i}", "state": state, "node_id": "c", "node_ip": "10.0.0.2"}
        for i, state in enumerate(states)
    ]
    deployment = {
        "status": "HEALTHY",
        "message": "",
        "deployment_config": {"user_config": {"metrics_port": 9500}},
        "replicas": replicas,
    }
    return {
        "http_options": {"host": host, "port": 8000},
        "proxies": proxies,
        "applications": {
            "reward-service": {"status": "RUNNING", "deployments": {"RewardService": deployment}}
        },
    }


def test_endpoint_is_a_cpu_nodes_proxy_else_the_head() -> None:
    """Unbound proxies: the one on a node running a replica, else the head; a bound host as is."""
    on_cpu = (Replica("r", "RUNNING", "10.0.0.2", "c"),)
    assert endpoint(_details(), [HEAD, CPU], on_cpu) == "http://10.0.0.2:8000"
    assert endpoint(_details(), [CPU, HEAD], ()) == "http://10.0.0.1:8000"
    assert endpoint(_details("127.0.0.1"), [CPU, HEAD], on_cpu) == "http://127.0.0.1:8000"
    assert endpoint(_details("fd00::1"), [HEAD], ()) == "http://[fd00::1]:8000"


def _deployment(details: dict[str, Any]) -> dict[str, Any]:
    deployment: dict[str, Any] = details["applications"]["reward-service"]["deployments"][
        "RewardService"
    ]
    return deployment


def test_status_reads_replicas_and_lists_their_metrics_per_node() -> None:
    """Running replicas of one node get metrics ports 9500, 9501; a starting one none yet."""
    status = app_status(_details(states=("RUNNING", "RUNNING", "STARTING")), [HEAD, CPU])
    assert status is not None
    assert [r.state for r in status.replicas] == ["RUNNING", "RUNNING", "STARTING"]
    assert status.metrics == ("http://10.0.0.2:9500/metrics", "http://10.0.0.2:9501/metrics")
    assert "endpoint: http://10.0.0.2:8000/score" in status.describe()


def test_serving_while_scaling_settled_only_when_done() -> None:
    """A replica starting, fewer than the target, or unhealthy: serving, not settled."""
    assert app_status({"applications": {}}, [HEAD]) is None
    done = app_status(_details(states=("RUNNING", "RUNNING")), [HEAD])
    assert done is not None and done.serving and done.settled
    starting = app_status(_details(states=("RUNNING", "STARTING")), [HEAD])
    assert starting is not None and starting.serving and not starting.settled
    short = _details(states=("RUNNING",))
    _deployment(short)["target_num_replicas"] = 2
    scaling = app_status(short, [HEAD])
    assert scaling is not None and scaling.serving and not scaling.settled
    unhealthy = _details()
    _deployment(unhealthy)["status"] = "UNHEALTHY"
    sick = app_status(unhealthy, [HEAD])
    assert sick is not None and sick.serving and not sick.settled


def test_no_running_replica_is_not_serving() -> None:
    """An application whose only replica is still starting takes no traffic yet."""
    status = app_status(_details(states=("STARTING",)), [HEAD])
    assert status is not None and not status.serving
