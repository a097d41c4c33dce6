"""The `judge-egress` component on every overlay: the pod may reach the judge and the DNS,
nothing else, and its judge settings validate."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from reward_service.scorers.llm_judge.settings import JudgeSettings
from reward_service.settings import Settings

from .rendering import (
    KUBERNETES_VERSIONS,
    OVERLAYS,
    Manifest,
    Rendered,
    render_with_components,
    schema_errors,
)


@pytest.fixture(scope="module", params=OVERLAYS)
def with_judge(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Rendered:
    """Each overlay with the judge-egress component."""
    return render_with_components(tmp_path_factory.mktemp("judge"), request.param, "judge-egress")


def _policies(rendered: Rendered) -> dict[str, Manifest]:
    return {o["metadata"]["name"]: o for o in rendered.objects if o["kind"] == "NetworkPolicy"}


@pytest.mark.parametrize("version", KUBERNETES_VERSIONS)
def test_component_passes_strict_schema_validation(with_judge: Rendered, version: str) -> None:
    """Every object of every overlay with the component validates strictly."""
    errors = schema_errors(with_judge.objects, version)
    assert errors == [], f"{with_judge.overlay} on {version}:\n" + "\n".join(errors)


def test_egress_opens_to_the_judge_and_dns_only(with_judge: Rendered) -> None:
    """The added policy lets the service's pods reach the judge namespace on the judge ports and
    kube-dns on 53; the base policy still allows no egress of its own."""
    policies = _policies(with_judge)
    assert policies["slime-reward"]["spec"]["egress"] == []
    judge = policies["slime-reward-judge-egress"]["spec"]
    pod_labels = with_judge.one("Deployment")["spec"]["template"]["metadata"]["labels"]
    assert judge["podSelector"]["matchLabels"].items() <= pod_labels.items()
    assert judge["policyTypes"] == ["Egress"] and "ingress" not in judge
    to_judge, to_dns = judge["egress"]
    assert to_judge["to"] == [
        {
            "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "judge"}},
            "podSelector": {},
        }
    ]
    assert {p["port"] for p in to_judge["ports"]} == {30000, 8000}
    assert to_dns["to"][0]["podSelector"] == {"matchLabels": {"k8s-app": "kube-dns"}}
    assert sorted((p["port"], p["protocol"]) for p in to_dns["ports"]) == [
        (53, "TCP"),
        (53, "UDP"),
    ]
    assert not any("ipBlock" in peer for rule in judge["egress"] for peer in rule["to"])


def test_judge_settings_validate_and_point_at_the_judge_service(
    with_judge: Rendered, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The component's REWARD_JUDGE__* values are the judge's settings, valid at start-up, and
    the URL's host and port are what the policy opens."""
    for name in [n for n in os.environ if n.startswith("REWARD_")]:
        monkeypatch.delenv(name)
    for name, value in with_judge.config.items():
        monkeypatch.setenv(name, value)
    settings = Settings(api_token="s3cret").scorer_settings("judge", JudgeSettings)
    assert settings.base_url == "http://judge.judge.svc.cluster.local:30000/v1"
    assert settings.model and settings.api_key is None


def test_api_key_comes_from_an_optional_secret(with_judge: Rendered) -> None:
    """The judge's key is read from Secret slime-reward-judge when it exists; an in-cluster judge
    without a key needs none, so the pod starts without it."""
    [key] = [e for e in with_judge.container["env"] if e["name"] == "REWARD_JUDGE__API_KEY"]
    assert key["valueFrom"]["secretKeyRef"] == {
        "name": "slime-reward-judge",
        "key": "api-key",
        "optional": True,
    }


def test_overlays_without_the_component_reach_nothing(tmp_path: Path) -> None:
    """Without the component the pod has one policy and no egress at all."""
    from .rendering import render

    for overlay in OVERLAYS:
        policies = _policies(render(overlay))
        assert (
            list(policies) == ["slime-reward"] and policies["slime-reward"]["spec"]["egress"] == []
        )
