"""The judge endpoint's settings, shared by `judge` and `math_judge` (`REWARD_JUDGE__<FIELD>`)."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field, SecretStr, model_validator

from reward_service.scorers.base import ScorerSettings

EMPTY_KEY = "EMPTY"
"""The key sent when none is set: vLLM and SGLang without `--api-key` accept any."""


class JudgeSettings(ScorerSettings):
    """Where the judge is, how it is asked, and the bounds on asking it."""

    base_url: str = Field(
        "", description="The endpoint's OpenAI base URL (`http://judge:30000/v1`); empty: none."
    )
    model: str = Field("", description="The model name the endpoint serves.")
    models: frozenset[str] = Field(
        frozenset(), description="Further model names an answer's `model` option may pick."
    )
    api_key: SecretStr | None = Field(None, description="The endpoint's API key.")
    api_key_file: Path | None = Field(None, description="A file holding the API key (a Secret).")
    timeout_s: float = Field(30.0, gt=0, description="One HTTP call's timeout.")
    max_retries: int = Field(
        2, ge=0, description="Retries of a call on 408/409/429/5xx and connection errors."
    )
    deadline_s: float = Field(
        50.0, gt=0, description="One answer's whole time with the judge: waits, calls, retries."
    )
    temperature: float = Field(0.0, ge=0, description="Sampling temperature of the judge.")
    max_tokens: int = Field(512, ge=1, description="The judge's reply length cap.")
    concurrency: int = Field(64, ge=1, description="Calls in flight to the endpoint at most.")
    requests_per_minute: int = Field(0, ge=0, description="Calls started per minute; 0: no cap.")
    tokens_per_minute: int = Field(
        0, ge=0, description="Prompt + reply tokens per minute (estimated first); 0: no cap."
    )
    breaker_failures: int = Field(
        5, ge=1, description="Endpoint failures in a row that open the circuit."
    )
    breaker_open_s: float = Field(
        30.0, gt=0, description="How long an open circuit calls nothing before one probe."
    )
    on_outage: Literal["fallback", "retry_later"] = Field(
        "fallback",
        description="An endpoint outage: the fallback reward with status judge_failed, "
        "or 503 + Retry-After.",
    )
    template_file: Path | None = Field(
        None, description="A prompt template replacing the built-in one ($question, ...)."
    )
    templates: dict[str, Path] = Field(
        default_factory=dict,
        description="More prompt templates by name, for an answer's `template` option.",
    )
    max_answer_chars: int = Field(
        4000,
        ge=1,
        description="Characters of a final answer the judge is shown; a longer one shows its "
        "first quarter and its end, with the count cut between.",
    )
    cache_size: int = Field(65536, ge=0, description="Verdicts kept; 0: no cache.")

    @model_validator(mode="after")
    def _one_key(self) -> JudgeSettings:
        if self.api_key is not None and self.api_key_file is not None:
            raise ValueError("set api_key or api_key_file, not both")
        return self

    def key(self) -> str:
        """The API key: the file's content, the setting, or `EMPTY_KEY`."""
        if self.api_key_file is not None:
            return self.api_key_file.read_text().strip() or EMPTY_KEY
        if self.api_key is not None:
            return self.api_key.get_secret_value() or EMPTY_KEY
        return EMPTY_KEY
