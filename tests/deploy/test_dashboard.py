"""The Grafana dashboard only charts metrics the service exports."""

from __future__ import annotations

import json
import re
from pathlib import Path

from reward_service.server.metrics import ServiceMetrics

DASHBOARD = Path(__file__).parents[2] / "kubernetes" / "grafana-dashboard.json"


def test_dashboard_queries_name_real_metrics() -> None:
    """Every reward_* series a panel queries is one /metrics exposes."""
    suffixes = {"counter": ("_total",), "histogram": ("_bucket", "_count", "_sum")}
    exported = {
        family.name + suffix
        for family in ServiceMetrics().registry.collect()
        for suffix in suffixes.get(family.type, ("",))
    }
    panels = json.loads(DASHBOARD.read_text())["panels"]
    queried = {
        name
        for panel in panels
        for target in panel["targets"]
        for name in re.findall(r"reward_[a-z_]+", target["expr"])
    }
    assert queried, "the dashboard queries nothing"
    assert queried <= exported, queried - exported
