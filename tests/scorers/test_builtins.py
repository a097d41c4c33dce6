"""Every built-in scorer loads through the registry under its own name."""

from __future__ import annotations

import pytest

from reward_service.scorers.registry import BUILTINS, ScorerRegistry


@pytest.mark.parametrize("name", sorted(BUILTINS))
def test_builtin_loads_under_its_name(name: str) -> None:
    """`ScorerRegistry.discover().get(name)` builds a scorer whose `.name` is `name`."""
    assert ScorerRegistry.discover().get(name).name == name
