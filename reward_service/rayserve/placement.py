"""Which nodes may hold a replica, checked before deploying rather than left pending.

A node is eligible when it is alive, declares no GPU, and offers the CPU-node
resource (`reward_cpu`) and CPUs for at least one replica. A GPU node that
declares the resource is refused outright: the promise is never to take a
GPU node's CPUs from rollout.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from reward_service.rayserve.spec import RayServeError


class Sizing(Protocol):
    """What placement needs of a deployment, Serve's (`ServeSpec`) or direct (`DirectSpec`)."""

    @property
    def replicas(self) -> int: ...
    @property
    def cpus_per_replica(self) -> float: ...
    @property
    def node_resource(self) -> str: ...


class PlacementError(RayServeError):
    """No node may hold a replica, or a GPU node offers the CPU-node resource."""


@dataclass(frozen=True)
class Node:
    """One Ray node, as the dashboard's state API reports it."""

    node_id: str
    ip: str
    alive: bool
    head: bool
    resources: Mapping[str, float]

    @classmethod
    def from_state(cls, state: Mapping[str, Any]) -> Node:
        return cls(
            node_id=str(state["node_id"]),
            ip=str(state.get("node_ip", "")),
            alive=state.get("state") == "ALIVE",
            head=bool(state.get("is_head_node")),
            resources={k: float(v) for k, v in (state.get("resources_total") or {}).items()},
        )

    @property
    def gpus(self) -> float:
        return self.resources.get("GPU", 0.0)

    def room(self, spec: Sizing) -> int:
        """How many replicas of `spec` this node can hold at most (0 if it may hold none)."""
        if not self.alive or self.gpus > 0:
            return 0
        offered = min(self.resources.get(spec.node_resource, 0.0), self.resources.get("CPU", 0.0))
        return math.floor(offered / spec.cpus_per_replica + 1e-9)

    def describe(self, spec: Sizing) -> str:
        role = "head" if self.head else "worker"
        cpu, gpu = self.resources.get("CPU", 0.0), self.gpus
        offered = self.resources.get(spec.node_resource, 0.0)
        state = "" if self.alive else ", dead"
        return (
            f"{self.ip} ({role}{state}): CPU {cpu:g}, GPU {gpu:g}, {spec.node_resource} {offered:g}"
        )


def _fix(spec: Sizing) -> str:
    amount = max(1, math.ceil(spec.cpus_per_replica))
    resources = json.dumps({spec.node_resource: amount})
    return (
        "  Start each CPU node with the resource, as many units as CPUs the service may use:\n"
        f"    ray start --address <head>:6379 --num-gpus 0 --resources '{resources}'\n"
        "  (on Slurm, in the srun line of the CPU nodes only; the GPU nodes never declare it)"
    )


def check_placement(nodes: Sequence[Node], spec: Sizing) -> list[Node]:
    """The nodes that may hold a replica; `PlacementError` if none may, or too few."""
    listed = "\n".join(f"    {node.describe(spec)}" for node in nodes) or "    (no nodes)"
    tainted = [n for n in nodes if n.alive and n.gpus > 0 and n.resources.get(spec.node_resource)]
    if tainted:
        raise PlacementError(
            f"GPU node(s) {', '.join(n.ip for n in tainted)} declare {spec.node_resource!r}: "
            "replicas could land there and take CPUs from rollout. Restart them without "
            f"--resources {spec.node_resource}.\n  nodes:\n{listed}"
        )
    eligible = [node for node in nodes if node.room(spec) > 0]
    if not eligible:
        raise PlacementError(
            f"no node can hold a replica ({spec.cpus_per_replica:g} CPU and "
            f"{spec.cpus_per_replica:g} {spec.node_resource!r}, no GPU); Ray would leave "
            f"it pending for ever.\n  nodes:\n{listed}\n{_fix(spec)}"
        )
    room = sum(node.room(spec) for node in eligible)
    if room < spec.replicas:
        raise PlacementError(
            f"the CPU nodes hold at most {room} replica(s) of {spec.cpus_per_replica:g} CPU, "
            f"{spec.replicas} asked: lower --replicas or --cpus-per-replica, or add CPU nodes.\n"
            f"  nodes:\n{listed}\n{_fix(spec)}"
        )
    return eligible
