"""One namespace story: the manifests, the SLIME launcher's defaults and the docs agree.

The service lives in namespace `reward-service` as Service `slime-reward`; training
pods reach it from namespaces labelled `reward-service/client=true`. A change to
any one of the manifests, `reward_service/launcher/config.py` or the docs that the
others do not follow fails here.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from reward_service.launcher.config import CLIENT_NAMESPACE_LABEL, LaunchConfig
from reward_service.launcher.urls import resolve_url

from .rendering import KUBERNETES, ROOT, Rendered, render_directory

DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
MANIFEST_TEXTS = sorted(KUBERNETES.rglob("*.yaml"))
# Where a namespace is named: a Service's cluster DNS name, kubectl's -n/--namespace,
# the launcher's variable. `<...>` placeholders are allowed anywhere.
_NAMESPACE_MENTIONS = (
    re.compile(r"\bslime-reward\.([^.\s/:`'\"]+)\.svc\b"),
    re.compile(r"\bkubectl\b[^\n|;&]*?\s(?:-n|--namespace)[ =](\S+)"),
    re.compile(r"\bSLIME_REWARD_NAMESPACE\"?\s*[=:]\s*\"?([^\s\"`,}|]+)"),
)
_CLUSTER_SCOPED = frozenset({"Namespace"})


def namespace_mentions(text: str) -> list[str]:
    """Each namespace the text names for the reward service, placeholders left out."""
    found = [m[1] for pattern in _NAMESPACE_MENTIONS for m in pattern.finditer(text)]
    return [name for name in found if not name.startswith("<")]


@pytest.fixture(scope="module")
def base() -> Rendered:
    """The kustomize base, rendered on its own."""
    return render_directory(KUBERNETES / "base", "base")


def _namespace(rendered: Rendered) -> str:
    name: str = rendered.one("Namespace")["metadata"]["name"]
    return name


def test_base_sets_the_launcher_default_namespace(base: Rendered) -> None:
    """The base creates, and puts every object in, the namespace the launcher defaults to."""
    namespace = LaunchConfig().namespace
    assert _namespace(base) == namespace
    misplaced = [
        f"{o['kind']}/{o['metadata']['name']}: {o['metadata'].get('namespace')}"
        for o in base.objects
        if o["kind"] not in _CLUSTER_SCOPED and o["metadata"].get("namespace") != namespace
    ]
    assert misplaced == []


def test_every_overlay_keeps_the_namespace(rendered: Rendered) -> None:
    """No shipped overlay moves the service away from the launcher's default namespace."""
    assert _namespace(rendered) == LaunchConfig().namespace
    assert {o["metadata"].get("namespace") for o in rendered.objects} <= {
        None,
        LaunchConfig().namespace,
    }


def test_default_url_names_the_rendered_service(base: Rendered) -> None:
    """`reward-service slime url` with no variable set is the rendered Service's DNS name."""
    service = base.one("Service")
    [port] = service["spec"]["ports"]
    expected = (
        f"http://{service['metadata']['name']}.{service['metadata']['namespace']}"
        f".svc.cluster.local:{port['port']}/score"
    )
    assert resolve_url(LaunchConfig.from_env({})) == expected


def test_network_policy_selects_client_namespaces_by_the_documented_label(base: Rendered) -> None:
    """The NetworkPolicy admits namespaces by the label the launcher's messages name."""
    [rule] = base.one("NetworkPolicy")["spec"]["ingress"]
    selectors = [peer["namespaceSelector"]["matchLabels"] for peer in rule["from"]]
    assert {CLIENT_NAMESPACE_LABEL: "true"} in selectors


@pytest.mark.parametrize("path", DOCS + MANIFEST_TEXTS, ids=lambda p: str(p.relative_to(ROOT)))
def test_docs_and_manifests_name_one_namespace(path: Path) -> None:
    """Every namespace the docs and manifest comments give the service is the launcher's default."""
    others = set(namespace_mentions(path.read_text())) - {LaunchConfig().namespace}
    assert others == set()


@pytest.mark.parametrize("name", ["docs/deploy.md", "docs/slime.md"], ids=lambda name: name)
def test_deploy_docs_give_the_default_url_and_the_client_label(name: str) -> None:
    """The docs a deployer reads show the launcher's default URL and the label to set."""
    text = (ROOT / name).read_text()
    assert resolve_url(LaunchConfig.from_env({})) in text
    assert f"{CLIENT_NAMESPACE_LABEL}=true" in text


def test_deploy_docs_state_the_story_once() -> None:
    """docs/deploy.md has one Namespaces section, which the SLIME and frameworks pages link to."""
    deploy = (ROOT / "docs" / "deploy.md").read_text()
    assert deploy.count("\n### Namespaces\n") == 1
    for name in ("slime.md", "frameworks.md"):
        assert "(deploy.md#namespaces)" in (ROOT / "docs" / name).read_text()


def test_mention_scanner_finds_a_drifted_namespace() -> None:
    """The docs check catches a URL, a kubectl call and a variable naming another namespace."""
    text = (
        "--rm-url http://slime-reward.rl.svc.cluster.local:8000/score\n"
        "kubectl -n training rollout status deploy/slime-reward\n"
        "kubectl get pods --namespace=grading\n"
        '{"SLIME_REWARD_NAMESPACE": "rl"} SLIME_REWARD_NAMESPACE=<namespace>\n'
        "kubectl -n <namespace> get pods; http://slime-reward.<namespace>.svc\n"
    )
    assert namespace_mentions(text) == ["rl", "training", "grading", "rl"]
