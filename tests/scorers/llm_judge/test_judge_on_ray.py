"""The judge's settings reach each Ray Serve replica as docs/judge.md shows them, the key masked."""

from __future__ import annotations

import argparse

import pytest

from reward_service.rayserve.spec import spec_from_args, spec_options
from reward_service.scorers.llm_judge.settings import JudgeSettings
from reward_service.settings import Settings

SECRET = "sk-ray-never-printed-1234"
ARGS = [
    *("--replica-env", "REWARD_JUDGE__BASE_URL=http://judge-head:30000/v1"),
    *("--replica-env", "REWARD_JUDGE__MODEL=judge"),
    *("--replica-env", "REWARD_JUDGE__CONCURRENCY=32"),
    *("--replica-secret-env", "REWARD_JUDGE__API_KEY"),
]
"""The judge options of `reward-service ray deploy` in docs/judge.md."""


def test_replicas_get_the_judge_settings_and_the_printed_config_masks_the_key(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Each replica's environment holds the judge settings and the key; the YAML shown to the
    user names the key's variable only; the replica's environment validates as JudgeSettings."""
    parser = argparse.ArgumentParser(parents=[spec_options()])
    spec = spec_from_args(parser.parse_args(ARGS))
    env = spec.actor_options({"REWARD_JUDGE__API_KEY": SECRET})["runtime_env"]["env_vars"]
    assert env["REWARD_JUDGE__API_KEY"] == SECRET
    assert SECRET not in spec.yaml() and "<secret from $REWARD_JUDGE__API_KEY>" in spec.yaml()
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    settings = Settings().scorer_settings("judge", JudgeSettings)
    assert (settings.base_url, settings.model, settings.concurrency) == (
        "http://judge-head:30000/v1",
        "judge",
        32,
    )
    assert settings.key() == SECRET
