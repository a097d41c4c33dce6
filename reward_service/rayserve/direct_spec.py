"""`DirectSpec`: the direct path's replicas, `reward-service serve` processes held by Ray actors.

Pure data, no Ray: the commands build it from flags, hand it to the deploy
job as JSON (`to_json`, secrets by name only), and read the replicas back
from their actor names (`ReplicaName`), which carry the ports: the dashboard's
actor list then says where every replica listens without asking it.

Every replica of a deployment listens on the same port (`port`, shared with
SO_REUSEPORT by the replicas of one node, the kernel spreading connections
over them), and on a port of its own, `own_port_base + index`, for its own
`/metrics` and `/readyz`.
"""

from __future__ import annotations

import argparse
import json
import re
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from reward_service.rayserve.spec import NODE_RESOURCE, RayServeError
from reward_service.subcommands import assignments

NAMESPACE = "reward-service"
"""The Ray namespace of the replicas' actors (detached, named)."""
ACTOR_CLASS = "DirectReplica"
DEFAULT_PORT = 8100
DEFAULT_OWN_PORT = 9600

_NAME = re.compile(r"^direct-(\d+)-port-(\d+)-own-(\d+)$")


@dataclass(frozen=True, order=True)
class ReplicaName:
    """Replica `index` of a deployment on `port`, with its own port; the actor's name."""

    index: int
    port: int
    own_port: int

    def __str__(self) -> str:
        return f"direct-{self.index}-port-{self.port}-own-{self.own_port}"

    @classmethod
    def parse(cls, name: str) -> ReplicaName | None:
        """The name's parts; None for an actor of this namespace that is not a replica."""
        found = _NAME.match(name)
        if found is None:
            return None
        index, port, own = (int(part) for part in found.groups())
        return cls(index, port, own)


@dataclass(frozen=True)
class DirectSpec:
    """How many replicas, their CPUs and placement, ports, environment, drain."""

    replicas: int = 1
    cpus_per_replica: float = 1.0
    port: int = DEFAULT_PORT
    own_port_base: int = DEFAULT_OWN_PORT
    node_resource: str = NODE_RESOURCE
    drain_s: float = 30.0
    env: Mapping[str, str] = field(default_factory=dict)
    secret_names: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.replicas < 1:
            raise RayServeError(f"replicas must be at least 1, not {self.replicas}")
        if self.cpus_per_replica <= 0:
            raise RayServeError(f"cpus per replica must be positive, not {self.cpus_per_replica}")
        own = range(self.own_port_base, self.own_port_base + self.replicas)
        if self.port in own:
            raise RayServeError(
                f"--replica-port {self.port} is one of the replicas' own ports "
                f"({own.start}-{own.stop - 1}): choose another --own-port"
            )

    @property
    def workers(self) -> int:
        """Grading workers per replica: its whole CPUs, at least one."""
        return max(1, int(self.cpus_per_replica + 1e-9))

    def names(self) -> list[ReplicaName]:
        return [ReplicaName(i, self.port, self.own_port_base + i) for i in range(self.replicas)]

    def server_env(self, secrets: Mapping[str, str]) -> dict[str, str]:
        """Each replica's server's environment on top of its node's: settings and secrets."""
        return {**self.env, **{name: secrets[name] for name in self.secret_names}}

    def fingerprint(self, secrets: Mapping[str, str]) -> str:
        """What a running replica must match to be kept on a redeploy (secrets included)."""
        shown = {
            "cpus": self.cpus_per_replica,
            "resource": self.node_resource,
            "drain_s": self.drain_s,
            "env": sorted(self.server_env(secrets).items()),
        }
        return json.dumps(shown, sort_keys=True)

    def to_json(self) -> str:
        """The spec for the deploy job's command line: secrets by name, never by value."""
        data = asdict(self)
        data["env"] = dict(self.env)
        data["secret_names"] = list(self.secret_names)
        return json.dumps(data, sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> DirectSpec:
        data: dict[str, Any] = json.loads(text)
        data["secret_names"] = tuple(data.get("secret_names", ()))
        return cls(**data)


def direct_options() -> argparse.ArgumentParser:
    """The direct path's own options (`ray direct deploy`, `slime launch|submit --ray-direct`).

    `--replicas`, `--cpus-per-replica`, `--node-resource`, `--drain-s` and
    `--replica-env/--replica-secret-env` are the Serve path's
    (`spec.spec_options`), shared by both.
    """
    options = argparse.ArgumentParser(add_help=False)
    group = options.add_argument_group("the direct path (reward-service serve as Ray actors)")
    group.add_argument(
        "--replica-port",
        type=int,
        default=DEFAULT_PORT,
        help="port every replica listens on, on its node (shared by a node's replicas)",
    )
    group.add_argument(
        "--own-port",
        type=int,
        default=DEFAULT_OWN_PORT,
        help="replica i also listens on this + i, alone: its own /metrics and /readyz",
    )
    return options


def direct_from_args(args: argparse.Namespace) -> DirectSpec:
    """A `DirectSpec` from the shared replica options and `direct_options`."""
    return DirectSpec(
        replicas=args.replicas,
        cpus_per_replica=args.cpus_per_replica,
        port=args.replica_port,
        own_port_base=args.own_port,
        node_resource=args.node_resource,
        drain_s=args.drain_s,
        env=assignments(args.replica_env, "--replica-env", RayServeError),
        secret_names=tuple(args.replica_secret_env),
    )
