"""Placement: replicas go only to CPU nodes that declare the node resource."""

from __future__ import annotations

import pytest

from reward_service.rayserve.placement import Node, PlacementError, check_placement
from reward_service.rayserve.spec import ServeSpec


def _node(name: str, cpus: float, gpus: float = 0, offered: float = 0, alive: bool = True) -> Node:
    resources = {"CPU": cpus, "GPU": gpus, "reward_cpu": offered}
    return Node(name, f"10.0.0.{len(name)}", alive, name == "head", resources)


GPU_HEAD = _node("head", cpus=64, gpus=8)


def test_only_cpu_nodes_with_the_resource_are_eligible() -> None:
    """A GPU node with free CPUs and a CPU node without the resource are both left out."""
    cpu = _node("cpu", cpus=16, offered=16)
    plain = _node("plain", cpus=16)
    assert check_placement([GPU_HEAD, cpu, plain], ServeSpec(cpus_per_replica=4)) == [cpu]


def test_room_counts_whole_replicas_of_the_smaller_of_cpus_and_resource() -> None:
    """A node holds floor(min(CPU, reward_cpu) / C) replicas; a dead node none."""
    spec = ServeSpec(cpus_per_replica=3)
    assert _node("a", cpus=16, offered=10).room(spec) == 3
    assert _node("b", cpus=4, offered=10).room(spec) == 1
    assert _node("c", cpus=16, offered=10, alive=False).room(spec) == 0
    assert _node("d", cpus=1, offered=1).room(ServeSpec(cpus_per_replica=0.5)) == 2


def test_no_eligible_node_names_the_nodes_and_the_ray_start_fix() -> None:
    """With only GPU nodes, the error lists each node and the `ray start` line for CPU nodes."""
    with pytest.raises(PlacementError) as raised:
        check_placement([GPU_HEAD], ServeSpec(cpus_per_replica=2))
    message = str(raised.value)
    assert "no node can hold a replica" in message
    assert "10.0.0.4 (head): CPU 64, GPU 8, reward_cpu 0" in message
    assert "--num-gpus 0 --resources '{\"reward_cpu\": 2}'" in message


def test_too_little_room_for_the_replicas_asked_is_refused() -> None:
    """Two replicas of 4 CPUs do not fit in 6 units: refused, not left half pending."""
    with pytest.raises(PlacementError, match="at most 1 replica"):
        check_placement(
            [_node("cpu", cpus=8, offered=6)], ServeSpec(replicas=2, cpus_per_replica=4)
        )


def test_a_gpu_node_that_declares_the_resource_is_refused() -> None:
    """The resource on a GPU node would let replicas take rollout CPUs: an error, not a warning."""
    tainted = _node("gpu", cpus=64, gpus=8, offered=8)
    with pytest.raises(PlacementError, match="GPU node"):
        check_placement([tainted, _node("cpu", cpus=8, offered=8)], ServeSpec())


def test_nodes_read_from_the_state_api() -> None:
    """A node of the dashboard's /api/v0/nodes becomes a Node with its totals and role."""
    node = Node.from_state(
        {
            "node_id": "abc",
            "node_ip": "10.1.2.3",
            "is_head_node": True,
            "state": "ALIVE",
            "resources_total": {"CPU": 8.0, "GPU": 1.0},
        }
    )
    assert (node.node_id, node.ip, node.head, node.alive, node.gpus) == (
        "abc",
        "10.1.2.3",
        True,
        True,
        1,
    )
