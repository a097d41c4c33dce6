"""The direct path's deploy and delete, run as a Ray job on the cluster (imports Ray).

`reward-service ray direct deploy|delete` submits
`python -m reward_service.rayserve.direct_driver deploy SPEC_JSON` (or
`delete PORT|all`) through the dashboard's job API, so the machine running the
command needs no Ray; the job's environment carries the secrets by name.

Replicas are detached, named actors in the `reward-service` namespace: they
outlive this job, and Ray restarts them when they die (`max_restarts=-1`).
A redeploy keeps the replicas whose name and fingerprint match, replaces the
others one at a time (drained, then started again and warm before the next;
the other replicas on the port serve meanwhile), and drains and removes
those beyond `--replicas` once the rest are ready. Prints one `replica ...` line
per replica it leaves running.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from typing import Any

import ray

from reward_service.rayserve.direct_replica import DirectReplica
from reward_service.rayserve.direct_spec import ACTOR_CLASS, NAMESPACE, DirectSpec, ReplicaName

_REMOTE: Any = ray.remote(DirectReplica)


def _say(line: str) -> None:
    print(f"direct: {line}", flush=True)


def _ours() -> dict[ReplicaName, Any]:
    """Every replica actor of the namespace, alive or restarting, by name."""
    found = {}
    for entry in ray.util.list_named_actors(all_namespaces=True):
        if entry["namespace"] != NAMESPACE:
            continue
        name = ReplicaName.parse(entry["name"])
        if name is not None:
            found[name] = ray.get_actor(entry["name"], namespace=NAMESPACE)
    return found


def _remove(replicas: dict[ReplicaName, Any], timeout_s: float) -> None:
    """Drain the replicas' servers (SIGTERM, all at once), then end their actors for good."""
    if not replicas:
        return
    stops = {name: actor.stop.remote() for name, actor in replicas.items()}
    _, late = ray.wait(list(stops.values()), num_returns=len(stops), timeout=timeout_s)
    for name, actor in sorted(replicas.items()):
        if stops[name] in late:
            _say(f"{name}: drain did not finish in {timeout_s:g} s; removing it anyway")
        ray.kill(actor, no_restart=True)
    deadline = time.monotonic() + 60
    for name in sorted(replicas):
        while time.monotonic() < deadline:  # the name is free once Ray has the actor dead
            try:
                ray.get_actor(str(name), namespace=NAMESPACE)
            except ValueError:
                break
            time.sleep(0.2)
        _say(f"removed {name}")


def _create(spec: DirectSpec, name: ReplicaName, secrets: dict[str, str], wait_s: float) -> Any:
    options: dict[str, Any] = {
        "name": str(name),
        "namespace": NAMESPACE,
        "lifetime": "detached",
        "max_restarts": -1,
        "num_cpus": spec.cpus_per_replica,
        "num_gpus": 0,
        "resources": {spec.node_resource: spec.cpus_per_replica},
    }
    return _REMOTE.options(**options).remote(
        name.port,
        name.own_port,
        spec.workers,
        spec.server_env(secrets),
        spec.drain_s,
        spec.fingerprint(secrets),
        ready_timeout_s=wait_s,
    )


def deploy(spec: DirectSpec, wait_s: float) -> list[dict[str, Any]]:
    """Bring the replicas to `spec`; every replica's info once all are ready."""
    secrets = {name: os.environ[name] for name in spec.secret_names}
    wanted = set(spec.names())
    fingerprint = spec.fingerprint(secrets)
    existing = _ours()
    kept: dict[ReplicaName, Any] = {}
    for name, actor in existing.items():
        if name in wanted:
            try:
                info = ray.get(actor.info.remote(), timeout=wait_s)
            except (ray.exceptions.RayError, TimeoutError):
                info = {}
            if info.get("fingerprint") == fingerprint:
                kept[name] = actor
    stale = {name: actor for name, actor in existing.items() if name in wanted and name not in kept}
    for name, actor in sorted(stale.items()):
        _say(f"replacing {name}: its settings differ")
        _remove({name: actor}, spec.drain_s + 30)
        kept[name] = _create(spec, name, secrets, wait_s)
        ray.get(kept[name].info.remote(), timeout=wait_s)
    new = {name: _create(spec, name, secrets, wait_s) for name in sorted(wanted - set(kept))}
    if new:
        _say(f"starting {len(new)} replica(s); each is ready once its workers are warm")
    kept.update(new)
    try:
        infos = ray.get([kept[name].info.remote() for name in sorted(kept)], timeout=wait_s)
    except ray.exceptions.GetTimeoutError:
        raise SystemExit(
            f"direct: replicas not ready after {wait_s:g} s: not enough free CPUs and "
            f"{spec.node_resource!r} on the CPU nodes? (ray status shows what is pending)"
        ) from None
    _remove({n: a for n, a in existing.items() if n not in wanted}, spec.drain_s + 30)
    return infos


def delete(port: int | None, drain_s: float) -> int:
    """Drain and remove the replicas on `port` (None: all); how many there were."""
    found = {n: a for n, a in _ours().items() if port is None or n.port == port}
    _remove(found, drain_s + 30)
    return len(found)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="direct_driver")
    commands = parser.add_subparsers(dest="command", required=True)
    up = commands.add_parser("deploy")
    up.add_argument("spec")
    up.add_argument("--wait-s", type=float, default=600.0)
    down = commands.add_parser("delete")
    down.add_argument("--port", type=int)
    down.add_argument("--drain-s", type=float, default=30.0)
    args = parser.parse_args(argv)
    ray.init(namespace=NAMESPACE, log_to_driver=False)
    if args.command == "deploy":
        spec = DirectSpec.from_json(args.spec)
        for info in deploy(spec, args.wait_s):
            _say(f"replica {info['port']}/{info['own_port']} server pid {info['pid']}")
        _say(f"{spec.replicas} {ACTOR_CLASS} replica(s) ready on port {spec.port}")
    else:
        _say(f"deleted {delete(args.port, args.drain_s)} replica(s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
