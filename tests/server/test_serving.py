"""Listening sockets: TCP keepalive inherited by accepted connections, IPv6 as uvicorn binds."""

from __future__ import annotations

import socket
import sys

import pytest

from reward_service.server.serving import bind_sockets


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
