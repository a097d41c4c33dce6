"""What the zygote sandbox's tests share: limits, one Python run, the zygote's processes."""

from __future__ import annotations

import os
from pathlib import Path

from reward_service.sandbox import Limits, Outcome, Program
from reward_service.sandbox.zygote_client import ZYGOTE, ZygoteSandbox

LIMITS = Limits(time_s=2.0, memory_mb=256, output_bytes=1 << 20)
SHORT = Limits(time_s=0.5, memory_mb=256, output_bytes=1 << 20)


def run(
    sandbox: ZygoteSandbox, source: str, stdin: bytes = b"", limits: Limits = LIMITS
) -> Outcome:
    """One Python run of `source` on `stdin`."""
    (outcome,) = sandbox.execute(Program("python", source), [stdin], limits, budget_s=30).outcomes()
    return outcome


def zygote_processes(tag: str) -> list[int]:
    """Live processes started from the zygote script whose command line holds `tag`."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes().decode(errors="replace")
            state = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if str(ZYGOTE) in cmdline and tag in cmdline and state != "Z":
            found.append(int(entry))
    return found
