"""URL resolution and the `SLIME_REWARD_*` configuration."""

from __future__ import annotations

import pytest

from reward_service.launcher.config import (
    ConfigError,
    LaunchConfig,
    ray_dashboard,
    secrets_from_env,
)
from reward_service.launcher.urls import (
    batch_url,
    group_url,
    readyz_url,
    resolve_url,
    score_url,
    scorer_url,
    with_detail,
)


@pytest.mark.parametrize(
    ("environ", "expected"),
    [
        ({}, "http://slime-reward.reward-service.svc.cluster.local:8000/score"),
        (
            {"POD_NAMESPACE": "training"},
            "http://slime-reward.reward-service.svc.cluster.local:8000/score",
        ),
        (
            {"SLIME_REWARD_NAMESPACE": "grading"},
            "http://slime-reward.grading.svc.cluster.local:8000/score",
        ),
        (
            {"SLIME_REWARD_SERVICE": "rm", "SLIME_REWARD_PORT": "9000"},
            "http://rm.reward-service.svc.cluster.local:9000/score",
        ),
        (
            {"SLIME_REWARD_SCORER": "deepscaler"},
            "http://slime-reward.reward-service.svc.cluster.local:8000/score/deepscaler",
        ),
        (
            {"SLIME_REWARD_DETAIL": "1"},
            "http://slime-reward.reward-service.svc.cluster.local:8000/score?detail=1",
        ),
        (
            {
                "SLIME_REWARD_TOKEN": "c0ffee",
                "SLIME_REWARD_SCORER": "f1",
                "SLIME_REWARD_DETAIL": "1",
            },
            "http://slime-reward.reward-service.svc.cluster.local:8000/t/c0ffee/score/f1?detail=1",
        ),
        (
            {"SLIME_REWARD_URL": "http://10.0.0.7:8000/score", "SLIME_REWARD_TOKEN": "c0ffee"},
            "http://10.0.0.7:8000/t/c0ffee/score",
        ),
        (
            {"SLIME_REWARD_URL": "http://10.0.0.7:8000/score/exact", "SLIME_REWARD_SCORER": "x"},
            "http://10.0.0.7:8000/score/exact",
        ),
        (
            {"SLIME_REWARD_URL": "http://rm:8000/score?detail=1", "SLIME_REWARD_DETAIL": "true"},
            "http://rm:8000/score?detail=1",
        ),
    ],
)
def test_resolve_url_from_environment(environ: dict[str, str], expected: str) -> None:
    """Each combination of SLIME_REWARD_* variables resolves to the documented URL."""
    assert resolve_url(LaunchConfig.from_env(environ)) == expected


def test_token_never_shows_in_the_config_repr() -> None:
    """The launch configuration can be printed or logged without its token."""
    config = LaunchConfig.from_env({"SLIME_REWARD_TOKEN": "c0ffee"})
    assert config.token == "c0ffee"
    assert "c0ffee" not in repr(config)


def test_token_with_a_url_that_is_not_score_is_a_config_error() -> None:
    """A token cannot be placed in a URL whose path is not /score: say so, do not guess."""
    config = LaunchConfig.from_env(
        {"SLIME_REWARD_URL": "http://gw/reward/score", "SLIME_REWARD_TOKEN": "c0ffee"}
    )
    with pytest.raises(ConfigError, match="put the token in the URL yourself"):
        resolve_url(config)


