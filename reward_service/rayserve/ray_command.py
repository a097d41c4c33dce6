"""`reward-service ray {deploy,status,delete,config,bench}` and `ray direct {deploy,status,delete}`.

The first set is the Serve application; `ray direct` the direct path
(`reward-service serve` processes held by Ray actors, `direct_cluster`).
Every command talks to the cluster's dashboard (`--address`, default
`$RAY_ADDRESS`); `config` prints Serve's YAML for `serve deploy` instead.
"""

from __future__ import annotations

import argparse
import sys

from reward_service.rayserve.cluster import Dashboard
from reward_service.rayserve.direct_cluster import delete_direct, deploy_direct, direct_status
from reward_service.rayserve.direct_spec import direct_from_args, direct_options
from reward_service.rayserve.spec import replica_options, spec_from_args, spec_options
from reward_service.subcommands import Subparsers, guarded, ray_dashboard, secrets_from_env


def _address_options() -> argparse.ArgumentParser:
    options = argparse.ArgumentParser(add_help=False)
    options.add_argument(
        "--address", help="the Ray dashboard, http://<head>:8265 (default: $RAY_ADDRESS)"
    )
    return options


def _deploy(args: argparse.Namespace) -> int:
    spec = spec_from_args(args)
    if args.dry_run:
        sys.stdout.write(spec.yaml())
        return 0
    with Dashboard(ray_dashboard(args.address)) as dashboard:
        status = dashboard.deploy(spec, secrets_from_env(spec.secret_names), wait_s=args.wait_s)
    print(status.describe())
    return 0


def _status(args: argparse.Namespace) -> int:
    with Dashboard(ray_dashboard(args.address)) as dashboard:
        status = dashboard.status()
    if status is None:
        print("application reward-service: not deployed")
        return 1
    print(status.describe())
    return 0 if status.serving else 1


def _delete(args: argparse.Namespace) -> int:
    with Dashboard(ray_dashboard(args.address)) as dashboard:
        removed = dashboard.delete()
    print("deleted application reward-service" if removed else "reward-service was not deployed")
    return 0


def _config(args: argparse.Namespace) -> int:
    sys.stdout.write(spec_from_args(args).yaml())
    return 0


def _bench(args: argparse.Namespace) -> int:
    from reward_service.rayserve.throughput import compare

    compare(ray_dashboard(args.address), answers=args.answers, seed=args.seed, rounds=args.rounds)
    return 0


def _direct_deploy(args: argparse.Namespace) -> int:
    spec = direct_from_args(args)
    with Dashboard(ray_dashboard(args.address)) as dashboard:
        status = deploy_direct(
            dashboard, spec, secrets_from_env(spec.secret_names), wait_s=args.wait_s
        )
    print(status.describe())
    return 0


def _direct_status(args: argparse.Namespace) -> int:
    with Dashboard(ray_dashboard(args.address)) as dashboard:
        status = direct_status(dashboard)
    print(status.describe())
    return 0 if status.serving else 1


def _direct_delete(args: argparse.Namespace) -> int:
    with Dashboard(ray_dashboard(args.address)) as dashboard:
        delete_direct(dashboard, args.replica_port, args.drain_s)
    return 0


def _register_direct(commands: Subparsers, address: argparse.ArgumentParser) -> None:
    direct = commands.add_parser(
        "direct",
        help="the direct path: `reward-service serve` as Ray actors on CPU nodes, no Serve proxy",
        description="Each replica is a detached Ray actor holding one `reward-service serve` "
        "process on its node; a node's replicas share one port. See docs/ray.md.",
    )
    verbs = direct.add_subparsers(dest="direct_command", required=True)
    deploy = verbs.add_parser(
        "deploy",
        parents=[address, replica_options(), direct_options()],
        help="start or update the replicas on CPU nodes, wait until they are warm",
    )
    deploy.add_argument("--wait-s", type=float, default=600.0, help="how long to wait for them")
    deploy.set_defaults(run=guarded(_direct_deploy, "ray direct"))
    status = verbs.add_parser(
        "status", parents=[address], help="the replicas, their nodes and URLs (1: none alive)"
    )
    status.set_defaults(run=guarded(_direct_status, "ray direct"))
    delete = verbs.add_parser(
        "delete", parents=[address], help="drain and remove the replicas (default: every port)"
    )
    delete.add_argument("--replica-port", type=int, help="only the replicas on this port")
    delete.add_argument("--drain-s", type=float, default=30.0, help="drain allowed per replica")
    delete.set_defaults(run=guarded(_direct_delete, "ray direct"))


def register(subparsers: Subparsers) -> None:
    """Add `ray` and its sub-commands to the main CLI."""
    ray = subparsers.add_parser("ray", help="run the service on a Ray cluster (Ray Serve)")
    commands = ray.add_subparsers(dest="ray_command", required=True)
    address, spec = _address_options(), spec_options()

    deploy = commands.add_parser(
        "deploy",
        parents=[address, spec],
        help="deploy or update the application on CPU nodes, wait until it runs",
        description="Replicas land only on nodes that declare the node resource (reward_cpu) "
        "and no GPU; with none, deploy fails at once. Run it again to scale.",
    )
    deploy.add_argument("--wait-s", type=float, default=600.0, help="how long to wait for it")
    deploy.add_argument("--dry-run", action="store_true", help="print the Serve config, no deploy")
    deploy.set_defaults(run=guarded(_deploy, "ray"))

    status = commands.add_parser(
        "status", parents=[address], help="the application, its replicas and endpoint (1: not up)"
    )
    status.set_defaults(run=guarded(_status, "ray"))

    delete = commands.add_parser(
        "delete", parents=[address], help="remove the application (other Serve apps stay)"
    )
    delete.set_defaults(run=guarded(_delete, "ray"))

    config = commands.add_parser(
        "config", parents=[spec], help="print the Serve config YAML, for `serve deploy FILE`"
    )
    config.set_defaults(run=guarded(_config, "ray"))

    _register_direct(commands, address)

    bench = commands.add_parser(
        "bench",
        parents=[address],
        help="throughput and CPU per answer through Serve and the direct path against plain "
        "`reward-service serve`, same cores",
        description="Needs the Serve application and/or the direct path deployed on a cluster "
        "on this machine (alike: the same replicas x CPUs): starts `reward-service serve` with "
        "as many workers as the replicas hold, and drives every side with a SLIME-like "
        "client, taking turns, in one run. With REWARD_API_TOKEN set (the replicas' token), "
        "every side is asked with it.",
    )
    bench.add_argument("--answers", type=int, default=2000, help="answers per side and round")
    bench.add_argument("--rounds", type=int, default=2, help="rounds, every side once in each")
    bench.add_argument("--seed", type=int, default=20261201)
    bench.set_defaults(run=guarded(_bench, "ray"))
