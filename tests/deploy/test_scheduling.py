"""Where the pods may run: never on a GPU node, spread out, sized to the pool."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping

from reward_service.scorers.code.settings import CodeSettings
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
KiB = 1024
MiB = 1024 * KiB
# The HTTP process's memory, measured by loadtest/memory.py (README, Sizing): ~58 MiB
# idle; ~27 KiB more per request in flight (2048 small requests held: +54 MiB); it grows
# 1.2-1.7x the body bytes admitted (1 MiB and 8 MiB bodies, batches of 1000 items), so
# 3x leaves room for the copies sent to workers and fragmentation.
HTTP_BASE_MIB = 200
# A sandbox zygote's RSS: ~17 MiB measured (python, the stdlib it preloads).
ZYGOTE_MIB = 32
HTTP_IDLE_MIB = 64
PER_REQUEST_KIB = 32
PENDING_FACTOR = 3
SLIME_CONNECTIONS = 64
SLIME_LARGE_BODY = 1 * MiB
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


def _setting(config: Mapping[str, str], name: str) -> int:
    """A setting as the pod gets it: from the ConfigMap, else its default (`code__<field>`:
    the code scorer's own)."""
    scorer, _, field = name.rpartition("__")
    model = CodeSettings if scorer == "code" else Settings
    return int(config.get(f"REWARD_{name.upper()}", model.model_fields[field].default))


def memory_needed(config: Mapping[str, str], cpu_limit: str) -> int:
    """Bytes the container needs: every worker at its cap with its sandbox (zygote, one run
    at its cap, a scratch dir), the HTTP process, bodies held."""
    workers = int(config.get("REWARD_WORKERS", math.ceil(_quantity(cpu_limit))))
    workers += int(config.get("REWARD_WAITING_WORKERS", workers))  # unset: as many spares
    sandbox_mib = (
        ZYGOTE_MIB + _setting(config, "code__max_memory_mb") + _setting(config, "code__scratch_mb")
    )
    workers_bytes = workers * (_setting(config, "worker_memory_mb") + sandbox_mib) * MiB
    pending_bytes = PENDING_FACTOR * _setting(config, "max_pending_bytes")
    return workers_bytes + HTTP_BASE_MIB * MiB + pending_bytes


def test_memory_covers_workers_http_process_and_bodies(rendered: Rendered) -> None:
    """The limit holds every worker at its cap, the HTTP process and 3x the body budget."""
    limits = rendered.container["resources"]["limits"]
    limit, needed = _quantity(limits["memory"]), memory_needed(rendered.config, limits["cpu"])
    assert limit >= needed, f"{rendered.overlay}: {limit / MiB:.0f} MiB < {needed / MiB:.0f} MiB"


def test_memory_check_fails_when_code_runs_may_grow(rendered: Rendered) -> None:
    """Doubling a code run's memory cap without raising the limit breaks the memory arithmetic."""
    limits = rendered.container["resources"]["limits"]
    cap = _setting(rendered.config, "code__max_memory_mb")
    grown = {**rendered.config, "REWARD_CODE__MAX_MEMORY_MB": str(2 * cap)}
    assert _quantity(limits["memory"]) < memory_needed(grown, limits["cpu"])


def test_memory_check_fails_when_spare_workers_are_left_to_their_default(
    rendered: Rendered,
) -> None:
    """Spare workers on (REWARD_WAITING_WORKERS unset: as many as workers) without raising the
    limit breaks the memory arithmetic: the manifests turn them off."""
    limits = rendered.container["resources"]["limits"]
    unset = {k: v for k, v in rendered.config.items() if k != "REWARD_WAITING_WORKERS"}
    assert rendered.config.get("REWARD_WAITING_WORKERS") == "0"
    assert _quantity(limits["memory"]) < memory_needed(unset, limits["cpu"])


def test_memory_check_fails_when_the_body_budget_grows(rendered: Rendered) -> None:
    """Doubling the body budget without raising the limit breaks the memory arithmetic."""
    limits = rendered.container["resources"]["limits"]
    pending = _setting(rendered.config, "max_pending_bytes")
    grown = {**rendered.config, "REWARD_MAX_PENDING_BYTES": str(2 * pending)}
    assert _quantity(limits["memory"]) < memory_needed(grown, limits["cpu"])


def test_admission_bounds_fit_each_other(rendered: Rendered) -> None:
    """Queue, body cap and body budget agree: SLIME never meets them, the base covers the queue."""
    max_queue = _setting(rendered.config, "max_queue")
    max_body = _setting(rendered.config, "max_body_bytes")
    pending = _setting(rendered.config, "max_pending_bytes")
    assert pending >= max_body, "a body of the largest size could never be admitted"
    assert pending >= SLIME_CONNECTIONS * SLIME_LARGE_BODY, "one SLIME client could meet 503"
    assert max_queue >= SLIME_CONNECTIONS, "one SLIME client could meet 503"
    assert HTTP_IDLE_MIB * MiB + max_queue * PER_REQUEST_KIB * KiB <= HTTP_BASE_MIB * MiB


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
