"""Settings are validated at start-up; the worker count follows usable CPUs."""

from __future__ import annotations

from pathlib import Path

import pydantic
import pytest

from reward_service.cpus import available_cpus
from reward_service.errors import InvalidSetting
from reward_service.scorers.code.settings import CodeSettings
from reward_service.settings import Settings


def test_environment_sets_fields(monkeypatch: pytest.MonkeyPatch) -> None:
    """`REWARD_<FIELD>` variables set the matching fields."""
    monkeypatch.setenv("REWARD_PORT", "9001")
    monkeypatch.setenv("REWARD_EXTRA_SCORERS", '{"x": "m:C"}')
    settings = Settings()
    assert settings.port == 9001
    assert settings.extra_scorers == {"x": "m:C"}


BAD = [
    {"port": 0},
    {"deadline_s": 0},
    {"workers": 0},
    {"deadline_s": 2, "grader_timeout_s": 3},
    {"scorer_deadlines": {"reward_model": 0}},
]


@pytest.mark.parametrize("bad", BAD)
def test_bad_values_fail_at_start_up(bad: dict[str, object]) -> None:
    """Out-of-range values and an inner timeout past the deadline are refused."""
    with pytest.raises(pydantic.ValidationError):
        Settings(**bad)  # type: ignore[arg-type]


@pytest.mark.parametrize("drain_s", ["0", "-1", "nan", "3601"])
def test_drain_must_be_positive_and_bounded(monkeypatch: pytest.MonkeyPatch, drain_s: str) -> None:
    """A REWARD_DRAIN_S of 0 or below (once an unbounded drain) or past an hour is refused."""
    monkeypatch.setenv("REWARD_DRAIN_S", drain_s)
    with pytest.raises(pydantic.ValidationError, match="drain_s"):
        Settings()


def _cgroup(root: Path, cpu_max: str) -> Path:
    (root / "sys/fs/cgroup").mkdir(parents=True)
    (root / "sys/fs/cgroup/cpu.max").write_text(cpu_max)
    return root


def test_cgroup_quota_caps_workers(tmp_path: Path) -> None:
    """A 1.5-CPU quota gives 2 workers at most, whatever the host has."""
    assert available_cpus(_cgroup(tmp_path, "150000 100000\n")) <= 2


def test_fractional_quota_below_one_gives_one(tmp_path: Path) -> None:
    """A quota under one CPU still gives one worker."""
    assert available_cpus(_cgroup(tmp_path, "50000 100000\n")) == 1


def test_unlimited_quota_uses_affinity(tmp_path: Path) -> None:
    """Without a quota the count is the CPUs this process may run on."""
    import os

    assert available_cpus(_cgroup(tmp_path, "max 100000\n")) == len(os.sched_getaffinity(0))


@pytest.mark.parametrize(("given", "spares"), [(None, 3), ("0", 0), ("1", 1), ("8", 8)])
def test_spare_workers_are_as_many_as_workers_unless_set(
    monkeypatch: pytest.MonkeyPatch, given: str | None, spares: int
) -> None:
    """`REWARD_WAITING_WORKERS` unset: as many spares as workers; 0: none; N: N."""
    monkeypatch.setenv("REWARD_WORKERS", "3")
    if given is None:
        monkeypatch.delenv("REWARD_WAITING_WORKERS", raising=False)
    else:
        monkeypatch.setenv("REWARD_WAITING_WORKERS", given)
    assert Settings().spare_workers == spares


def test_spare_workers_cannot_be_negative(monkeypatch: pytest.MonkeyPatch) -> None:
    """A negative count of spare workers stops start-up."""
    monkeypatch.setenv("REWARD_WAITING_WORKERS", "-1")
    with pytest.raises(InvalidSetting, match="REWARD_WAITING_WORKERS"):
        Settings.read()


@pytest.mark.parametrize("blank", ["", "   ", "\n"])
def test_blank_api_token_stops_start_up(monkeypatch: pytest.MonkeyPatch, blank: str) -> None:
    """A token that is set but blank is refused, never read as "auth off"."""
    monkeypatch.setenv("REWARD_API_TOKEN", blank)
    with pytest.raises(pydantic.ValidationError, match="REWARD_API_TOKEN is set but blank"):
        Settings()


def test_required_token_that_is_missing_stops_start_up(monkeypatch: pytest.MonkeyPatch) -> None:
    """With REWARD_REQUIRE_API_TOKEN=true and no token, the settings do not validate."""
    monkeypatch.delenv("REWARD_API_TOKEN", raising=False)
    monkeypatch.setenv("REWARD_REQUIRE_API_TOKEN", "true")
    with pytest.raises(pydantic.ValidationError, match="REWARD_REQUIRE_API_TOKEN is true"):
        Settings()


def test_token_from_a_file_loses_its_newline(monkeypatch: pytest.MonkeyPatch) -> None:
    """A token with surrounding whitespace (a Secret made from a file) is the token alone."""
    monkeypatch.setenv("REWARD_API_TOKEN", "s3cret\n")
    monkeypatch.setenv("REWARD_REQUIRE_API_TOKEN", "true")
    token = Settings().api_token
    assert token is not None and token.get_secret_value() == "s3cret"


