"""The `reward-service` command: serve, score one answer by hand, benchmark, slime, ray.

`serve` and `score` are here; `bench`, `slime` and `ray` register themselves
(`bench/bench_command.py`, `launcher/slime_command.py`, `rayserve/ray_command.py`), and every
command fails the same way (`reward_service.subcommands.guarded`). All of them
are always there: a missing dependency fails the command line loudly, at once.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import sys
from collections.abc import Sequence
from typing import Any, Literal, get_args, get_origin

from reward_service.errors import InvalidSetting
from reward_service.settings import Settings
from reward_service.subcommands import guarded

_RUN_CHILDREN = frozenset({"serve", "score", "bench"})
"""Commands that start processes (workers, the forkserver, a server) and must outlive them."""


def _settings_help() -> str:
    lines = ["settings (environment variables; flags above override them):"]
    for name, field in Settings.model_fields.items():
        if name == "workers":
            default: object = "CPUs available"
        elif name == "waiting_workers":
            default = "as many as workers"
        elif field.default_factory is not None:
            default = field.default_factory()  # type: ignore[call-arg]
        else:
            default = field.default
        accepted = get_args(field.annotation) if get_origin(field.annotation) is Literal else ()
        values = f" One of: {', '.join(map(str, accepted))}." if accepted else ""
        lines.append(
            f"  REWARD_{name.upper():<28} {field.description or ''}{values} [default: {default}]"
        )
    return "\n".join(lines)


def _settings(overrides: dict[str, Any]) -> Settings:
    try:
        return Settings.read(**{k: v for k, v in overrides.items() if v is not None})
    except InvalidSetting as exc:
        sys.exit(f"reward-service: {exc}")


def _serve(args: argparse.Namespace) -> int:
    from reward_service import logs
    from reward_service.server.serving import serve

    settings = _settings({"host": args.host, "port": args.port, "workers": args.workers})
    logs.configure(settings.log_level)
    print(
        f"reward-service: starting {settings.workers} grading workers on "
        f"http://{settings.host}:{settings.port} (default scorer {settings.default_scorer})",
        file=sys.stderr,
    )
    try:
        serve(settings, reuse_port=args.reuse_port, own_port=args.own_port)
    except OSError as exc:
        sys.exit(
            f"reward-service serve: error: cannot listen on {settings.host}:{settings.port}: {exc}"
        )
    return 0


def _parse_label(text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


async def _score_once(args: argparse.Namespace) -> dict[str, Any]:
    from reward_service.contracts.slime import sample_from_json
    from reward_service.grading.engine import ScoringEngine

    settings = _settings({"workers": 1})
    response = args.response if args.response is not None else sys.stdin.read()
    body = {"prompt": args.prompt, "response": response, "label": _parse_label(args.label)}
    sample = sample_from_json(body)
    scorer = sample.scorer or args.scorer or settings.default_scorer
    engine = ScoringEngine(settings, only={scorer}, start_method="fork")
    print(f"reward-service: starting a grading worker for {scorer} ...", file=sys.stderr)
    await engine.start()
    try:
        graded = await engine.grade(sample, args.scorer)
    finally:
        await engine.close()
    return graded.detail()


def _score(args: argparse.Namespace) -> int:
    detail = asyncio.run(_score_once(args))
    print(json.dumps(detail, indent=2, ensure_ascii=False))
    return 0


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The command line; given the command being run and it is `serve` or `score`, the
    other commands are not registered, and their modules (the launcher's HTTP clients, the
    bench's workloads: a fifth of a second) are not imported."""
    parser = argparse.ArgumentParser(
        prog="reward-service", description="CPU-only HTTP reward service for RL (SLIME remote_rm)."
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    serve = commands.add_parser(
        "serve",
        help="start the HTTP service",
        epilog=_settings_help(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    serve.add_argument("--host", help="address to listen on [REWARD_HOST, default 0.0.0.0]")
    serve.add_argument("--port", type=int, help="port [REWARD_PORT, default 8000]")
    serve.add_argument(
        "--workers", type=int, help="grading processes [REWARD_WORKERS, default: usable CPUs]"
    )
    serve.add_argument(
        "--reuse-port",
        action="store_true",
        help="share the port with other servers of this user (SO_REUSEPORT; `ray direct`)",
    )
    serve.add_argument(
        "--own-port", type=int, help="also serve on this port, not shared (`ray direct`)"
    )
    serve.set_defaults(run=guarded(_serve, "serve"))

    score = commands.add_parser(
        "score",
        help="grade one answer here and print the reward and its details",
        description="Grade one answer in a local worker, as the service would.",
    )
    score.add_argument("--label", required=True, help="gold label: JSON if it parses, else text")
    score.add_argument("--response", help="the answer to grade (default: read stdin)")
    score.add_argument("--prompt", default="", help="the prompt, for scorers that use it")
    score.add_argument("--scorer", help="scorer name (default: REWARD_DEFAULT_SCORER)")
    score.set_defaults(run=guarded(_score, "score"))

    if command not in ("serve", "score"):
        from reward_service.bench.bench_command import register as register_bench
        from reward_service.launcher.slime_command import register as register_slime
        from reward_service.rayserve.ray_command import register as register_ray

        register_bench(commands)
        register_slime(commands)
        register_ray(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> None:
    """Run one command.

    Commands that start processes keep Python's SIGPIPE handling (ignored):
    with the default action, a write to the pipe of a child that died (the
    resource tracker's, a worker's) would kill this process. Their output
    closed early (`| head`) ends them quietly, after their cleanup ran. The
    other commands restore the default action, which `slime launch` passes
    on to the train command it execs.
    """
    given = sys.argv[1:] if argv is None else list(argv)
    args = build_parser(given[0] if given else None).parse_args(given)
    if args.command not in _RUN_CHILDREN:
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    try:
        args.run(args)
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(1)
