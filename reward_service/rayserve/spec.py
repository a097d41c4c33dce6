"""`ServeSpec`: what to run on the cluster, and the Serve config that runs it.

The config is Serve's declarative schema (`serve deploy` reads the same as
YAML): one application whose ingress is `reward_service.rayserve.deployment:app`.
Each replica asks for `cpus_per_replica` CPUs and as many units of the node
resource (`reward_cpu`), which only CPU nodes declare on `ray start`: a node
without it can never hold a replica, whatever it has free.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import yaml

from reward_service.errors import RewardServiceError
from reward_service.subcommands import assignments

APP_NAME = "reward-service"
DEPLOYMENT_NAME = "RewardService"
IMPORT_PATH = "reward_service.rayserve.deployment:app"
NODE_RESOURCE = "reward_cpu"


class RayServeError(RewardServiceError):
    """The dashboard refused a request, or the application did not come up."""


@dataclass(frozen=True)
class ServeSpec:
    """The Serve application: replicas, their CPUs and placement, autoscaling, HTTP."""

    replicas: int = 1
    cpus_per_replica: float = 1.0
    max_replicas: int | None = None
    """Above `replicas`: autoscale between `replicas` and this."""
    target_ongoing_requests: float = 32.0
    upscale_delay_s: float = 30.0
    downscale_delay_s: float = 300.0
    look_back_period_s: float = 30.0
    max_ongoing_requests: int = 1024
    """Per replica, what Serve lets in before queueing at the proxy; the engine bounds the rest."""
    host: str = "0.0.0.0"
    port: int = 8000
    node_resource: str = NODE_RESOURCE
    drain_s: float = 30.0
    metrics_port: int | None = 9500
    serve_access_log: bool = False
    """Serve's own line per request in every proxy and replica; the service samples its own."""
    """Each replica serves its own /metrics on the first free port from this, on its node."""
    health_check_period_s: float = 10.0
    health_check_timeout_s: float = 30.0
    env: Mapping[str, str] = field(default_factory=dict)
    secret_names: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.replicas < 1:
            raise RayServeError(f"replicas must be at least 1, not {self.replicas}")
        if self.cpus_per_replica <= 0:
            raise RayServeError(f"cpus per replica must be positive, not {self.cpus_per_replica}")
        if self.max_replicas is not None and self.max_replicas < self.replicas:
            raise RayServeError(
                f"max replicas ({self.max_replicas}) is below replicas ({self.replicas})"
            )

    @property
    def autoscaling(self) -> bool:
        return self.max_replicas is not None and self.max_replicas > self.replicas

    def actor_options(self, secrets: Mapping[str, str]) -> dict[str, Any]:
        """The replica's Ray actor options: CPUs, the CPU-node resource, its environment."""
        env_vars = {**self.env, **{name: secrets[name] for name in self.secret_names}}
        options: dict[str, Any] = {
            "num_cpus": self.cpus_per_replica,
            "num_gpus": 0,
            "resources": {self.node_resource: self.cpus_per_replica},
        }
        if env_vars:
            options["runtime_env"] = {"env_vars": env_vars}
        return options

    def deployment(self, secrets: Mapping[str, str]) -> dict[str, Any]:
        """The deployment entry of the application."""
        entry: dict[str, Any] = {
            "name": DEPLOYMENT_NAME,
            "max_ongoing_requests": self.max_ongoing_requests,
            "health_check_period_s": self.health_check_period_s,
            "health_check_timeout_s": self.health_check_timeout_s,
            "graceful_shutdown_wait_loop_s": 0.5,
            "graceful_shutdown_timeout_s": self.drain_s,
            "ray_actor_options": self.actor_options(secrets),
        }
        if self.metrics_port:
            entry["user_config"] = {"metrics_port": self.metrics_port}
        if self.autoscaling:
            entry["autoscaling_config"] = {
                "min_replicas": self.replicas,
                "initial_replicas": self.replicas,
                "max_replicas": self.max_replicas,
                "target_ongoing_requests": self.target_ongoing_requests,
                "upscale_delay_s": self.upscale_delay_s,
                "downscale_delay_s": self.downscale_delay_s,
                "look_back_period_s": self.look_back_period_s,
            }
        else:
            entry["num_replicas"] = self.replicas
        return entry

    def application(self, secrets: Mapping[str, str]) -> dict[str, Any]:
        """Our application in Serve's config: the ingress at `/`, its one deployment."""
        return {
            "name": APP_NAME,
            "route_prefix": "/",
            "import_path": IMPORT_PATH,
            "logging_config": {"enable_access_log": self.serve_access_log},
            "deployments": [self.deployment(secrets)],
        }

    def config(
        self, secrets: Mapping[str, str], others: tuple[dict[str, Any], ...] = ()
    ) -> dict[str, Any]:
        """Serve's whole declarative config: HTTP options, our application, then `others`."""
        return {
            "proxy_location": "EveryNode",
            "http_options": {"host": self.host, "port": self.port},
            "applications": [self.application(secrets), *others],
        }

    def yaml(self) -> str:
        """The config as `serve deploy` reads it, each secret shown only by its variable's name."""
        masked = {name: f"<secret from ${name}>" for name in self.secret_names}
        return yaml.safe_dump(self.config(masked), sort_keys=False)


