"""The one settings object: every knob, typed, from `REWARD_*` variables.

Nothing else in the package reads the environment. `Settings()` validates
at start-up, so a bad value stops the service before it takes traffic.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, SecretStr, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from reward_service.cpus import available_cpus
from reward_service.errors import SandboxUnavailable
from reward_service.sandbox.zygote_client import parse_required_layers

MiB = 1024 * 1024


class Settings(BaseSettings):
    """reward-service settings; each field is also `REWARD_<FIELD>` in the environment."""

    model_config = SettingsConfigDict(
        env_prefix="REWARD_", extra="ignore", frozen=True, hide_input_in_errors=True
    )

    host: str = Field("0.0.0.0", description="Address to listen on.")
    port: int = Field(8000, ge=1, le=65535, description="Port to listen on.")
    workers: int = Field(
        default_factory=available_cpus,
        ge=1,
        description="Grading processes; default: the CPUs this process may use (cgroup, affinity).",
    )
    default_scorer: str = Field("math_verify", description="Scorer behind plain /score.")
    extra_scorers: dict[str, str] = Field(
        default_factory=dict,
        description='More scorers without packaging, as JSON {"name": "module:Class"}.',
    )
    scorer_options: dict[str, dict[str, Any]] = Field(
        default_factory=dict,
        description='Default options per scorer, JSON {"math_verify": {"extraction": "any"}}; '
        "a request's URL query and label object override them. Checked at start-up.",
    )
    deadline_s: float = Field(
        10.0, gt=0, le=120, description="Hard deadline per grading; past it the worker is killed."
    )
    scorer_deadlines: dict[str, float] = Field(
        default_factory=dict,
        description='Per-scorer deadlines, JSON {"reward_model": 120}; others use deadline_s.',
    )
    grader_timeout_s: int = Field(
        3, ge=1, description="math_verify's own parse/verify timeout inside a worker (whole s)."
    )
    fallback_reward: float = Field(
        0.0, description="Reward for answers that cannot be graded (timeout, error)."
    )
    max_body_bytes: int = Field(8 * MiB, ge=1024, description="Request bodies above this get 413.")
    max_batch_items: int = Field(1024, ge=1, description="Items above this in a batch get 413.")
    max_answer_chars: int = Field(
        2_000_000, ge=1, description="Longer responses are not graded (status no_answer)."
    )
    worker_memory_mb: int = Field(
        1536, ge=256, description="Address-space cap per grading process, in MiB."
    )
    worker_max_tasks: int = Field(
        20_000, ge=0, description="Recycle a grading process after this many tasks; 0: never."
    )
    gold_cache_size: int = Field(
        4096, ge=0, description="Parsed gold labels kept per grading process."
    )
    max_queue: int = Field(
        2048, ge=1, description="Gradings in flight or queued; past it requests get 503."
    )
    max_pending_bytes: int = Field(
        256 * MiB,
        ge=1024,
        description="Body bytes held by requests in progress; past it requests get 503.",
    )
    body_timeout_s: float = Field(
        20.0, gt=0, description="Whole time allowed to receive a request body; past it, 408."
    )
    drain_s: float = Field(
        30.0,
        gt=0,
        le=3600,
        description="On SIGTERM, time allowed to answer requests already received "
        "(whole seconds, rounded up).",
    )
    api_token: SecretStr | None = Field(
        None,
        description="If set, scoring needs 'Authorization: Bearer <token>' or /t/<token>/; "
        "set but blank stops start-up.",
    )
    require_api_token: bool = Field(
        False, description="Refuse to start without an api_token (the Kubernetes manifests set it)."
    )
    metrics_need_token: bool = Field(False, description="Protect /metrics with the API token too.")
    connection_max_requests: int = Field(
        0, ge=0, description="Close a keep-alive connection after this many requests; 0: never."
    )
    connection_max_age_s: float = Field(
        0.0, ge=0, description="Close a keep-alive connection older than this; 0: never."
    )
    access_log: Literal["off", "sampled", "all"] = Field(
        "sampled", description="Per-request access lines: none, 1 in `access_log_sample`, or all."
    )
    access_log_sample: int = Field(100, ge=1, description="Log one request in this many.")
    log_level: Literal["debug", "info", "warning", "error"] = Field(
        "info", description="Lowest level of the JSON log lines written to stderr."
    )
    code_time_limit_s: float = Field(
        2.0, gt=0, description="code scorer: seconds per test (wall, CPU) if the label sets none."
    )
    code_max_time_limit_s: float = Field(
        10.0, gt=0, description="code scorer: cap on a label's time_limit_s."
    )
    code_memory_mb: int = Field(
        256, ge=16, description="code scorer: address space per test unless the label sets it."
    )
    code_max_memory_mb: int = Field(
        1024, ge=16, description="code scorer: cap on a label's memory_mb (below worker_memory_mb)."
    )
    code_output_bytes: int = Field(
        1 * MiB, ge=1024, description="code scorer: stdout kept per test; past it, output_limit."
    )
    code_max_output_bytes: int = Field(
        8 * MiB, ge=1024, description="code scorer: cap on a label's output_bytes."
    )
    code_scratch_mb: int = Field(
        64, ge=1, description="code scorer: MiB of a run's scratch directory, where boundable."
    )
    code_required_layers: frozenset[str] = Field(
        default_factory=frozenset,
        description="code scorer: sandbox layers that must be active or start-up fails, JSON "
        '["seccomp", "landlock|uid"]: each item a layer or alternatives a|b, one of which must '
        "be active; the always-on layers are always active.",
    )
    reward_model_name: str = Field(
        "OpenAssistant/reward-model-deberta-v3-large-v2",
        description="reward_model scorer: a local directory or a model already in the HF cache.",
    )
    reward_model_max_length: int = Field(
        512, ge=16, description="reward_model scorer: tokens per answer; the start is cut first."
    )
    reward_model_threads: int = Field(
        1, ge=1, description="reward_model scorer: torch threads per grading process."
    )
    reward_model_batch_size: int = Field(
        4,
        ge=1,
        le=4,
        description="reward_model scorer: answers per forward pass (the engine sends 4 at most).",
    )

    @model_validator(mode="after")
    def _deadlines_are_sane(self) -> Settings:
        if any(not 0 < deadline <= 600 for deadline in self.scorer_deadlines.values()):
            raise ValueError("scorer_deadlines must lie in (0, 600] seconds")
        if self.grader_timeout_s >= self.deadline_s:
            raise ValueError(
                f"grader_timeout_s ({self.grader_timeout_s}) must be below deadline_s "
                f"({self.deadline_s}): the inner timeout must fire before the worker is killed"
            )
        return self

    @model_validator(mode="after")
    def _one_body_fits_the_budget(self) -> Settings:
        if self.max_pending_bytes < self.max_body_bytes:
            raise ValueError(
                f"max_pending_bytes ({self.max_pending_bytes}) must be at least max_body_bytes "
                f"({self.max_body_bytes}): a body of the largest size must fit when idle"
            )
        return self

    @field_validator("api_token")
    @classmethod
    def _token_is_not_blank(cls, token: SecretStr | None) -> SecretStr | None:
        # Blank must not mean "auth off": an empty Secret would silently open the service.
        if token is None:
            return None
        value = token.get_secret_value().strip()
        if not value:
            raise ValueError(
                "REWARD_API_TOKEN is set but blank: set a token, or unset the variable "
                "to serve without auth"
            )
        return SecretStr(value)

    @model_validator(mode="after")
    def _required_token_is_set(self) -> Settings:
        if self.require_api_token and self.api_token is None:
            raise ValueError(
                "REWARD_REQUIRE_API_TOKEN is true but REWARD_API_TOKEN is not set: refusing "
                "to serve without auth (set the token, or REWARD_REQUIRE_API_TOKEN=false)"
            )
        return self

    @field_validator("code_required_layers")
    @classmethod
    def _required_layers_are_known(cls, required: frozenset[str]) -> frozenset[str]:
        try:
            return parse_required_layers(required)
        except SandboxUnavailable as e:
            raise ValueError(f"REWARD_CODE_REQUIRED_LAYERS: {e}") from None

    @model_validator(mode="after")
    def _code_limits_fit(self) -> Settings:
        if self.code_time_limit_s > self.code_max_time_limit_s:
            raise ValueError("code_time_limit_s must not exceed code_max_time_limit_s")
        if self.code_output_bytes > self.code_max_output_bytes:
            raise ValueError("code_output_bytes must not exceed code_max_output_bytes")
        if self.code_memory_mb > self.code_max_memory_mb:
            raise ValueError("code_memory_mb must not exceed code_max_memory_mb")
        if self.code_max_memory_mb >= self.worker_memory_mb:
            raise ValueError(
                f"code_max_memory_mb ({self.code_max_memory_mb}) must be below worker_memory_mb "
                f"({self.worker_memory_mb}): a run inherits its worker's address-space cap"
            )
        return self

    def deadline_for(self, scorer: str, default: float | None = None) -> float:
        """The hard deadline of one grading with `scorer` (`boxed_<type>`: that of `<type>`).

        `default` is the scorer's own (`Scorer.deadline_s`), used when no setting names it.
        """
        fallback = self.deadline_s if default is None else default
        inner = self.scorer_deadlines.get(scorer.removeprefix("boxed_"), fallback)
        return self.scorer_deadlines.get(scorer, inner)
