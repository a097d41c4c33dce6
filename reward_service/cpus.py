"""How many CPUs this process may really use (cgroup quota, affinity)."""

from __future__ import annotations

import math
import os
from pathlib import Path

_CGROUP_V2 = Path("/sys/fs/cgroup/cpu.max")
_CGROUP_V1_QUOTA = Path("/sys/fs/cgroup/cpu/cpu.cfs_quota_us")
_CGROUP_V1_PERIOD = Path("/sys/fs/cgroup/cpu/cpu.cfs_period_us")


def _cgroup_quota(root: Path = Path("/")) -> float | None:
    """CPUs granted by the cgroup CPU quota, or None when unlimited or unknown."""
    try:
        v2 = root / _CGROUP_V2.relative_to("/")
        if v2.exists():
            quota, period = v2.read_text().split()[:2]
            return None if quota == "max" else int(quota) / int(period)
        v1q = root / _CGROUP_V1_QUOTA.relative_to("/")
        if v1q.exists():
            quota_us = int(v1q.read_text())
            period_us = int((root / _CGROUP_V1_PERIOD.relative_to("/")).read_text())
            return None if quota_us <= 0 else quota_us / period_us
    except (OSError, ValueError):
        return None
    return None


def _affinity() -> int:
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def available_cpus(root: Path = Path("/")) -> int:
    """CPUs usable here: affinity, capped by the cgroup quota (rounded up), at least 1."""
    cpus = _affinity()
    quota = _cgroup_quota(root)
    if quota is not None:
        cpus = min(cpus, math.ceil(quota))
    return max(1, cpus)
