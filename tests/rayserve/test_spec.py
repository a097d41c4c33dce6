"""ServeSpec: the Serve config it writes, and the options that build it."""

from __future__ import annotations

import argparse

import pytest
import yaml

from reward_service.rayserve.spec import (
    APP_NAME,
    IMPORT_PATH,
    RayServeError,
    ServeSpec,
    spec_from_args,
    spec_options,
)


def _deployment(spec: ServeSpec) -> dict[str, object]:
    (app,) = spec.config({})["applications"]
    assert app["name"] == APP_NAME and app["import_path"] == IMPORT_PATH
    (entry,) = app["deployments"]
    assert isinstance(entry, dict)
    return entry


def test_each_replica_asks_for_its_cpus_in_the_cpu_node_resource_and_no_gpu() -> None:
    """A replica's actor options ask for C CPUs and C units of reward_cpu, and zero GPUs."""
    options = ServeSpec(cpus_per_replica=3).actor_options({})
    assert options == {"num_cpus": 3, "num_gpus": 0, "resources": {"reward_cpu": 3}}


def test_fixed_replicas_without_max_and_autoscaling_with_it() -> None:
    """Without --max-replicas the count is fixed; with it, Serve autoscales from replicas to max."""
    fixed = _deployment(ServeSpec(replicas=3))
    assert fixed["num_replicas"] == 3 and "autoscaling_config" not in fixed
    scaled = _deployment(ServeSpec(replicas=2, max_replicas=5, target_ongoing_requests=8))
    assert "num_replicas" not in scaled
    assert scaled["autoscaling_config"] == {
        "min_replicas": 2,
        "initial_replicas": 2,
        "max_replicas": 5,
        "target_ongoing_requests": 8,
        "upscale_delay_s": 30.0,
        "downscale_delay_s": 300.0,
        "look_back_period_s": 30.0,
    }


def test_drain_health_check_and_metrics_port_reach_the_deployment() -> None:
    """The drain becomes Serve's graceful shutdown timeout; the metrics port its user_config."""
    entry = _deployment(ServeSpec(drain_s=45, metrics_port=9600))
    assert entry["graceful_shutdown_timeout_s"] == 45
    assert entry["user_config"] == {"metrics_port": 9600}
    assert "user_config" not in _deployment(ServeSpec(metrics_port=None))


def test_yaml_masks_secrets_and_the_config_carries_them() -> None:
    """The printed YAML names a secret's variable only; the deployed config has its value."""
    spec = ServeSpec(env={"REWARD_DEADLINE_S": "20"}, secret_names=("REWARD_API_TOKEN",))
    shown = spec.yaml()
    assert "s3cret" not in shown and "<secret from $REWARD_API_TOKEN>" in shown
    loaded = yaml.safe_load(shown)
    assert loaded["http_options"] == {"host": "0.0.0.0", "port": 8000}
    env = spec.actor_options({"REWARD_API_TOKEN": "s3cret"})["runtime_env"]["env_vars"]
    assert env == {"REWARD_DEADLINE_S": "20", "REWARD_API_TOKEN": "s3cret"}


def test_serve_access_log_is_off_unless_asked() -> None:
    """Serve's per-request log lines (in proxy and replica) are off; the service logs its own."""
    (app,) = ServeSpec().config({})["applications"]
    assert app["logging_config"] == {"enable_access_log": False}
    (app,) = ServeSpec(serve_access_log=True).config({})["applications"]
    assert app["logging_config"] == {"enable_access_log": True}


def test_other_applications_are_kept_in_the_config() -> None:
    """Deploying beside another Serve application keeps it in the config Serve gets."""
    other = {"name": "llm", "route_prefix": "/llm", "import_path": "llm:app"}
    names = [app["name"] for app in ServeSpec().config({}, (other,))["applications"]]
    assert names == [APP_NAME, "llm"]


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"replicas": 0}, "replicas must be at least 1"),
        ({"cpus_per_replica": 0}, "must be positive"),
        ({"replicas": 3, "max_replicas": 2}, "below replicas"),
    ],
)
def test_impossible_specs_are_refused(fields: dict[str, float], message: str) -> None:
    """A spec Serve could never run is refused before anything is deployed."""
    with pytest.raises(RayServeError, match=message):
        ServeSpec(**fields)  # type: ignore[arg-type]


def test_options_build_the_spec() -> None:
    """The command-line options map onto the spec, NAME=VALUE pairs into the environment."""
    parser = argparse.ArgumentParser(parents=[spec_options()])
    args = parser.parse_args(
        [
            *("--replicas", "2", "--cpus-per-replica", "0.5", "--max-replicas", "4"),
            *("--replica-env", "REWARD_DEADLINE_S=20", "--metrics-port", "0"),
            *("--http-port", "9000"),
        ]
    )
    spec = spec_from_args(args)
    assert (spec.replicas, spec.cpus_per_replica, spec.max_replicas) == (2, 0.5, 4)
    assert spec.env == {"REWARD_DEADLINE_S": "20"} and spec.metrics_port is None
    assert spec.port == 9000
    with pytest.raises(RayServeError, match="expected NAME=VALUE"):
        spec_from_args(parser.parse_args(["--replica-env", "NOVALUE"]))
