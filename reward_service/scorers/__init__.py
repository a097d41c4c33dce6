"""Pure grading: the `Scorer` interface, its registry and the built-ins."""

from reward_service.scorers.base import JSON, GradingLimits, Score, Scorer, Status
from reward_service.scorers.registry import ScorerRegistry

__all__ = ["JSON", "GradingLimits", "Score", "Scorer", "ScorerRegistry", "Status"]
