"""A `reward-service serve` process on this machine, on a free loopback port.

`reward-service bench` and `reward-service ray bench` measure the service through
one, as a client would; `reward_service.testing` re-exports it for tests::

    with live_server(workers=2, env={"REWARD_DEADLINE_S": "5"}) as server:
        httpx.post(f"{server.url}/score", json={...})

Its processes are read from /proc (`_children`): ten lines rather than psutil,
a compiled dependency, in the runtime install.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

import httpx


def free_port() -> int:
    """A TCP port on 127.0.0.1 that is free right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _children(pid: int) -> list[int]:
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError, ValueError, IndexError):
            fields = stat.read_text().rsplit(")", 1)[1].split()
            if int(fields[1]) == pid:
                found.append(int(stat.parent.name))
    return found


@dataclass
class LiveServer:
    """A running `reward-service serve` process."""

    url: str
    process: subprocess.Popen[bytes]

    def wait_ready(self, timeout_s: float = 60.0) -> None:
        """Block until `/readyz` answers 200; raise if the process dies or time runs out."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"server exited with {self.process.returncode} before ready")
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(f"{self.url}/readyz", timeout=1.0).status_code == 200:
                    return
            time.sleep(0.1)
        raise TimeoutError(f"server at {self.url} not ready after {timeout_s} s")

    def worker_pids(self) -> list[int]:
        """PIDs of the grading workers (children of the forkserver child)."""
        children = _children(self.process.pid)
        return [pid for child in children for pid in _children(child)]

    def rss_bytes(self) -> int:
        """Resident memory of the server and all its descendants."""
        pids, frontier = [self.process.pid], [self.process.pid]
        while frontier:
            frontier = [child for pid in frontier for child in _children(pid)]
            pids += frontier
        total = 0
        for pid in pids:
            with contextlib.suppress(OSError):
                for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                    if line.startswith("VmRSS:"):
                        total += int(line.split()[1]) * 1024
        return total

    def stop(self, timeout_s: float = 60.0) -> int:
        """SIGTERM the server and wait for it; return its exit code."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout_s)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        return self.process.returncode


@contextlib.contextmanager
def live_server(
    workers: int = 1,
    env: Mapping[str, str | None] | None = None,
    ready_timeout_s: float = 60.0,
    quiet: bool = True,
) -> Iterator[LiveServer]:
    """Run `reward-service serve` on a free loopback port until the block ends, with this
    process's environment and `env` (a None value: that variable unset)."""
    port = free_port()
    cmd = [sys.executable, "-m", "reward_service", "serve", "--host", "127.0.0.1"]
    cmd += ["--port", str(port), "--workers", str(workers)]
    process = subprocess.Popen(
        cmd,
        env={k: v for k, v in {**os.environ, **(env or {})}.items() if v is not None},
        stdout=subprocess.DEVNULL if quiet else None,
        stderr=subprocess.DEVNULL if quiet else None,
    )
    server = LiveServer(f"http://127.0.0.1:{port}", process)
    try:
        server.wait_ready(ready_timeout_s)
        yield server
    finally:
        server.stop()
