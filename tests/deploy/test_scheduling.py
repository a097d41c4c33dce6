"""Where the pods may run: never on a GPU node, spread out, sized to the pool."""

from __future__ import annotations

import math
import re

from reward_service.settings import Settings

from .rendering import Manifest, Rendered

# Each is ANDed in the one required nodeSelectorTerm; (key, operator, required value).
GPU_EXCLUSION: frozenset[tuple[str, str, str | None]] = frozenset(
    {
        ("nvidia.com/gpu.present", "NotIn", "true"),
        ("feature.node.kubernetes.io/pci-10de.present", "NotIn", "true"),
        ("feature.node.kubernetes.io/amd-gpu", "NotIn", "true"),
        ("karpenter.k8s.aws/instance-gpu-count", "DoesNotExist", None),
        ("eks.amazonaws.com/instance-gpu-count", "DoesNotExist", None),
        ("k8s.amazonaws.com/accelerator", "DoesNotExist", None),
        ("cloud.google.com/gke-accelerator", "DoesNotExist", None),
    }
)
NON_GPU_RESOURCES = frozenset({"cpu", "memory", "ephemeral-storage"})
MiB = 1024 * 1024
HTTP_PROCESS_MIB = 256
_QUANTITY = re.compile(r"^(\d+(?:\.\d+)?)(m|Ki|Mi|Gi|Ti|k|M|G|T)?$")
_FACTORS = {
    None: 1,
    "m": 1e-3,
    "k": 1e3,
    "M": 1e6,
    "G": 1e9,
    "T": 1e12,
    "Ki": 2**10,
    "Mi": 2**20,
    "Gi": 2**30,
    "Ti": 2**40,
}


def _quantity(value: str | int) -> float:
    match = _QUANTITY.match(str(value))
    assert match, f"unparsed quantity {value!r}"
    return float(match[1]) * _FACTORS[match[2]]


def gpu_exclusion_problems(pod_spec: Manifest) -> list[str]:
    """What is wrong with a pod spec's GPU exclusion; empty when it holds."""
    required = (
        pod_spec.get("affinity", {})
        .get("nodeAffinity", {})
        .get("requiredDuringSchedulingIgnoredDuringExecution", {})
    )
    terms: list[Manifest] = required.get("nodeSelectorTerms", [])
    if len(terms) != 1:
        return [f"{len(terms)} nodeSelectorTerms: terms are ORed, the exclusion needs exactly one"]
    present = {
        (e["key"], e["operator"], value)
        for e in terms[0].get("matchExpressions", [])
        for value in (e.get("values") or [None])
    }
    return [
        f"not in the term: {key} {op} {value}"
        for key, op, value in sorted(GPU_EXCLUSION - present, key=str)
    ]


def _containers(pod_spec: Manifest) -> list[Manifest]:
    return [*pod_spec.get("initContainers", []), *pod_spec["containers"]]


def test_gpu_exclusion_is_one_anded_term(rendered: Rendered) -> None:
    """Every overlay requires one nodeSelectorTerm that ANDs all the GPU exclusions."""
    assert gpu_exclusion_problems(rendered.pod_spec) == [], rendered.overlay


def _pod_spec_with_terms(terms: list[list[Manifest]]) -> Manifest:
    required = {"nodeSelectorTerms": [{"matchExpressions": term} for term in terms]}
    return {
        "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": required}}
    }


def test_gpu_exclusion_check_rejects_split_terms(rendered: Rendered) -> None:
    """The exclusion check fails when the expressions are split into ORed terms."""
    [term] = rendered.pod_spec["affinity"]["nodeAffinity"][
        "requiredDuringSchedulingIgnoredDuringExecution"
    ]["nodeSelectorTerms"]
    split = _pod_spec_with_terms([[e] for e in term["matchExpressions"]])
    assert gpu_exclusion_problems(split) != []


def test_gpu_exclusion_check_rejects_a_missing_expression() -> None:
    """The exclusion check fails when one GPU expression is absent from the term."""
    nvidia_only = {"key": "nvidia.com/gpu.present", "operator": "NotIn", "values": ["true"]}
    problems = gpu_exclusion_problems(_pod_spec_with_terms([[nvidia_only]]))
    assert len(problems) == len(GPU_EXCLUSION) - 1


def test_no_toleration_lets_the_pod_onto_gpu_nodes(rendered: Rendered) -> None:
    """No toleration matches a GPU taint, and none tolerates every taint."""
    for toleration in rendered.pod_spec.get("tolerations", []):
        key = toleration.get("key")
        assert key is not None, f"{rendered.overlay}: a key-less toleration tolerates GPU taints"
        assert "gpu" not in key.lower(), f"{rendered.overlay}: tolerates {key}"


def test_no_gpu_resource_is_requested(rendered: Rendered) -> None:
    """Containers request and limit only CPU, memory and ephemeral storage."""
    for container in _containers(rendered.pod_spec):
        resources = container.get("resources", {})
        names = {*resources.get("requests", {}), *resources.get("limits", {})}
        assert names <= NON_GPU_RESOURCES, f"{rendered.overlay}: {sorted(names)}"


def test_cpu_request_equals_limit(rendered: Rendered) -> None:
    """CPU request equals limit, so the quota the pool is sized from is what was scheduled."""
    resources = rendered.container["resources"]
    assert _quantity(resources["requests"]["cpu"]) == _quantity(resources["limits"]["cpu"])
    assert _quantity(resources["requests"]["memory"]) == _quantity(resources["limits"]["memory"])


def test_memory_covers_every_worker_cap(rendered: Rendered) -> None:
    """The memory limit holds every grading process at its cap plus the HTTP process."""
    resources = rendered.container["resources"]
    config = rendered.config
    workers = int(config.get("REWARD_WORKERS", math.ceil(_quantity(resources["limits"]["cpu"]))))
    cap_mib = int(
        config.get("REWARD_WORKER_MEMORY_MB", Settings.model_fields["worker_memory_mb"].default)
    )
    needed = (workers * cap_mib + HTTP_PROCESS_MIB) * MiB
    assert _quantity(resources["limits"]["memory"]) >= needed


def test_pods_spread_over_hosts_and_zones(rendered: Rendered) -> None:
    """Topology spread constraints cover hosts and zones and select the service's pods."""
    labels = rendered.one("Deployment")["spec"]["template"]["metadata"]["labels"]
    constraints = rendered.pod_spec["topologySpreadConstraints"]
    assert {c["topologyKey"] for c in constraints} == {
        "kubernetes.io/hostname",
        "topology.kubernetes.io/zone",
    }
    for constraint in constraints:
        assert constraint["labelSelector"]["matchLabels"].items() <= labels.items()


def test_hyperpod_runs_on_its_instance_group_through_health_checks(hyperpod: Rendered) -> None:
    """HyperPod pods select an instance group and tolerate the health-check taint only."""
    spec = hyperpod.pod_spec
    assert "sagemaker.amazonaws.com/instance-group-name" in spec["nodeSelector"]
    assert spec["tolerations"] == [
        {
            "key": "sagemaker.amazonaws.com/node-health-status",
            "operator": "Equal",
            "value": "Unschedulable",
            "effect": "NoSchedule",
        }
    ]
