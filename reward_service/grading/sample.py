"""What the engine grades: one answer, its gold label and the scorer chosen for it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import KW_ONLY, dataclass, field

from reward_service.scorers.base import JSON


@dataclass(frozen=True)
class Sample:
    """One answer to grade, with its gold label and the scorer to use."""

    response: str
    label: JSON
    _: KW_ONLY
    prompt: JSON = None
    scorer: str | None = None
    """Scorer chosen by the sample itself (label object), else the route's."""
    options: Mapping[str, JSON] = field(default_factory=dict)
