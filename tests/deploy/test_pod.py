"""The pod the Deployment runs: probes, settings, auth, shutdown, security context."""

from __future__ import annotations

import os
from pathlib import Path

import pydantic
import pytest

from reward_service.scorers.code.settings import CodeSettings
from reward_service.settings import Settings

from .rendering import Manifest, Rendered, render_with_components

PROBES = {"startupProbe": "/readyz", "readinessProbe": "/readyz", "livenessProbe": "/livez"}
TOKEN_SECRET = "slime-reward-token/token"


def _app_paths() -> set[str]:
    app_module = pytest.importorskip("reward_service.server.app")
    app = app_module.create_app(Settings(workers=1))
    return {route.path for route in app.routes if hasattr(route, "path")}


def _port_number(container: Manifest, port: int | str) -> int:
    if isinstance(port, int):
        return port
    named = [p["containerPort"] for p in container["ports"] if p.get("name") == port]
    assert named, f"no container port named {port!r}"
    return int(named[0])


def _uid_from_dockerfile(dockerfile: list[tuple[str, str]]) -> int:
    users = [args for keyword, args in dockerfile if keyword == "USER"]
    assert users, "the Dockerfile sets no USER"
    return int(users[-1].split(":")[0])


def _prestop_pause_s(container: Manifest) -> float:
    pre_stop = container["lifecycle"]["preStop"]
    if "sleep" in pre_stop:
        return float(pre_stop["sleep"]["seconds"])
    command = pre_stop["exec"]["command"]
    assert command[0] == "sleep", f"unexpected preStop {command}"
    return float(command[1])


def test_probes_use_the_intended_endpoints(rendered: Rendered) -> None:
    """Startup and readiness probe /readyz, liveness probes /livez, each with a timeout."""
    for probe, path in PROBES.items():
        spec = rendered.container[probe]
        assert spec["httpGet"]["path"] == path, f"{rendered.overlay}: {probe}"
        assert spec["timeoutSeconds"] >= 1, f"{rendered.overlay}: {probe}"


def test_probe_paths_are_routes_of_the_app(rendered: Rendered) -> None:
    """Every probe path and the Prometheus scrape path are routes the app serves."""
    paths = _app_paths()
    annotations = rendered.one("Deployment")["spec"]["template"]["metadata"]["annotations"]
    wanted = {rendered.container[p]["httpGet"]["path"] for p in PROBES}
    wanted.add(annotations["prometheus.io/path"])
    assert wanted <= paths, f"{rendered.overlay}: {sorted(wanted - paths)} not served"


def test_probe_and_scrape_ports_are_the_listening_port(rendered: Rendered) -> None:
    """Probes and scrape target the port the service listens on by default."""
    default_port = Settings.model_fields["port"].default
    container = rendered.container
    assert int(rendered.config.get("REWARD_PORT", default_port)) == default_port
    for probe in PROBES:
        assert _port_number(container, container[probe]["httpGet"]["port"]) == default_port
    annotations = rendered.one("Deployment")["spec"]["template"]["metadata"]["annotations"]
    assert annotations["prometheus.io/scrape"] == "true"
    assert int(annotations["prometheus.io/port"]) == default_port


def _is_setting(name: str) -> bool:
    """`REWARD_<FIELD>` of Settings, or `REWARD_CODE__<FIELD>` of the code scorer's."""
    scorer, _, field = name.removeprefix("REWARD_").lower().rpartition("__")
    model = {"": Settings, "code": CodeSettings}.get(scorer)
    return model is not None and field in model.model_fields


def test_every_reward_variable_is_a_setting(rendered: Rendered) -> None:
    """Each REWARD_* variable the pod gets names a field of Settings or of a scorer's own."""
    names = set(rendered.config) | {e["name"] for e in rendered.container.get("env", [])}
    reward_names = {n for n in names if n.startswith("REWARD_")}
    unknown = {n for n in reward_names if not _is_setting(n)}
    assert reward_names and not unknown, f"{rendered.overlay}: not settings: {sorted(unknown)}"
    assert not _is_setting("REWARD_CODE__TIME_LIMT_S") and not _is_setting("REWARD_NO_SUCH")


def _set_pod_environment(
    rendered: Rendered, monkeypatch: pytest.MonkeyPatch, secrets: dict[str, str]
) -> None:
    """The environment the container starts with, Secrets read from `secrets`."""
    for name in [n for n in os.environ if n.startswith("REWARD_")]:
        monkeypatch.delenv(name)
    for name, value in rendered.config.items():
        monkeypatch.setenv(name, value)
    for variable in rendered.container.get("env", []):
        ref = variable["valueFrom"]["secretKeyRef"]
        key = f"{ref['name']}/{ref['key']}"
        assert key in secrets, f"{rendered.overlay}: the pod reads Secret {key}"
        monkeypatch.setenv(variable["name"], secrets[key])


