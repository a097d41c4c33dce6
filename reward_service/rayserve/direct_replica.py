"""The direct path's replica: a Ray actor holding one `reward-service serve` (runs on the cluster).

The actor only places and keeps the server: requests go to the server's own
uvicorn, on a port of the actor's node, never through Ray, so an answer costs
what it costs `reward-service serve` anywhere. The server is the service's
own command, with its auth, metrics, limits and SIGTERM drain:

- it listens on the deployment's shared port (`--reuse-port`: a node's
  replicas share one URL, the kernel spreading connections over them) and on
  the replica's own port (`--own-port`: this replica's /metrics, /readyz);
- the actor is ready once the server's own port answers /readyz 200, which
  it does only once every grading worker is warm;
- a server that exits is started again by the actor's watcher, with a
  backoff (0.5 s doubling to 10 s, back to 0.5 s after a minute up); an actor
  that dies is restarted by Ray (`max_restarts=-1`), and its server, which
  gets SIGKILL when the actor's watcher thread dies (PR_SET_PDEATHSIG), frees
  both ports for the new one at once;
- `stop` is the orderly removal: SIGTERM, the server drains (up to the
  spec's drain), then the actor can be killed.

This module holds no Ray import: `direct_driver` wraps the class with
`ray.remote`, so it is tested here as a plain object.
"""

from __future__ import annotations

import contextlib
import ctypes
import logging
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Mapping
from typing import Any

import httpx

from reward_service.errors import RewardServiceError

log = logging.getLogger("reward_service.rayserve.direct")

_PR_SET_PDEATHSIG = 1
_BACKOFF_S = (0.5, 10.0)
_STEADY_S = 60.0
"""A server up this long resets the restart backoff."""
_EXITS_BEFORE_READY = 3
"""A server that exits this often before it is first ready will not come up (its port is
taken, a setting is refused): the replica fails rather than wait out its timeout."""


class ServerNotReady(RewardServiceError):
    """The replica's server did not answer /readyz in time (or kept exiting)."""


def _die_with_parent_thread() -> None:  # pragma: no cover - runs in the child before exec
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


def server_command(port: int, own_port: int, workers: int | None) -> list[str]:
    """`reward-service serve` on the shared and the own port; `workers` None: the env's."""
    command = [sys.executable, "-m", "reward_service", "serve", "--host", "0.0.0.0"]
    command += ["--port", str(port), "--reuse-port", "--own-port", str(own_port)]
    if workers is not None:
        command += ["--workers", str(workers)]
    return command


class DirectReplica:
    """One replica: its server process, restarted whenever it exits until `stop`."""

    def __init__(
        self,
        port: int,
        own_port: int,
        workers: int,
        env: Mapping[str, str],
        drain_s: float,
        fingerprint: str,
        ready_timeout_s: float = 600.0,
    ) -> None:
        self.port, self.own_port, self.fingerprint = port, own_port, fingerprint
        self._drain_s = drain_s
        given = None if "REWARD_WORKERS" in env else workers
        self._command = server_command(port, own_port, given)
        self._env = {**os.environ, **env}
        self._process: subprocess.Popen[bytes] | None = None
        self._stopping = threading.Event()
        self._started = threading.Event()
        self.restarts = 0
        self._watcher = threading.Thread(target=self._watch, name="server-watcher", daemon=True)
        self._watcher.start()
        self._wait_ready(ready_timeout_s)

    def _spawn(self) -> subprocess.Popen[bytes]:
        # From the watcher thread: PDEATHSIG follows the thread that forked the child.
        return subprocess.Popen(self._command, env=self._env, preexec_fn=_die_with_parent_thread)

    def _watch(self) -> None:
        backoff = _BACKOFF_S[0]
        while not self._stopping.is_set():
            began = time.monotonic()
            self._process = self._spawn()
            self._started.set()
            code = self._process.wait()
            if self._stopping.is_set():
                return
            self.restarts += 1
            if time.monotonic() - began > _STEADY_S:
                backoff = _BACKOFF_S[0]
            log.warning("server exited with %s; starting it again in %.1f s", code, backoff)
            if self._stopping.wait(backoff):
                return
            backoff = min(backoff * 2, _BACKOFF_S[1])

    def _wait_ready(self, timeout_s: float) -> None:
        self._started.wait(timeout_s)
        url = f"http://127.0.0.1:{self.own_port}/readyz"
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline and self.restarts < _EXITS_BEFORE_READY:
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(url, timeout=2.0).status_code == 200:
                    return
            time.sleep(0.2)
        self.stop()
        raise ServerNotReady(
            f"reward-service serve on ports {self.port} and {self.own_port} not ready "
            f"({self.restarts} exit(s), {timeout_s:g} s allowed); its output is in this "
            "actor's log"
        )

    def info(self) -> dict[str, Any]:
        """The server's pid, restarts so far, ports and the spec it runs (for redeploys)."""
        process = self._process
        return {
            "pid": process.pid if process and process.poll() is None else None,
            "restarts": self.restarts,
            "port": self.port,
            "own_port": self.own_port,
            "fingerprint": self.fingerprint,
            "node_pid": os.getpid(),
        }

    def stop(self) -> int | None:
        """SIGTERM the server and wait for its drain; its exit code (None: it was not running)."""
        self._stopping.set()
        process = self._process
        if process is None or process.poll() is not None:
            return None
        process.send_signal(signal.SIGTERM)
        try:
            return process.wait(self._drain_s + 10)
        except subprocess.TimeoutExpired:
            process.kill()
            return process.wait()
