"""Running the HTTP service: listening sockets, uvicorn (the app behind `Pacing`), the garbage
collector's settings, and the drain on SIGTERM."""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import gc
import math
import os
import signal
import socket
from collections.abc import Iterator
from types import FrameType

import uvicorn

from reward_service.grading.engine import ScoringEngine
from reward_service.server.app import create_app
from reward_service.server.pacing import Pacing
from reward_service.settings import Settings

_STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)
_DRAIN_NOTICE_S = 0.5
"""After SIGTERM, time the listener stays open with /readyz answering 503 (requests still
served), so that a prober sees the drain before connections are refused."""
_GC_THRESHOLDS = (2_000, 10, 100)
"""The collector's thresholds (Python's are 700, 10, 10): a young collection per 2,000 objects
allocated and not freed, and a full one only after 100 middle ones (and, as always, once the
objects that survived grew by a quarter since the last full one)."""
_PR_SET_DUMPABLE = 4
_SECRETS = ("API_TOKEN",)
"""Settings fields whose `REWARD_` variables no child process gets."""
_KEEPALIVE = (("TCP_KEEPIDLE", 30), ("TCP_KEEPINTVL", 10), ("TCP_KEEPCNT", 3))
"""Probe an idle peer after 30 s, every 10 s; drop it after 3 unanswered probes."""


def bind_sockets(host: str, port: int, *, reuse_port: bool = False) -> list[socket.socket]:
    """Sockets bound to `host:port`, one per address it resolves to, with TCP keepalive.

    Connections accepted on them inherit the keepalive settings (on Linux),
    so a peer that vanished without a word is dropped after about a minute
    instead of holding its connection for ever. They are bound but not yet
    listening: until uvicorn serves them, connecting is refused rather than
    left waiting behind the workers' warm-up. IPv6 sockets are IPv6-only, as
    when uvicorn binds them itself. With `reuse_port`, other processes of this
    user may listen on the same port and the kernel spreads new connections
    over them all (SO_REUSEPORT): the Ray direct path's replicas on one node
    share one URL that way.
    """
    found = socket.getaddrinfo(host or None, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    sockets: list[socket.socket] = []
    try:
        for family, kind, proto, _, address in dict.fromkeys(found):
            sock = socket.socket(family, kind, proto)
            sockets.append(sock)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            if reuse_port:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
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


class _DrainingServer(uvicorn.Server):
    """Fails readiness the moment SIGTERM (or SIGINT) arrives, then drains as uvicorn does.

    The listener closes `_DRAIN_NOTICE_S` later; a second signal closes
    it at once (a third, SIGINT, cancels what is left, as in uvicorn).
    Its own handlers stand in for uvicorn's, which re-raise the signal
    after shutting down: a drain that completes exits 0, not as a kill.
    """

    def __init__(self, config: uvicorn.Config, engine: ScoringEngine) -> None:
        super().__init__(config)
        self._engine = engine
        self.draining = False

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        """uvicorn's start-up (the app's, its workers'), then the heap it made is frozen.

        Every object alive once the service is up (the modules, the app, the scorers'
        tables: about 160,000) is moved out of the garbage collector's generations, so a
        full collection, which stops the event loop for as long as it walks them, walks
        only what requests made since; and `_GC_THRESHOLDS` makes full collections rare. A
        burst of 2,000 requests, whose objects live until answered, went through six full
        collections of 0.37-0.55 s each without these, none with them.
        """
        await super().startup(sockets=sockets)
        gc.freeze()
        gc.set_threshold(*_GC_THRESHOLDS)

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
        self._engine.drain()
        asyncio.get_running_loop().call_later(_DRAIN_NOTICE_S, self._stop_listening)

    def _stop_listening(self) -> None:
        self.should_exit = True


def keep_secrets_here() -> None:
    """Keep the API token in this process: out of every child's and same-uid reader's reach.

    Call once settings are read. Processes started later (the forkserver, the
    workers, the code sandbox) inherit no `REWARD_API_TOKEN`; and this
    process's own `/proc/<pid>/environ`, which still holds the environment
    it started with, becomes unreadable to other processes of its uid (not
    dumpable): a model-written program that got past the sandbox's read
    confinement still finds no token.
    """
    prefix = Settings.model_config.get("env_prefix", "")
    for name in _SECRETS:
        os.environ.pop(f"{prefix}{name}", None)
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0)


def serve(settings: Settings, *, reuse_port: bool = False, own_port: int | None = None) -> None:
    """Serve until SIGTERM or SIGINT, then drain.

    `reuse_port`: share `settings.port` with other servers (`bind_sockets`);
    `own_port`: also serve on this port, this server's alone (its own
    /metrics and /readyz when the shared port reaches any of them).
    Raises `RewardServiceError` for settings the registry refuses and OSError
    when it cannot listen, both before any worker starts.
    """
    app = create_app(settings)
    keep_secrets_here()
    sockets = bind_sockets(settings.host, settings.port, reuse_port=reuse_port)
    if own_port is not None:
        sockets += bind_sockets(settings.host, own_port)
    config = uvicorn.Config(
        Pacing(app),
        log_config=None,
        access_log=False,
        timeout_graceful_shutdown=math.ceil(settings.drain_s),
        timeout_keep_alive=75,
    )
    _DrainingServer(config, app.state.engine).run(sockets=sockets)