@pytest.mark.parametrize(
    "environ",
    [
        {"SLIME_REWARD_PORT": "eighty"},
        {"SLIME_REWARD_PORT": "70000"},
        {"SLIME_REWARD_DETAIL": "maybe"},
        {"SLIME_REWARD_WAIT_S": "-1"},
        {"SLIME_REWARD_ATTEMPTS": "0"},
        {"SLIME_REWARD_TOKEN": "has/slash"},
    ],
)
def test_bad_variable_is_a_config_error(environ: dict[str, str]) -> None:
    """An unusable SLIME_REWARD_* value fails at once, naming the variable."""
    with pytest.raises(ConfigError, match=next(iter(environ))):
        LaunchConfig.from_env(environ)


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("http://rm:8000/score", "http://rm:8000/score/batch"),
        ("http://rm:8000/score/exact", "http://rm:8000/score/exact/batch"),
        ("http://rm:8000/score?detail=1", "http://rm:8000/score/batch?detail=1"),
    ],
)
def test_batch_url(url: str, expected: str) -> None:
    """The batch endpoint sits under the scoring URL, query kept."""
    assert batch_url(url) == expected


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("http://rm:8000/score", "http://rm:8000/score/group"),
        ("http://rm:8000/t/tok/score/open_r1/", "http://rm:8000/t/tok/score/open_r1/group"),
        ("http://rm:8000/score?detail=1", "http://rm:8000/score/group?detail=1"),
    ],
)
def test_group_url(url: str, expected: str) -> None:
    """The group endpoint sits under the scoring URL, query kept."""
    assert group_url(url) == expected


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("http://rm:8000/score", "http://rm:8000/score/f1"),
        ("http://rm:8000/score/exact?detail=1", "http://rm:8000/score/f1?detail=1"),
        ("http://rm:8000/score?extraction=any&detail=1", "http://rm:8000/score/f1?detail=1"),
        ("http://rm:8000/t/abc/score", "http://rm:8000/t/abc/score/f1"),
        ("http://rm:8000/grade", None),
    ],
)
def test_scorer_url(url: str, expected: str | None) -> None:
    """Another scorer replaces or appends the scorer segment; its options are dropped."""
    assert scorer_url(url, "f1") == expected


def test_readyz_url_is_at_the_root() -> None:
    """/readyz is on the scoring URL's host and port, whatever its path and query."""
    assert readyz_url("http://rm:8000/t/x/score/exact?detail=1") == "http://rm:8000/readyz"


def test_with_detail_is_idempotent() -> None:
    """Asking twice for detail leaves one `detail=1` and keeps other parameters."""
    assert with_detail(with_detail("http://rm/score?a=b")) == "http://rm/score?a=b&detail=1"


def test_secrets_from_env_names_missing_variables() -> None:
    """A secret to forward that is unset here fails with its name, never a value."""
    assert secrets_from_env(["A"], {"A": "1"}) == {"A": "1"}
    with pytest.raises(ConfigError, match="HF_TOKEN"):
        secrets_from_env(["HF_TOKEN"], {})


@pytest.mark.parametrize(
    ("base", "scorer", "expected"),
    [
        ("http://10.0.0.2:8000", None, "http://10.0.0.2:8000/score"),
        ("http://10.0.0.2:8000/", "math_verify", "http://10.0.0.2:8000/score/math_verify"),
        ("http://[fd00::2]:8000", "a/b", "http://[fd00::2]:8000/score/a%2Fb"),
    ],
)
def test_score_url_on_a_serve_endpoint(base: str, scorer: str | None, expected: str) -> None:
    """A Serve endpoint becomes the scoring URL, the scorer quoted as one path segment."""
    assert score_url(base, scorer) == expected


def test_ray_addresses_come_from_their_own_variables() -> None:
    """SLIME_REWARD_RAY_ADDRESS locates the service; RAY_ADDRESS only defaults --address."""
    config = LaunchConfig.from_env({"SLIME_REWARD_RAY_ADDRESS": "http://head:8265"})
    assert config.ray_address == "http://head:8265"
    assert LaunchConfig.from_env({"RAY_ADDRESS": "http://head:8265"}).ray_address is None
    assert ray_dashboard(None, {"RAY_ADDRESS": "http://h:8265"}) == "http://h:8265"
    assert (
        ray_dashboard("http://given:8265", {"RAY_ADDRESS": "http://h:8265"}) == "http://given:8265"
    )
    with pytest.raises(ConfigError, match="--address"):
        ray_dashboard(None, {})
