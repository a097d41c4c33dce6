"""`reward-service slime {url,preflight,launch,submit}`.

`register` adds the `slime` command to the main CLI's sub-parsers; each
sub-command stores its handler as `args.run`, which exits non-zero on failure.
Options left unset fall back to `LaunchConfig.from_env()` (`SLIME_REWARD_*`).
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from collections.abc import Callable
from importlib import resources
from typing import Any

from reward_service.errors import RewardServiceError
from reward_service.launcher.config import ConfigError, LaunchConfig, secrets_from_env
from reward_service.launcher.launch import (
    DEFAULT_TRAIN_COMMAND,
    DETAIL_REWARD_KEY,
    exec_train,
    flag_value,
    slime_argv,
)
from reward_service.launcher.preflight import run_preflight
from reward_service.launcher.submit import DEFAULT_ENTRYPOINT, JobSpec, submit
from reward_service.launcher.urls import resolve_url
from reward_service.redaction import redact


def _config(args: argparse.Namespace) -> LaunchConfig:
    overrides: dict[str, Any] = {
        name: getattr(args, name)
        for name in ("url", "service", "namespace", "port", "scorer", "detail", "wait_s")
        if getattr(args, name, None) is not None
    }
    return dataclasses.replace(LaunchConfig.from_env(), **overrides)


def _command(args: argparse.Namespace) -> list[str]:
    # Not `args.command`: the main CLI keeps the sub-command's name there.
    command: list[str] = args.remainder
    return command[1:] if command[:1] == ["--"] else command


def _fail(message: str) -> int:
    print(f"reward-service slime: error: {message}", file=sys.stderr, flush=True)
    return 1


def _url(args: argparse.Namespace) -> int:
    print(resolve_url(_config(args)))
    return 0


def _preflight(args: argparse.Namespace) -> int:
    config = _config(args)
    reward_key = DETAIL_REWARD_KEY if config.detail else None
    run_preflight(
        resolve_url(config),
        reward_key=reward_key,
        wait_s=config.wait_s,
        check_grading=not args.skip_grading,
    )
    return 0


def _launch(args: argparse.Namespace) -> int:
    config = _config(args)
    command = _command(args)
    url = flag_value(command, "--rm-url") or resolve_url(config)
    reward_key = flag_value(command, "--reward-key") or (
        DETAIL_REWARD_KEY if config.detail else None
    )
    if config.preflight and not args.skip_preflight:
        run_preflight(
            url, reward_key=reward_key, wait_s=config.wait_s, check_grading=not args.skip_grading
        )
    argv = slime_argv(command, url, reward_key)
    added = argv[len(command or DEFAULT_TRAIN_COMMAND) :]
    shown = " ".join(redact(arg) if arg == url else arg for arg in added) or "nothing"
    print(
        f"launch: exec {argv[0]} with {len(argv) - 1} arguments; added: {shown}",
        file=sys.stderr,
        flush=True,
    )
    exec_train(argv)


def _submit(args: argparse.Namespace) -> int:
    env: dict[str, str] = {}
    for pair in args.env:
        name, sep, value = pair.partition("=")
        if not sep or not name:
            raise ConfigError(f"--env {pair!r}: expected NAME=VALUE")
        env[name] = value
    spec = JobSpec(
        entrypoint=_command(args) or DEFAULT_ENTRYPOINT,
        working_dir=args.working_dir,
        env=env,
        secret_names=tuple(args.secret_env),
        submission_id=args.submission_id,
    )
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


def _guarded(handler: Callable[[argparse.Namespace], int]) -> Callable[[argparse.Namespace], None]:
    def run(args: argparse.Namespace) -> None:
        try:
            code = handler(args)
        except RewardServiceError as exc:
            code = _fail(str(exc))
        if code:
            sys.exit(code)

    return run


def _location_options() -> argparse.ArgumentParser:
    options = argparse.ArgumentParser(add_help=False)
    group = options.add_argument_group(
        "where the reward service is (default: SLIME_REWARD_*; its API token only from "
        "SLIME_REWARD_TOKEN, never a flag, which ps would show)"
    )
    group.add_argument("--url", help="full scoring URL; overrides the four options below")
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


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add `slime` and its sub-commands to the main CLI."""
    slime = subparsers.add_parser("slime", help="run SLIME (remote_rm) against this service")
    commands = slime.add_subparsers(dest="slime_command", required=True)
    location, preflight = _location_options(), _preflight_options()

    url = commands.add_parser(
        "url", parents=[location], help="print the URL SLIME should post to (--rm-url)"
    )
    url.set_defaults(run=_guarded(_url))

    check = commands.add_parser(
        "preflight",
        parents=[location, preflight],
        help="wait for the service, then check it grades a right and a wrong answer",
    )
    check.set_defaults(run=_guarded(_preflight))

    launch = commands.add_parser(
        "launch",
        parents=[location, preflight],
        help="preflight, then exec the train command with --rm-type/--rm-url added",
        description="Everything after -- is the train command, passed on untouched "
        "(default: python3 train.py). Skip the preflight with --skip-preflight or "
        "SLIME_REWARD_PREFLIGHT=0.",
    )
    launch.add_argument("--skip-preflight", action="store_true", help="exec without checking")
    launch.add_argument(
        "remainder", nargs=argparse.REMAINDER, metavar="command", help="-- train command and args"
    )
    launch.set_defaults(run=_guarded(_launch))

    job = commands.add_parser(
        "submit",
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
    job.add_argument("--dry-run", action="store_true", help="print the job, do not submit")
    job.add_argument(
        "remainder", nargs=argparse.REMAINDER, metavar="command", help="-- entrypoint argv"
    )
    job.set_defaults(run=_guarded(_submit))

    script = commands.add_parser(
        "script",
        help="print the bash launcher for ray job submit (> scripts/slime_launcher.sh)",
        description="Write it into the training repository: "
        "reward-service slime script > scripts/slime_launcher.sh",
    )
    script.set_defaults(run=_guarded(_script))