def test_no_token_and_none_required_serves_open(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without a token and without the requirement, auth is off, as for a local run."""
    monkeypatch.delenv("REWARD_API_TOKEN", raising=False)
    monkeypatch.delenv("REWARD_REQUIRE_API_TOKEN", raising=False)
    assert Settings().api_token is None


@pytest.mark.parametrize(
    "bad",
    [
        {"body_timeout_s": 0},
        {"body_timeout_s": -1},
        {"max_pending_bytes": 8 * 1024 * 1024 - 1},
        {"max_body_bytes": 2048, "max_pending_bytes": 2047},
    ],
)
def test_body_timeout_and_byte_budget_are_validated(bad: dict[str, object]) -> None:
    """The body timeout must be positive and the byte budget must hold one largest body."""
    with pytest.raises(pydantic.ValidationError):
        Settings(**bad)  # type: ignore[arg-type]


def test_body_timeout_and_byte_budget_defaults(monkeypatch: pytest.MonkeyPatch) -> None:
    """20 s for a whole body and 256 MiB of bodies in progress, both settable by environment."""
    assert (Settings().body_timeout_s, Settings().max_pending_bytes) == (20.0, 256 * 1024 * 1024)
    monkeypatch.setenv("REWARD_BODY_TIMEOUT_S", "2.5")
    monkeypatch.setenv("REWARD_MAX_PENDING_BYTES", str(8 * 1024 * 1024))
    assert (Settings().body_timeout_s, Settings().max_pending_bytes) == (2.5, 8 * 1024 * 1024)


def test_start_up_errors_never_print_the_token(monkeypatch: pytest.MonkeyPatch) -> None:
    """A settings error raised beside a token does not echo the token's value."""
    monkeypatch.setenv("REWARD_API_TOKEN", "supersecret-token")
    monkeypatch.setenv("REWARD_DEADLINE_S", "2")
    with pytest.raises(InvalidSetting) as raised:
        Settings.read()
    assert "REWARD_DEADLINE_S" in str(raised.value)
    assert "supersecret" not in str(raised.value)


def test_scorer_options_are_read_as_json(monkeypatch: pytest.MonkeyPatch) -> None:
    """`REWARD_SCORER_OPTIONS` is JSON, options by scorer; unset, no scorer has defaults."""
    assert Settings().scorer_options == {}
    monkeypatch.setenv("REWARD_SCORER_OPTIONS", '{"math_verify": {"extraction": "any"}}')
    assert Settings().scorer_options == {"math_verify": {"extraction": "any"}}


def test_scorer_options_must_map_scorers_to_objects(monkeypatch: pytest.MonkeyPatch) -> None:
    """A value that is not an object of objects stops start-up."""
    monkeypatch.setenv("REWARD_SCORER_OPTIONS", '{"math_verify": "any"}')
    with pytest.raises(pydantic.ValidationError):
        Settings()


def _code(**fields: object) -> CodeSettings:
    return Settings(scorers={"code": fields}).scorer_settings("code", CodeSettings)


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"time_limit_s": 20.0}, "time_limit_s must not exceed max_time_limit_s"),
        ({"memory_mb": 2048, "max_memory_mb": 1024}, "memory_mb must not exceed max_memory_mb"),
        ({"output_bytes": 1 << 24}, "output_bytes must not exceed max_output_bytes"),
    ],
)
def test_code_limits_must_fit_their_caps(fields: dict[str, object], message: str) -> None:
    """A code default above its cap stops start-up."""
    with pytest.raises(InvalidSetting, match=message):
        _code(**fields)


def test_a_scorers_settings_come_from_its_own_prefix(monkeypatch: pytest.MonkeyPatch) -> None:
    """`REWARD_CODE__TIME_LIMIT_S` sets the code scorer's field; `scorers` in the settings wins."""
    monkeypatch.setenv("REWARD_CODE__TIME_LIMIT_S", "1.5")
    assert _code().time_limit_s == 1.5
    assert _code(time_limit_s=0.5).time_limit_s == 0.5
    assert CodeSettings.model_validate({}).time_limit_s == 2.0


def test_required_sandbox_layers_are_read_as_json(monkeypatch: pytest.MonkeyPatch) -> None:
    """`REWARD_CODE__REQUIRED_LAYERS` is a JSON list; unset, no layer beyond the always-on ones."""
    assert _code().required_layers == frozenset()
    monkeypatch.setenv("REWARD_CODE__REQUIRED_LAYERS", '["seccomp", "landlock"]')
    assert _code().required_layers == {"seccomp", "landlock"}


def test_required_sandbox_layers_take_alternatives(monkeypatch: pytest.MonkeyPatch) -> None:
    """An item `a|b` is one requirement met by either layer; it is read in a normal form."""
    monkeypatch.setenv("REWARD_CODE__REQUIRED_LAYERS", '["seccomp", " uid | landlock "]')
    assert _code().required_layers == {"seccomp", "landlock|uid"}
    monkeypatch.setenv("REWARD_CODE__REQUIRED_LAYERS", '["landlock|uid", "uid|landlock"]')
    assert _code().required_layers == {"landlock|uid"}


@pytest.mark.parametrize(
    ("value", "unknown"),
    [
        ('["seccmop"]', "'seccmop'"),
        ('["seccomp", "landlock|uids"]', "'uids'"),
        ('["landlock|"]', "''"),
    ],
)
def test_unknown_required_sandbox_layers_stop_start_up(
    monkeypatch: pytest.MonkeyPatch, value: str, unknown: str
) -> None:
    """A name that is no sandbox layer, alone or among alternatives, fails validation."""
    monkeypatch.setenv("REWARD_CODE__REQUIRED_LAYERS", value)
    with pytest.raises(InvalidSetting, match="REWARD_CODE__REQUIRED_LAYERS") as error:
        _code()
    assert f"unknown sandbox layers [{unknown}]" in str(error.value)
    assert "known: process, rlimits, uid, seccomp, exec_once, landlock" in str(error.value)
