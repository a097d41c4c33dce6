"""The replica: worker count from Ray's assigned CPUs, health from the engine's readiness."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest


@pytest.fixture(scope="module")
def deployment() -> Any:
    """The replica's module, imported by the one worker that runs these tests: Ray Serve's
    import costs each xdist worker that merely collects the file about two seconds."""
    return pytest.importorskip(
        "reward_service.rayserve.deployment", reason="needs Ray Serve: pip install 'ray[serve]'"
    )


@pytest.mark.parametrize(
    ("assigned", "workers"), [({"CPU": 4.0}, 4), ({"CPU": 2.5}, 2), ({"CPU": 0.5}, 1), ({}, 1)]
)
def test_workers_are_the_replicas_whole_cpus(
    deployment: Any, assigned: dict[str, float], workers: int
) -> None:
    """A replica grades with as many workers as whole CPUs Ray gave it, at least one."""
    assert deployment.replica_workers(assigned) == workers


def _check_health(deployment: Any, replica: Any) -> None:
    # The deployed class's own method, on a stand-in replica: instantiating
    # Serve's wrapper outside a replica would leave its async __del__ unawaited.
    deployment.RewardService.func_or_class.check_health(replica)


def _replica(ready: bool) -> SimpleNamespace:
    engine = SimpleNamespace(ready=ready)
    return SimpleNamespace(app=SimpleNamespace(state=SimpleNamespace(engine=engine)))


def test_health_check_is_the_engines_readiness(deployment: Any) -> None:
    """Serve's check_health passes while the engine is ready and raises once it is not."""
    _check_health(deployment, _replica(ready=True))
    with pytest.raises(deployment.ReplicaNotReady):
        _check_health(deployment, _replica(ready=False))
    with pytest.raises(deployment.ReplicaNotReady):
        _check_health(deployment, SimpleNamespace())  # before the app is built