def test_config_validates_as_settings(rendered: Rendered, monkeypatch: pytest.MonkeyPatch) -> None:
    """The ConfigMap's values, with the token Secret in place, pass start-up validation."""
    _set_pod_environment(rendered, monkeypatch, {TOKEN_SECRET: "s3cret"})
    assert Settings().api_token is not None


def test_config_requires_seccomp_and_landlock_or_a_uid_of_the_runs_own(
    rendered: Rendered, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The pod fails closed: it refuses to start without the code sandbox's seccomp filter,
    and where runs' reads would be unconfined (no landlock, runs sharing the service's uid)."""
    _set_pod_environment(rendered, monkeypatch, {TOKEN_SECRET: "s3cret"})
    assert {"seccomp", "landlock|uid"} <= Settings().scorer_settings(
        "code", CodeSettings
    ).required_layers


@pytest.mark.parametrize("token", ["", "\n"])
def test_empty_token_secret_stops_the_service(
    rendered: Rendered, monkeypatch: pytest.MonkeyPatch, token: str
) -> None:
    """A token Secret that exists but is empty stops start-up instead of serving open."""
    _set_pod_environment(rendered, monkeypatch, {TOKEN_SECRET: token})
    with pytest.raises(pydantic.ValidationError, match="REWARD_API_TOKEN is set but blank"):
        Settings()


def test_config_without_the_token_stops_the_service(
    rendered: Rendered, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The ConfigMap alone (the token reference patched away) does not validate: auth is on."""
    _set_pod_environment(rendered.without_env(), monkeypatch, {})
    with pytest.raises(pydantic.ValidationError, match="REWARD_REQUIRE_API_TOKEN is true"):
        Settings()


def test_pod_reads_the_config_map(rendered: Rendered) -> None:
    """The container takes its environment from the rendered ConfigMap."""
    refs = [s["configMapRef"]["name"] for s in rendered.container["envFrom"]]
    assert refs == [rendered.one("ConfigMap")["metadata"]["name"]]


def test_api_token_comes_from_a_required_secret(rendered: Rendered) -> None:
    """REWARD_API_TOKEN comes from a Secret the pod cannot start without, and auth is required."""
    token = [e for e in rendered.container["env"] if e["name"] == "REWARD_API_TOKEN"]
    assert len(token) == 1
    ref = token[0]["valueFrom"]["secretKeyRef"]
    assert f"{ref['name']}/{ref['key']}" == TOKEN_SECRET
    assert ref.get("optional", False) is False
    assert rendered.config["REWARD_REQUIRE_API_TOKEN"] == "true"


def test_no_auth_component_serves_without_a_secret(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With components/no-auth the pod reads no Secret and its settings validate without one."""
    open_service = render_with_components(tmp_path, "generic", "no-auth")
    assert not open_service.container.get("env")
    assert open_service.config["REWARD_REQUIRE_API_TOKEN"] == "false"
    _set_pod_environment(open_service, monkeypatch, {})
    assert Settings().api_token is None


def test_service_links_are_off(rendered: Rendered) -> None:
    """No Service environment variables are injected that could collide with REWARD_*."""
    assert rendered.pod_spec["enableServiceLinks"] is False


def test_grace_period_outlasts_pause_and_drain(rendered: Rendered) -> None:
    """terminationGracePeriodSeconds exceeds the preStop pause plus the drain time."""
    drain_s = float(rendered.config.get("REWARD_DRAIN_S", Settings.model_fields["drain_s"].default))
    pause_s = _prestop_pause_s(rendered.container)
    assert rendered.pod_spec["terminationGracePeriodSeconds"] > pause_s + drain_s


def test_container_uid_is_the_dockerfile_user(
    rendered: Rendered, dockerfile: list[tuple[str, str]]
) -> None:
    """The pod runs as the numeric UID the Dockerfile's USER sets."""
    uid = _uid_from_dockerfile(dockerfile)
    pod_uid = rendered.pod_spec["securityContext"]["runAsUser"]
    container_uid = rendered.container["securityContext"].get("runAsUser", pod_uid)
    assert pod_uid == container_uid == uid


def test_security_context_is_restricted(rendered: Rendered) -> None:
    """The pod meets the restricted Pod Security Standard with a read-only root."""
    pod = rendered.pod_spec["securityContext"]
    container = rendered.container["securityContext"]
    assert pod["runAsNonRoot"] is True
    assert pod["seccompProfile"] == {"type": "RuntimeDefault"}
    assert container["allowPrivilegeEscalation"] is False
    assert container["readOnlyRootFilesystem"] is True
    assert container["capabilities"] == {"drop": ["ALL"]}


def test_tmp_is_a_writable_empty_dir(rendered: Rendered) -> None:
    """/tmp, where the grading processes write, is an emptyDir."""
    mounts = {m["mountPath"]: m["name"] for m in rendered.container["volumeMounts"]}
    volumes = {v["name"]: v for v in rendered.pod_spec["volumes"]}
    assert "emptyDir" in volumes[mounts["/tmp"]]
