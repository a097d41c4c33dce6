"""Measure the HTTP process's memory with request bodies held: the figures behind the pod size.

    python loadtest/memory.py --requests 128 --body-bytes 1048576        # 1 MiB answers
    python loadtest/memory.py --requests 2048 --body-bytes 2048          # a full queue
    python loadtest/memory.py --requests 16 --body-bytes 8000 --batch-items 1000

Starts `reward-service serve` on 127.0.0.1 with one worker and the test scorer
`fake` (from `reward_service.testing`), whose answers `sleep:60` hold every
request in progress; sends the requests at once; and prints the server
process's resident memory before and at its peak, the requests refused (503)
and still held at the end, and the growth per byte of body admitted at once
(the byte budget, or everything sent if less). Loopback only, bounded:
the server is killed after `--observe-s` seconds.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import aiohttp

from reward_service.testing import free_port

MiB = 1024 * 1024
_HOLD = "sleep:60"


def rss_bytes(pid: int) -> int:
    """Resident memory of one process (not its children)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError(f"no VmRSS for process {pid}")


def request_body(body_bytes: int, batch_items: int) -> tuple[str, bytes]:
    """(path, body): one answer padded to `body_bytes`, or a batch of items that size each."""
    item = {"prompt": "x" * max(body_bytes - 60, 0), "response": _HOLD, "label": 1}
    if batch_items:
        return "/score/fake/batch", json.dumps({"items": [item] * batch_items}).encode()
    return "/score/fake", json.dumps(item).encode()


async def _wait_ready(session: aiohttp.ClientSession, base: str) -> None:
    for _ in range(300):
        try:
            async with session.get(f"{base}/readyz") as answer:
                if answer.status == 200:
                    return
        except aiohttp.ClientError:
            pass
        await asyncio.sleep(0.2)
    raise RuntimeError("the service did not become ready")


async def measure(args: argparse.Namespace, pid: int, base: str) -> dict[str, Any]:
    """Send the requests at once; follow the server's memory for `observe_s` seconds."""
    path, body = request_body(args.body_bytes, args.batch_items)
    statuses: list[int] = []
    connector = aiohttp.TCPConnector(limit=0)
    async with aiohttp.ClientSession(connector=connector) as session:
        await _wait_ready(session, base)
        await asyncio.sleep(1.0)
        idle = rss_bytes(pid)

        async def post() -> None:
            headers = {"Content-Type": "application/json"}
            async with session.post(f"{base}{path}", data=body, headers=headers) as answer:
                statuses.append(answer.status)
                await answer.read()

        tasks = [asyncio.create_task(post()) for _ in range(args.requests)]
        peak, deadline = idle, time.monotonic() + args.observe_s
        while time.monotonic() < deadline:
            peak = max(peak, rss_bytes(pid))
            await asyncio.sleep(0.1)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
    refused = statuses.count(503)
    # At most this many body bytes were admitted at once: the budget, or all that was sent.
    admitted = min(args.pending_bytes, args.requests * len(body))
    return {
        "body_bytes": len(body),
        "requests": args.requests,
        "refused_503": refused,
        "other_answers": len(statuses) - refused,
        "still_held": args.requests - len(statuses),
        "idle_mib": round(idle / MiB, 1),
        "peak_mib": round(peak / MiB, 1),
        "growth_per_byte_admitted": round((peak - idle) / admitted, 2),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=128)
    parser.add_argument("--body-bytes", type=int, default=MiB, help="per answer (per batch item)")
    parser.add_argument("--batch-items", type=int, default=0, help="0: one answer per request")
    parser.add_argument("--pending-bytes", type=int, default=128 * MiB)
    parser.add_argument("--max-queue", type=int, default=2048)
    parser.add_argument("--observe-s", type=float, default=20.0)
    args = parser.parse_args(argv)
    port = free_port()
    env = {
        **os.environ,
        "REWARD_EXTRA_SCORERS": '{"fake": "reward_service.testing:FakeScorer"}',
        "REWARD_SCORER_DEADLINES": '{"fake": 120}',
        "REWARD_MAX_PENDING_BYTES": str(args.pending_bytes),
        "REWARD_MAX_QUEUE": str(args.max_queue),
        "REWARD_MAX_BODY_BYTES": str(min(8 * MiB, args.pending_bytes)),
        "REWARD_ACCESS_LOG": "off",
    }
    command = [sys.executable, "-m", "reward_service", "serve", "--host", "127.0.0.1"]
    command += ["--port", str(port), "--workers", "1"]
    server = subprocess.Popen(
        command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        result = asyncio.run(measure(args, server.pid, f"http://127.0.0.1:{port}"))
    finally:
        server.kill()
        server.wait()
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
