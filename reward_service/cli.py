"""The `reward-service` command: serve, score one answer by hand, benchmark."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import math
import os
import signal
import socket
import sys
from collections.abc import Iterator, Sequence
from types import FrameType
from typing import Any

import pydantic

from reward_service.settings import Settings

_STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)
_DRAIN_NOTICE_S = 0.5
"""After SIGTERM, time the listener stays open with /readyz answering 503 (requests still
served), so that a prober sees the drain before connections are refused."""
_KEEPALIVE = (("TCP_KEEPIDLE", 30), ("TCP_KEEPINTVL", 10), ("TCP_KEEPCNT", 3))
"""Probe an idle peer after 30 s, every 10 s; drop it after 3 unanswered probes."""
_RUN_CHILDREN = frozenset({"serve", "score", "bench"})
"""Commands that start processes (workers, the forkserver, a server) and must outlive them."""


def _settings_help() -> str:
    lines = ["settings (environment variables; flags above override them):"]
    for name, field in Settings.model_fields.items():
        if name == "workers":
            default: object = "CPUs available"
        elif field.default_factory is not None:
            default = field.default_factory()  # type: ignore[call-arg]
        else:
            default = field.default
        lines.append(f"  REWARD_{name.upper():<28} {field.description or ''} [default: {default}]")
    return "\n".join(lines)


def _settings(overrides: dict[str, Any]) -> Settings:
    try:
        return Settings(**{k: v for k, v in overrides.items() if v is not None})
    except pydantic.ValidationError as exc:
        sys.exit(f"reward-service: invalid settings:\n{exc}")


def bind_sockets(host: str, port: int) -> list[socket.socket]:
    """Sockets bound to `host:port`, one per address it resolves to, with TCP keepalive.

    Connections accepted on them inherit the keepalive settings (on Linux),
    so a peer that vanished without a word is dropped after about a minute
    instead of holding its connection for ever. They are bound but not yet
    listening: until uvicorn serves them, connecting is refused rather than
    left waiting behind the workers' warm-up. IPv6 sockets are IPv6-only, as
    when uvicorn binds them itself.
    """
    found = socket.getaddrinfo(host or None, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    sockets: list[socket.socket] = []
    try:
        for family, kind, proto, _, address in dict.fromkeys(found):
            sock = socket.socket(family, kind, proto)
            sockets.append(sock)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
            for option, value in _KEEPALIVE:
                if hasattr(socket, option):
                    sock.setsockopt(socket.IPPROTO_TCP, getattr(socket, option), value)
            if family == socket.AF_INET6:
                sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
            sock.bind(address)
    except OSError:
        for sock in sockets:
            sock.close()
        raise
    return sockets


def _serve(args: argparse.Namespace) -> None:
    import uvicorn

    from reward_service import logs
    from reward_service.app import create_app

    settings = _settings({"host": args.host, "port": args.port, "workers": args.workers})
    logs.configure(settings.log_level)
    try:
        sockets = bind_sockets(settings.host, settings.port)
    except OSError as exc:
        sys.exit(f"reward-service: cannot listen on {settings.host}:{settings.port}: {exc}")
    app = create_app(settings)

    class _DrainingServer(uvicorn.Server):
        """Fails readiness the moment SIGTERM (or SIGINT) arrives, then drains as uvicorn does.

        The listener closes `_DRAIN_NOTICE_S` later; a second signal closes
        it at once (a third, SIGINT, cancels what is left, as in uvicorn).
        Its own handlers stand in for uvicorn's, which re-raise the signal
        after shutting down: a drain that completes exits 0, not as a kill.
        """

        draining = False

        @contextlib.contextmanager
        def capture_signals(self) -> Iterator[None]:
            loop = asyncio.get_running_loop()
            for sig in _STOP_SIGNALS:
                loop.add_signal_handler(sig, self.handle_exit, sig, None)
            try:
                yield
            finally:
                for sig in _STOP_SIGNALS:
                    loop.remove_signal_handler(sig)

        def handle_exit(self, sig: int, frame: FrameType | None) -> None:
            if self.draining:
                super().handle_exit(sig, frame)
                return
            self.draining = True
            app.state.engine.drain()
            asyncio.get_running_loop().call_later(_DRAIN_NOTICE_S, self._stop_listening)

        def _stop_listening(self) -> None:
            self.should_exit = True

    config = uvicorn.Config(
        app,
        log_config=None,
        access_log=False,
        timeout_graceful_shutdown=math.ceil(settings.drain_s),
        timeout_keep_alive=75,
    )
    print(
        f"reward-service: starting {settings.workers} grading workers on "
        f"http://{settings.host}:{settings.port} (default scorer {settings.default_scorer})",
        file=sys.stderr,
    )
    _DrainingServer(config).run(sockets=sockets)


def _parse_label(text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


async def _score_once(args: argparse.Namespace) -> dict[str, Any]:
    from reward_service.engine import ScoringEngine
    from reward_service.samples import sample_from_json

    settings = _settings({"workers": 1})
    engine = ScoringEngine(settings)
    if args.scorer:
        engine.registry.require(args.scorer)
    print("reward-service: starting a grading worker ...", file=sys.stderr)
    await engine.start()
    try:
        response = args.response if args.response is not None else sys.stdin.read()
        body = {"prompt": args.prompt, "response": response, "label": _parse_label(args.label)}
        graded = await engine.grade(sample_from_json(body), args.scorer)
    finally:
        await engine.close()
    return graded.detail()


def _score(args: argparse.Namespace) -> None:
    from reward_service.errors import RewardServiceError

    try:
        detail = asyncio.run(_score_once(args))
    except RewardServiceError as exc:
        sys.exit(f"reward-service: {exc}")
    print(json.dumps(detail, indent=2, ensure_ascii=False))


def build_parser() -> argparse.ArgumentParser:
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
    serve.set_defaults(run=_serve)

    score = commands.add_parser(
        "score",
        help="grade one answer here and print the reward and its details",
        description="Grade one answer in a local worker, as the service would.",
    )
    score.add_argument("--label", required=True, help="gold label: JSON if it parses, else text")
    score.add_argument("--response", help="the answer to grade (default: read stdin)")
    score.add_argument("--prompt", default="", help="the prompt, for scorers that use it")
    score.add_argument("--scorer", help="scorer name (default: REWARD_DEFAULT_SCORER)")
    score.set_defaults(run=_score)

    _register_optional(commands)
    return parser


def _register_optional(commands: Any) -> None:
    from reward_service.bench import register as register_bench

    register_bench(commands)
    try:
        from reward_service.slime.cli import register as register_slime
    except ImportError:
        return
    register_slime(commands)


def main(argv: Sequence[str] | None = None) -> None:
    """Run one command.

    Commands that start processes keep Python's SIGPIPE handling (ignored):
    with the default action, a write to the pipe of a child that died (the
    resource tracker's, a worker's) would kill this process. Their output
    closed early (`| head`) ends them quietly, after their cleanup ran. The
    other commands restore the default action, which `slime launch` passes
    on to the train command it execs.
    """
    args = build_parser().parse_args(argv)
    if args.command not in _RUN_CHILDREN:
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    try:
        args.run(args)
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(1)
