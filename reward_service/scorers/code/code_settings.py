"""The `code` scorer's settings (`REWARD_CODE__<FIELD>`) and its start-up check."""

from __future__ import annotations

from pydantic import Field, field_validator, model_validator

from reward_service.errors import InvalidSetting, SandboxUnavailable
from reward_service.sandbox.zygote_client import parse_required_layers
from reward_service.scorers.base import GradingLimits, ScorerSettings, StartupCheck

MiB = 1024 * 1024


class CodeSettings(ScorerSettings):
    """Per-test limits a label may ask within, the sandbox's scratch size and required layers."""

    time_limit_s: float = Field(2.0, gt=0, description="seconds per test (wall, CPU) by default")
    max_time_limit_s: float = Field(10.0, gt=0, description="cap on a label's time_limit_s")
    memory_mb: int = Field(256, ge=16, description="address space per test by default")
    max_memory_mb: int = Field(
        1024, ge=16, description="cap on a label's memory_mb (below the worker's memory cap)"
    )
    output_bytes: int = Field(1 * MiB, ge=1024, description="stdout kept per test by default")
    max_output_bytes: int = Field(8 * MiB, ge=1024, description="cap on a label's output_bytes")
    scratch_mb: int = Field(64, ge=1, description="a run's scratch directory, where boundable")
    required_layers: frozenset[str] = Field(
        default_factory=frozenset,
        description='sandbox layers that must be active or start-up fails, JSON ["seccomp", '
        '"landlock|uid"] (an item a|b: any one of them)',
    )
    budget_margin_s: float = Field(
        1.0, gt=0, description="seconds between an answer's tests' budget and its hard deadline"
    )

    @field_validator("required_layers")
    @classmethod
    def _required_layers_are_known(cls, required: frozenset[str]) -> frozenset[str]:
        try:
            return parse_required_layers(required)
        except SandboxUnavailable as e:
            raise ValueError(str(e)) from None

    @model_validator(mode="after")
    def _defaults_within_caps(self) -> CodeSettings:
        for default, cap in (
            ("time_limit_s", "max_time_limit_s"),
            ("memory_mb", "max_memory_mb"),
            ("output_bytes", "max_output_bytes"),
        ):
            if getattr(self, default) > getattr(self, cap):
                raise ValueError(f"{default} must not exceed {cap}")
        return self


def check_sandbox(settings: CodeSettings, limits: GradingLimits) -> StartupCheck:
    """Start a sandbox once, as the workers will, and report its layers.

    Raises `InvalidSetting` when a run could not fit in its worker, and
    `SandboxUnavailable` when required layers are not active (start-up stops);
    with none required, a sandbox that cannot start is a failed optional check.
    """
    from reward_service.sandbox.zygote_client import ZygoteSandbox

    if settings.max_memory_mb >= limits.worker_memory_mb:
        raise InvalidSetting(
            f"REWARD_CODE__MAX_MEMORY_MB ({settings.max_memory_mb}) must be below "
            f"REWARD_WORKER_MEMORY_MB ({limits.worker_memory_mb}): a run inherits its "
            "worker's address-space cap"
        )
    required = bool(settings.required_layers)
    try:
        with ZygoteSandbox(settings.scratch_mb, settings.required_layers) as sandbox:
            layers = list(sandbox.layers)
    except SandboxUnavailable as exc:
        if required:
            raise
        return StartupCheck(False, f"sandbox unavailable; code answers grade as errors: {exc}")
    return StartupCheck(True, f"sandbox layers: {', '.join(layers)}", required, {"layers": layers})
