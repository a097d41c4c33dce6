"""The one settings object: every knob, typed, from `REWARD_*` variables.

Nothing else in the package reads the environment. `Settings()` validates
at start-up, so a bad value stops the service before it takes traffic; each
scorer's own settings (`REWARD_<SCORER>__<FIELD>`, declared by the scorer)
are read through `Settings.scorer_settings` and validated at start-up too.
"""

from __future__ import annotations

import os
from typing import Any, Literal, TypeVar

from pydantic import Field, SecretStr, ValidationError, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from reward_service.cpus import available_cpus
from reward_service.errors import InvalidSetting

S = TypeVar("S", bound=BaseSettings)

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
    waiting_workers: int | None = Field(
        None,
        ge=0,
        description="Spare grading processes at most, started while a worker's grading waits "
        "(a sandboxed program that sleeps or blocks) and answers queue, retired after 60 s "
        "idle; unset: as many as `workers`, 0: none. `workers` gradings use CPU at once, "
        "whatever waits; each spare costs a worker's memory while it lives.",
    )
    default_scorer: str = Field("math_verify", description="Scorer behind plain /score.")
    extra_scorers: dict[str, str] = Field(
        default_factory=dict,
        description='More scorers without packaging, as JSON {"name": "module:Class"}.',
    )
    composites: dict[str, dict[str, Any]] = Field(
        default_factory=lambda: {
            "open_r1": {
                "components": {
                    "accuracy": {"scorer": "math_verify"},
                    "format": {"kind": "think_answer_format"},
                    "tag_count": {"kind": "tag_count"},
                }
            }
        },
        description="Composite scorers, JSON {name: {components, combine, verdict}}, each served "
        "at /score/<name> (docs/groups.md); default: open_r1, open-r1's default GRPO recipe. "
        "Checked at start-up.",
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
        description='Per-scorer deadlines, JSON {"reward_model": 120}; others use their own '
        "or deadline_s.",
    )
    grader_timeout_s: int = Field(
        3, ge=1, description="math_verify's own parse/verify timeout inside a worker (whole s)."
    )
    fallback_reward: float = Field(
        0.0, description="Reward for answers that cannot be graded (timeout, error)."
    )
    max_body_bytes: int = Field(8 * MiB, ge=1024, description="Request bodies above this get 413.")
    max_body_containers: int = Field(
        200_000,
        ge=1000,
        description="JSON arrays and objects above this in one body get 413 (counted off the "
        "event loop).",
    )
    max_batch_items: int = Field(1024, ge=1, description="Items above this in a batch get 413.")
    max_answer_chars: int = Field(
        2_000_000, ge=1, description="Longer responses are not graded (status no_answer)."
    )
    worker_memory_mb: int = Field(
        1536, ge=256, description="Address-space cap per grading process, in MiB."
    )
    worker_nice: int = Field(
        5,
        ge=0,
        le=19,
        description="Niceness added to each grading process and its sandbox runs: under full "
        "load the server (probes, request bodies, screens) is scheduled before grading.",
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
        "sampled",
        description="Per-request access lines (sampled: 1 in REWARD_ACCESS_LOG_SAMPLE).",
    )
    access_log_sample: int = Field(100, ge=1, description="Log one request in this many.")
    log_level: Literal["debug", "info", "warning", "error"] = Field(
        "info", description="Lowest level of the JSON log lines written to stderr."
    )
    nemo_gym_environment: str | None = Field(
        None,
        description="The NeMo Gym environment (math, code_gen, ...) that root /verify, "
        "/aggregate_metrics and /seed_session serve, NeMo Gym pointing at host:port only; "
        "unset: those answer 404, /nemo_gym/<environment>/verify serves every one "
        "(docs/frameworks.md).",
    )
    nemo_gym_scorers: dict[str, str] = Field(
        default_factory=dict,
        description='Scorer per NeMo Gym environment over its own, JSON {"math": "open_r1"}. '
        "Checked at start-up.",
    )
    scorers: dict[str, dict[str, Any]] = Field(
        default_factory=dict,
        description='Scorers\' own settings, JSON {"code": {"time_limit_s": 1}}; each field f '
        "of scorer s is also REWARD_<S>__<F> (this wins over it).",
    )

    @model_validator(mode="after")
    def _deadlines_are_sane(self) -> Settings:
        if any(not 0 < deadline <= 600 for deadline in self.scorer_deadlines.values()):
            raise ValueError("REWARD_SCORER_DEADLINES must lie in (0, 600] seconds")
        if self.grader_timeout_s >= self.deadline_s:
            raise ValueError(
                f"REWARD_GRADER_TIMEOUT_S ({self.grader_timeout_s}) must be below "
                f"REWARD_DEADLINE_S ({self.deadline_s}): the inner timeout must fire before the "
                "worker is killed"
            )
        return self

    @model_validator(mode="after")
    def _one_body_fits_the_budget(self) -> Settings:
        if self.max_pending_bytes < self.max_body_bytes:
            raise ValueError(
                f"REWARD_MAX_PENDING_BYTES ({self.max_pending_bytes}) must be at least "
                f"REWARD_MAX_BODY_BYTES ({self.max_body_bytes}): a body of the largest size must "
                "fit when idle"
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

    @property
    def spare_workers(self) -> int:
        """Spare grading processes at most: `waiting_workers`, or as many as `workers` unset."""
        return self.workers if self.waiting_workers is None else self.waiting_workers

    @classmethod
    def read(cls, **overrides: Any) -> Settings:
        """The settings from the environment and `overrides` (flags), or `InvalidSetting`
        naming each variable refused and what it takes (`REWARD_ACCESS_LOG: Input should be
        'off', 'sampled' or 'all'`), never pydantic's field names."""
        try:
            return cls(**overrides)
        except ValidationError as exc:
            raise InvalidSetting(
                "invalid settings:\n" + "\n".join(_problems(exc, cls.model_config["env_prefix"]))
            ) from None

    def scorer_settings(self, name: str, model: type[S]) -> S:
        """Scorer `name`'s own settings: `REWARD_<NAME>__<FIELD>` from the environment, then
        `scorers[name]`; raises `InvalidSetting` for a value it refuses or a name it lacks."""
        prefix = f"{self.model_config.get('env_prefix', '')}{name.upper()}__"
        given = {k.upper() for k in os.environ if k.upper().startswith(prefix)}
        unknown = sorted(given - {prefix + f.upper() for f in model.model_fields})
        unknown += [
            f"scorers.{name}.{key}"
            for key in self.scorers.get(name, {})
            if key not in model.model_fields
        ]
        if unknown:
            known = ", ".join(sorted(model.model_fields))
            raise InvalidSetting(
                f"scorer {name!r} has no setting {unknown[0]}; its settings: {known}"
            )
        try:
            return model(_env_prefix=prefix, **self.scorers.get(name, {}))
        except ValidationError as exc:
            problems = "; ".join(_problems(exc, prefix))
            raise InvalidSetting(f"scorer {name!r} settings: {problems}") from None


def _problems(exc: ValidationError, prefix: str) -> list[str]:
    """Each error of `exc` as the variable a user sets and what is wrong with its value."""
    found = []
    for error in exc.errors():
        where = "_".join(str(part) for part in error["loc"][:1]).upper()
        detail = ".".join(str(part) for part in error["loc"][1:])
        message = error["msg"].removeprefix("Value error, ")
        name = f"{prefix}{where}" + (f" ({detail})" if detail else "")
        found.append(f"{name}: {message}" if where else message)
    return found