def _replica_options(group: argparse._ArgumentGroup) -> None:
    """Options both paths share: the Serve application's and the direct path's replicas."""
    group.add_argument(
        "--replicas", type=int, default=1, help="replicas (minimum when autoscaling)"
    )
    group.add_argument(
        "--cpus-per-replica", type=float, default=1.0, help="CPUs per replica; workers = whole CPUs"
    )
    group.add_argument(
        "--drain-s",
        type=float,
        default=30.0,
        help="a removed replica answers what it took for this long",
    )
    group.add_argument(
        "--node-resource",
        default=NODE_RESOURCE,
        help=f"custom resource only CPU nodes declare on ray start ({NODE_RESOURCE})",
    )
    group.add_argument(
        "--replica-env",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="environment of each replica, e.g. REWARD_DEADLINE_S=20",
    )
    group.add_argument(
        "--replica-secret-env",
        action="append",
        default=[],
        metavar="NAME",
        help="copy this shell's $NAME into each replica (e.g. REWARD_API_TOKEN), never printed",
    )


def replica_options() -> argparse.ArgumentParser:
    """The replica options alone: for `ray direct deploy`."""
    options = argparse.ArgumentParser(add_help=False)
    _replica_options(options.add_argument_group("replicas"))
    return options


def spec_options() -> argparse.ArgumentParser:
    """The options of a `ServeSpec`: for `ray deploy|config` and `slime launch|submit`."""
    options = argparse.ArgumentParser(add_help=False)
    group = options.add_argument_group("the Ray Serve application (and the direct path's replicas)")
    _replica_options(group)
    group.add_argument("--max-replicas", type=int, help="autoscale from --replicas up to this")
    group.add_argument(
        "--target-ongoing-requests", type=float, default=32.0, help="autoscaling: per replica"
    )
    group.add_argument("--upscale-delay-s", type=float, default=30.0, help="autoscaling")
    group.add_argument("--downscale-delay-s", type=float, default=300.0, help="autoscaling")
    group.add_argument(
        "--look-back-period-s", type=float, default=30.0, help="autoscaling: load averaged over"
    )
    group.add_argument(
        "--metrics-port",
        type=int,
        default=9500,
        help="each replica's own /metrics: first free port from this on its node (0: off)",
    )
    group.add_argument(
        "--serve-access-log",
        action="store_true",
        help="Serve's own log line per request too (off: it costs CPU per request)",
    )
    group.add_argument("--http-host", default="0.0.0.0", help="address Serve's proxies listen on")
    group.add_argument("--http-port", type=int, default=8000, help="port Serve's proxies listen on")
    return options


def spec_from_args(args: argparse.Namespace) -> ServeSpec:
    env = assignments(args.replica_env, "--replica-env", RayServeError)
    return ServeSpec(
        replicas=args.replicas,
        cpus_per_replica=args.cpus_per_replica,
        max_replicas=args.max_replicas,
        target_ongoing_requests=args.target_ongoing_requests,
        upscale_delay_s=args.upscale_delay_s,
        downscale_delay_s=args.downscale_delay_s,
        look_back_period_s=args.look_back_period_s,
        drain_s=args.drain_s,
        metrics_port=args.metrics_port or None,
        serve_access_log=args.serve_access_log,
        host=args.http_host,
        port=args.http_port,
        node_resource=args.node_resource,
        env=env,
        secret_names=tuple(args.replica_secret_env),
    )
