"""The direct path without a cluster: its spec, the replicas' names, status from the actor list."""

from __future__ import annotations

import argparse

import pytest

from reward_service.rayserve.direct_cluster import DirectStatus, _replicas
from reward_service.rayserve.direct_replica import server_command
from reward_service.rayserve.direct_spec import (
    DirectSpec,
    ReplicaName,
    direct_from_args,
    direct_options,
)
from reward_service.rayserve.spec import RayServeError, replica_options
from reward_service.server.serving import bind_sockets


def test_replica_names_carry_their_ports_and_other_actors_are_not_replicas() -> None:
    """A replica's actor name gives back its index and both ports; other names give None."""
    spec = DirectSpec(replicas=3, port=8100, own_port_base=9600)
    names = spec.names()
    assert [ReplicaName.parse(str(name)) for name in names] == names
    assert [(n.index, n.port, n.own_port) for n in names] == [
        (0, 8100, 9600),
        (1, 8100, 9601),
        (2, 8100, 9602),
    ]
    assert ReplicaName.parse("direct-x-port-1-own-2") is None
    assert ReplicaName.parse("SERVE_CONTROLLER_ACTOR") is None


def test_the_spec_reaches_the_job_without_its_secrets() -> None:
    """The job's command line names the secret variables, never their values; it round-trips."""
    spec = DirectSpec(replicas=2, env={"REWARD_DEADLINE_S": "20"}, secret_names=("TOKEN",))
    text = spec.to_json()
    assert "s3cr3t" not in text and "TOKEN" in text
    assert DirectSpec.from_json(text) == spec
    assert spec.server_env({"TOKEN": "s3cr3t"}) == {"REWARD_DEADLINE_S": "20", "TOKEN": "s3cr3t"}
    assert spec.fingerprint({"TOKEN": "a"}) != spec.fingerprint({"TOKEN": "b"})


def test_a_shared_port_among_the_replicas_own_ports_is_refused() -> None:
    """The shared port may not be one of the replicas' own ports, nor may replicas be zero."""
    with pytest.raises(RayServeError, match="own ports"):
        DirectSpec(replicas=2, port=9601, own_port_base=9600)
    with pytest.raises(RayServeError, match="at least 1"):
        DirectSpec(replicas=0)


def test_options_build_the_spec_and_workers_are_whole_cpus() -> None:
    """`ray direct deploy`'s flags make the spec; a replica runs one worker per whole CPU."""
    parser = argparse.ArgumentParser(parents=[replica_options(), direct_options()])
    sizes = ["--replicas", "2", "--cpus-per-replica", "2.5", "--replica-port", "8200"]
    env = ["--replica-env", "REWARD_DEADLINE_S=5", "--replica-secret-env", "REWARD_API_TOKEN"]
    args = parser.parse_args([*sizes, *env])
    spec = direct_from_args(args)
    assert (spec.replicas, spec.port, spec.workers) == (2, 8200, 2)
    assert spec.env == {"REWARD_DEADLINE_S": "5"}
    assert spec.secret_names == ("REWARD_API_TOKEN",)


def test_the_server_is_reward_service_serve_on_the_shared_and_its_own_port() -> None:
    """The replica runs the service's own command; REWARD_WORKERS in its env drops --workers."""
    command = server_command(8100, 9600, 4)
    assert command[1:4] == ["-m", "reward_service", "serve"]
    assert command[command.index("--port") + 1] == "8100" and "--reuse-port" in command
    assert command[command.index("--own-port") + 1] == "9600"
    assert command[-2:] == ["--workers", "4"]
    assert "--workers" not in server_command(8100, 9600, None)


def _actor(index: int, state: str, node: str, port: int = 8100) -> dict[str, object]:
    name = ReplicaName(index, port, 9600 + index)
    return {
        "name": str(name),
        "state": state,
        "node_id": node,
        "pid": 100 + index,
        "num_restarts": 0,
        "required_resources": {"CPU": 2.0, "reward_cpu": 2.0},
    }


def test_status_lists_live_replicas_and_the_busiest_node_url_first() -> None:
    """Dead actors are left out; the endpoint is the node's URL with the most live replicas."""
    actors = [
        _actor(0, "ALIVE", "a"),
        _actor(1, "ALIVE", "b"),
        _actor(2, "ALIVE", "b"),
        _actor(3, "DEAD", "a"),
        _actor(4, "RESTARTING", "a"),
        {"name": "something-else", "state": "ALIVE", "node_id": "a"},
    ]
    status = DirectStatus(tuple(_replicas(actors, {"a": "10.0.0.2", "b": "10.0.0.3"})))
    assert [r.name.index for r in status.replicas] == [0, 1, 2, 4]
    assert status.endpoints() == ["http://10.0.0.3:8100", "http://10.0.0.2:8100"]
    assert status.endpoint == "http://10.0.0.3:8100" and status.serving
    assert status.replicas[0].metrics == "http://10.0.0.2:9600/metrics"
    assert status.replicas[0].workers == 2
    shown = status.describe()
    assert "3 alive" in shown and "RESTARTING on 10.0.0.2" in shown
    with pytest.raises(RayServeError, match="no direct replica is alive"):
        _ = DirectStatus(()).endpoint


def test_servers_of_a_node_can_share_the_replica_port() -> None:
    """With reuse_port, a second server listens on the same port as the first (SO_REUSEPORT)."""
    first = bind_sockets("127.0.0.1", 0, reuse_port=True)
    shared = first[0].getsockname()[1]
    second = bind_sockets("127.0.0.1", shared, reuse_port=True)
    try:
        for sock in (*first, *second):
            sock.listen()
    finally:
        for sock in (*first, *second):
            sock.close()
