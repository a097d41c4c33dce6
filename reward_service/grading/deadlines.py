"""Which hard deadline a scorer's gradings get: decided here, once, for every scorer served.

Per scorer `name`, the first that applies: `REWARD_SCORER_DEADLINES[name]`; for
`boxed_<type>` (`ScorerRegistry.base_of`), `REWARD_SCORER_DEADLINES[<type>]`; the
scorer's own `deadline_s`; `REWARD_DEADLINE_S`. A composite (`scorers.composite`) not named
there gets the longest deadline of its scorer components: it grades each in turn. The
engine resolves the table at start-up and hands it to every scorer as
`GradingLimits.deadlines`, so a scorer that spends its deadline (the code scorers'
budgets, the judge's check) reads the one the engine enforces.
"""

from __future__ import annotations

from reward_service.scorers import ScorerRegistry
from reward_service.settings import Settings


def resolve_deadlines(settings: Settings, registry: ScorerRegistry) -> dict[str, float]:
    """The hard deadline, in seconds, of each scorer `registry` serves, by name."""
    return {name: _deadline(settings, registry, name) for name in registry.names()}


def _deadline(settings: Settings, registry: ScorerRegistry, name: str) -> float:
    named = settings.scorer_deadlines
    for key in (name, registry.base_of(name)):
        if key in named:
            return named[key]
    parts = registry.composites().get(name)
    if parts is not None:
        return max(_deadline(settings, registry, part) for part in parts.scorers().values())
    own = registry.scorer_class(name).deadline_s
    return settings.deadline_s if own is None else own
