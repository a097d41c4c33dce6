"""`reward-service slime {url,preflight,launch,submit}`.

`register` adds the `slime` command to the main CLI's sub-parsers; each
sub-command stores its handler as `args.run`, which exits non-zero on failure.
Options left unset fall back to `LaunchConfig.from_env()` (`SLIME_REWARD_*`).
With a Ray address (`--ray-address`, `SLIME_REWARD_RAY_ADDRESS`) and no URL,
the URL is the direct path's on that cluster when its replicas run, else
the Serve application's; `launch` and `submit` can deploy either there
first, or insist it runs (`--ray-direct deploy|check`, `--ray-serve deploy|check`).
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from importlib import resources
from typing import Any

from reward_service.launcher.config import LaunchConfig
from reward_service.launcher.launch import (
    DEFAULT_TRAIN_COMMAND,
    DETAIL_REWARD_KEY,
    bypassed,
    exec_train,
    flag_value,
    slime_argv,
)
from reward_service.launcher.preflight import run_preflight
from reward_service.launcher.submit import DEFAULT_ENTRYPOINT, JobSpec, submit
from reward_service.launcher.urls import resolve_url, score_url
from reward_service.rayserve.cluster import Dashboard
from reward_service.rayserve.direct_cluster import deploy_direct, direct_status
from reward_service.rayserve.direct_spec import direct_from_args, direct_options
from reward_service.rayserve.spec import RayServeError, spec_from_args, spec_options
from reward_service.redaction import redact
from reward_service.subcommands import (
    ConfigError,
    Subparsers,
    assignments,
    guarded,
    ray_dashboard,
    secrets_from_env,
)


def _config(args: argparse.Namespace) -> LaunchConfig:
    overrides: dict[str, Any] = {
        name: getattr(args, name)
        for name in (
            "url",
            "ray_address",
            "service",
            "namespace",
            "port",
            "scorer",
            "detail",
            "wait_s",
        )
        if getattr(args, name, None) is not None
    }
    return dataclasses.replace(LaunchConfig.from_env(), **overrides)


def _command(args: argparse.Namespace) -> list[str]:
    # Not `args.command`: the main CLI keeps the sub-command's name there.
    command: list[str] = args.remainder
    return command[1:] if command[:1] == ["--"] else command


def _on_ray_direct(dashboard: Dashboard, mode: str | None, args: argparse.Namespace) -> str | None:
    """`--ray-direct deploy|check`, or without either path named, the direct path if it runs:
    its URL (`http://host:port`), else None. SLIME posts to one URL: with replicas on
    several nodes, the others get none of its requests, which is said."""
    if mode == "deploy":
        spec = direct_from_args(args)
        status = deploy_direct(dashboard, spec, secrets_from_env(spec.secret_names))
    else:
        status = direct_status(dashboard)
    if not status.serving:
        if mode == "check":
            raise RayServeError(
                f"no direct replica runs on Ray at {dashboard.address}\n"
                "  deploy them: reward-service ray direct deploy --address " + dashboard.address
            )
        return None
    others = status.endpoints()[1:]
    if others:
        print(
            f"slime: warning: SLIME posts to {status.endpoint} only; the replicas at "
            f"{', '.join(others)} get none of its requests (one node per URL; see docs/ray.md)",
            file=sys.stderr,
            flush=True,
        )
    return status.endpoint


def _on_ray(dashboard: Dashboard, args: argparse.Namespace) -> str:
    """`--ray-serve|--ray-direct deploy|check` on this cluster; the service's `http://host:port`.

    Without either (`url`, `preflight`) the direct path's replicas, if any run,
    else the Serve application, which must be deployed; the preflight then
    waits for it to be ready.
    """
    mode = getattr(args, "ray_serve", None)
    direct = getattr(args, "ray_direct", None)
    if mode and direct:
        raise ConfigError("--ray-serve and --ray-direct: choose one path")
    if direct or not mode:
        found = _on_ray_direct(dashboard, direct, args)
        if found is not None:
            return found
    if mode == "deploy":
        spec = spec_from_args(args)
        return dashboard.deploy(spec, secrets_from_env(spec.secret_names)).endpoint
    status = dashboard.status()
    if status is None or (mode == "check" and not status.serving):
        shown = status.describe() if status else "not deployed"
        raise RayServeError(
            f"the reward service is not running on Ray at {dashboard.address}: {shown}\n"
            "  deploy it: reward-service ray deploy --address " + dashboard.address
        )
    return status.endpoint


def _resolved(config: LaunchConfig, args: argparse.Namespace) -> str:
    """The URL SLIME should post to; with a Ray address and no URL, the Serve application's.

    `--ray-serve` deploys or checks the application even beside an explicit URL.
    """
    ray_serve = getattr(args, "ray_serve", None) or getattr(args, "ray_direct", None)
    if ray_serve and not config.ray_address:
        raise ConfigError(
            "--ray-serve/--ray-direct need the cluster: --ray-address or SLIME_REWARD_RAY_ADDRESS"
        )
    if config.ray_address and (ray_serve or not config.url):
        with Dashboard(config.ray_address) as dashboard:
            base = _on_ray(dashboard, args)
        if not config.url:
            config = dataclasses.replace(config, url=score_url(base, config.scorer))
    return resolve_url(config)


def _url(args: argparse.Namespace) -> int:
    print(_resolved(_config(args), args))
    return 0


def _preflight(args: argparse.Namespace) -> int:
    config = _config(args)
    reward_key = DETAIL_REWARD_KEY if config.detail else None
    run_preflight(
        _resolved(config, args),
        reward_key=reward_key,
        wait_s=config.wait_s,
        check_grading=not args.skip_grading,
    )
    return 0


def _launch(args: argparse.Namespace) -> int:
    config = _config(args)
    command = _command(args)
    url = flag_value(command, "--rm-url") or _resolved(config, args)
    reward_key = flag_value(command, "--reward-key") or (
        DETAIL_REWARD_KEY if config.detail else None
    )
    if config.preflight and not args.skip_preflight:
        run_preflight(
            url, reward_key=reward_key, wait_s=config.wait_s, check_grading=not args.skip_grading
        )
    argv = slime_argv(command, url, reward_key)
    warning = bypassed(argv)
    if warning:
        print(f"launch: warning: {warning}", file=sys.stderr, flush=True)
    added = argv[len(command or DEFAULT_TRAIN_COMMAND) :]
    shown = " ".join(redact(arg) if arg == url else arg for arg in added) or "nothing"
    print(
        f"launch: exec {argv[0]} with {len(argv) - 1} arguments; added: {shown}",
        file=sys.stderr,
        flush=True,
    )
    exec_train(argv)


def _submit(args: argparse.Namespace) -> int:
    env = assignments(args.env, "--env")
    spec = JobSpec(
        entrypoint=_command(args) or DEFAULT_ENTRYPOINT,
        working_dir=args.working_dir,
        env=env,
        secret_names=tuple(args.secret_env),
        submission_id=args.submission_id,
    )
    mode = args.ray_serve or args.ray_direct
    if mode and not (args.dry_run and mode == "deploy"):
        with Dashboard(ray_dashboard(args.address)) as dashboard:
            base = _on_ray(dashboard, args)
        if "SLIME_REWARD_URL" not in env:
            env["SLIME_REWARD_URL"] = score_url(base, env.get("SLIME_REWARD_SCORER"))
            spec = dataclasses.replace(spec, env=env)
    if args.dry_run:
        print(spec.describe())
        return 0
    submit(spec, secrets_from_env(spec.secret_names), address=args.address, wait=args.wait)
    return 0


def _script(args: argparse.Namespace) -> int:
    sys.stdout.write(launcher_script())
    return 0


def launcher_script() -> str:
    """The bash launcher for `ray job submit -- bash scripts/slime_launcher.sh ...`."""
    return resources.files("reward_service.launcher").joinpath("slime_launcher.sh").read_text()


def _location_options() -> argparse.ArgumentParser:
    options = argparse.ArgumentParser(add_help=False)
    group = options.add_argument_group(
        "where the reward service is (default: SLIME_REWARD_*; its API token only from "
        "SLIME_REWARD_TOKEN, never a flag, which ps would show)"
    )
    group.add_argument("--url", help="full scoring URL; overrides the options below")
    group.add_argument(
        "--ray-address",
        help="Ray dashboard (http://<head>:8265) whose Serve application is the service "
        "(SLIME_REWARD_RAY_ADDRESS); overrides the four options below",
    )
    group.add_argument("--service", help="Kubernetes Service name (slime-reward)")
    group.add_argument("--namespace", help="its namespace (reward-service)")
    group.add_argument("--port", type=int, help="its port (8000)")
    group.add_argument("--scorer", help="scorer name: posts go to /score/<scorer>")
    group.add_argument(
        "--detail",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="ask for the detail object (?detail=1) and read it with --reward-key reward",
    )
    return options


def _preflight_options() -> argparse.ArgumentParser:
    options = argparse.ArgumentParser(add_help=False)
    options.add_argument(
        "--wait-s", type=float, help="how long to wait for /readyz (SLIME_REWARD_WAIT_S, 600)"
    )
    options.add_argument(
        "--skip-grading",
        action="store_true",
        help="only wait for /readyz; for scorers that do not grade math answers",
    )
    return options


def _ray_serve_option(parser: argparse.ArgumentParser, address: str) -> None:
    parser.add_argument(
        "--ray-serve",
        choices=("deploy", "check"),
        help=f"first deploy the reward service on the cluster at {address} (with the options "
        "below), or insist it runs there; the job then posts to its Serve endpoint",
    )
    parser.add_argument(
        "--ray-direct",
        choices=("deploy", "check"),
        help="the same for the direct path (`ray direct`): the job posts to a replica node's "
        "own `reward-service serve` port, no proxy",
    )


def register(subparsers: Subparsers) -> None:
    """Add `slime` and its sub-commands to the main CLI."""
    slime = subparsers.add_parser("slime", help="run SLIME (remote_rm) against this service")
    commands = slime.add_subparsers(dest="slime_command", required=True)
    location, preflight = _location_options(), _preflight_options()
    serve, direct = spec_options(), direct_options()

    url = commands.add_parser(
        "url", parents=[location], help="print the URL SLIME should post to (--rm-url)"
    )
    url.set_defaults(run=guarded(_url, "slime"))

    check = commands.add_parser(
        "preflight",
        parents=[location, preflight],
        help="wait for the service, then check it grades a right and a wrong answer",
    )
    check.set_defaults(run=guarded(_preflight, "slime"))

    launch = commands.add_parser(
        "launch",
        parents=[location, preflight, serve, direct],
        help="preflight, then exec the train command with --rm-type/--rm-url added",
        description="Everything after -- is the train command, passed on untouched "
        "(default: python3 train.py). Skip the preflight with --skip-preflight or "
        "SLIME_REWARD_PREFLIGHT=0.",
    )
    launch.add_argument("--skip-preflight", action="store_true", help="exec without checking")
    _ray_serve_option(launch, "--ray-address")
    launch.add_argument(
        "remainder", nargs=argparse.REMAINDER, metavar="command", help="-- train command and args"
    )
    launch.set_defaults(run=guarded(_launch, "slime"))

    job = commands.add_parser(
        "submit",
        parents=[serve, direct],
        help="submit the SLIME job to Ray, argv intact",
        description="Everything after -- is the job's entrypoint, as argv "
        f"(default: {' '.join(DEFAULT_ENTRYPOINT)}).",
    )
    job.add_argument("--address", help="Ray dashboard address (default: $RAY_ADDRESS)")
    job.add_argument("--working-dir", help="local directory uploaded as the job's working dir")
    job.add_argument("--env", action="append", default=[], metavar="NAME=VALUE", help="job env var")
    job.add_argument(
        "--secret-env",
        action="append",
        default=[],
        metavar="NAME",
        help="forward this shell's $NAME to the job; the value is never printed",
    )
    job.add_argument("--submission-id", help="job id to use (default: Ray picks one)")
    job.add_argument("--wait", action="store_true", help="follow the logs; fail if the job fails")
    job.add_argument(
        "--dry-run",
        action="store_true",
        help="print the job, do not submit (--ray-serve check still runs, deploy does not)",
    )
    _ray_serve_option(job, "--address")
    job.add_argument(
        "remainder", nargs=argparse.REMAINDER, metavar="command", help="-- entrypoint argv"
    )
    job.set_defaults(run=guarded(_submit, "slime"))

    script = commands.add_parser(
        "script",
        help="print the bash launcher for ray job submit (> scripts/slime_launcher.sh)",
        description="Write it into the training repository: "
        "reward-service slime script > scripts/slime_launcher.sh",
    )
    script.set_defaults(run=guarded(_script, "slime"))
