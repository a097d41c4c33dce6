"""The objects around the pod: Service, ServiceAccount, autoscaler, budget, network policy."""

from __future__ import annotations

from reward_service.launcher.config import CLIENT_NAMESPACE_LABEL
from reward_service.settings import Settings

from .rendering import Rendered


def _pod_labels(rendered: Rendered) -> dict[str, str]:
    labels: dict[str, str] = rendered.one("Deployment")["spec"]["template"]["metadata"]["labels"]
    return labels


def test_service_is_cluster_ip_slime_reward_on_8000(rendered: Rendered) -> None:
    """The Service is a ClusterIP named slime-reward that selects the pods on port 8000."""
    service = rendered.one("Service")
    assert service["metadata"]["name"] == "slime-reward"
    assert service["spec"]["type"] == "ClusterIP"
    assert service["spec"]["selector"].items() <= _pod_labels(rendered).items()
    [port] = service["spec"]["ports"]
    assert port["port"] == Settings.model_fields["port"].default
    assert port["targetPort"] in {p["name"] for p in rendered.container["ports"]}


def test_service_account_token_is_not_mounted(rendered: Rendered) -> None:
    """The pod runs under its own ServiceAccount with no API token mounted."""
    account = rendered.one("ServiceAccount")
    assert account["automountServiceAccountToken"] is False
    assert rendered.pod_spec["serviceAccountName"] == account["metadata"]["name"]
    assert rendered.pod_spec["automountServiceAccountToken"] is False


def test_autoscaler_scales_the_deployment_on_cpu(rendered: Rendered) -> None:
    """An autoscaling/v2 HPA scales the Deployment on CPU utilisation."""
    hpa = rendered.one("HorizontalPodAutoscaler")
    assert hpa["apiVersion"] == "autoscaling/v2"
    assert hpa["spec"]["scaleTargetRef"]["name"] == rendered.one("Deployment")["metadata"]["name"]
    assert [m["resource"]["name"] for m in hpa["spec"]["metrics"]] == ["cpu"]
    assert "replicas" not in rendered.one("Deployment")["spec"]


def test_disruption_budget_allows_one_and_evicts_unhealthy(rendered: Rendered) -> None:
    """The PDB lets one pod go at a time and never blocks on pods that are not ready."""
    pdb = rendered.one("PodDisruptionBudget")
    assert pdb["apiVersion"] == "policy/v1"
    assert pdb["spec"]["maxUnavailable"] == 1
    assert pdb["spec"]["unhealthyPodEvictionPolicy"] == "AlwaysAllow"
    assert pdb["spec"]["selector"]["matchLabels"].items() <= _pod_labels(rendered).items()


def test_network_policy_admits_client_namespaces_on_8000_only(rendered: Rendered) -> None:
    """Ingress reaches port 8000 only: every pod of labelled client namespaces, and monitoring."""
    policy = rendered.one("NetworkPolicy")["spec"]
    assert policy["podSelector"]["matchLabels"].items() <= _pod_labels(rendered).items()
    [rule] = policy["ingress"]
    assert rule["ports"] == [{"port": 8000, "protocol": "TCP"}]
    selectors = [(p["namespaceSelector"]["matchLabels"], p["podSelector"]) for p in rule["from"]]
    assert selectors == [
        ({CLIENT_NAMESPACE_LABEL: "true"}, {}),
        ({"kubernetes.io/metadata.name": "monitoring"}, {}),
    ]


def test_network_policy_denies_all_egress(rendered: Rendered) -> None:
    """The pod may open no connection at all, DNS included (model-written code runs there)."""
    policy = rendered.one("NetworkPolicy")["spec"]
    assert set(policy["policyTypes"]) == {"Ingress", "Egress"}
    assert policy["egress"] == []
