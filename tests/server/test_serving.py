"""Listening sockets: TCP keepalive inherited by accepted connections, IPv6 as uvicorn binds."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from reward_service.server.serving import bind_sockets
from reward_service.testing import live_server


def test_accepted_connections_inherit_tcp_keepalive() -> None:
    """A connection accepted on a socket from `bind_sockets` probes its peer (SO_KEEPALIVE)."""
    [listener] = bind_sockets("127.0.0.1", 0)
    listener.listen()
    with listener, socket.create_connection(listener.getsockname(), timeout=5):
        accepted, _ = listener.accept()
        with accepted:
            assert accepted.getsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE) == 1
            if sys.platform == "linux":
                assert accepted.getsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPIDLE) == 30
                assert accepted.getsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPINTVL) == 10
                assert accepted.getsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPCNT) == 3


@pytest.mark.skipif(not socket.has_ipv6, reason="no IPv6")
def test_an_ipv6_host_gets_an_ipv6_only_socket() -> None:
    """`--host ::1` binds an IPv6 socket, IPv6-only as uvicorn would bind it."""
    try:
        [sock] = bind_sockets("::1", 0)
    except OSError as exc:
        pytest.skip(f"cannot bind ::1: {exc}")
    with sock:
        assert sock.family == socket.AF_INET6
        assert sock.getsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY) == 1


_SEALED = """
import ctypes, os, subprocess, sys
from reward_service.server.serving import keep_secrets_here
keep_secrets_here()
dumpable = ctypes.CDLL(None).prctl(3, 0, 0, 0, 0)
probe = "import os; print(os.environ.get('REWARD_API_TOKEN'))"
child = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
child = child.stdout.strip()
print(dumpable, child)
"""


def test_the_token_stays_in_the_server_process() -> None:
    """After `keep_secrets_here`, children inherit no token and the process is not dumpable."""
    env = {**os.environ, "REWARD_API_TOKEN": "canary-7f3a"}
    ran = subprocess.run(
        [sys.executable, "-c", _SEALED], env=env, capture_output=True, text=True, timeout=60
    )
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.split() == ["0", "None"]


def test_grading_workers_of_a_live_server_hold_no_token() -> None:
    """A served token reaches no worker: none of their environments holds it."""
    with live_server(workers=1, env={"REWARD_API_TOKEN": "canary-51c9"}) as server:
        pids = server.worker_pids()
        assert pids
        for pid in pids:
            assert b"canary-51c9" not in Path(f"/proc/{pid}/environ").read_bytes()
