"""The deployment files as data: overlays rendered by kubectl, the Dockerfile parsed."""

from __future__ import annotations

import copy
import functools
import os
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from kubernetes_validate import ValidationError, validate

from tests.conftest import tool_missing

ROOT = Path(__file__).resolve().parents[2]
KUBERNETES = ROOT / "kubernetes"
DOCKERFILE = ROOT / "reward_service.Dockerfile"
OVERLAYS = sorted(p.name for p in (KUBERNETES / "overlays").iterdir() if p.is_dir())

Manifest = dict[str, Any]

KUBERNETES_VERSIONS = ("1.29.0", "1.33.0")
"""Oldest and newest Kubernetes versions the manifests are claimed to work on."""


@dataclass(frozen=True)
class Rendered:
    """One overlay rendered by `kubectl kustomize`."""

    overlay: str
    objects: list[Manifest]

    def one(self, kind: str) -> Manifest:
        """The single object of `kind`; fails if there are none or several."""
        found = [o for o in self.objects if o["kind"] == kind]
        assert len(found) == 1, f"{self.overlay}: expected one {kind}, found {len(found)}"
        return found[0]

    @property
    def pod_spec(self) -> Manifest:
        spec: Manifest = self.one("Deployment")["spec"]["template"]["spec"]
        return spec

    @property
    def container(self) -> Manifest:
        containers: list[Manifest] = self.pod_spec["containers"]
        assert len(containers) == 1, f"{self.overlay}: expected one container"
        return containers[0]

    @property
    def config(self) -> dict[str, str]:
        """The REWARD_* settings the pod gets from its ConfigMap."""
        data: dict[str, str] = self.one("ConfigMap")["data"]
        return data

    def without_env(self) -> Rendered:
        """The same objects with the container's `env` (its Secret references) removed."""
        objects = copy.deepcopy(self.objects)
        rendered = Rendered(f"{self.overlay} without env", objects)
        rendered.container.pop("env", None)
        return rendered


@functools.cache
def render(overlay: str) -> Rendered:
    """`kubectl kustomize` of one overlay; skips the test where kubectl is missing (fails in CI)."""
    return render_directory(KUBERNETES / "overlays" / overlay, overlay)


def render_directory(directory: Path, name: str) -> Rendered:
    """`kubectl kustomize` of any kustomization directory, named `name` in messages."""
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        tool_missing("kubectl not found on PATH: the Kubernetes manifest checks need it to render")
    proc = subprocess.run(
        [kubectl, "kustomize", str(directory)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 0, f"kubectl kustomize {name} failed:\n{proc.stderr}"
    objects = [o for o in yaml.safe_load_all(proc.stdout) if o]
    return Rendered(name, objects)


def render_with_components(tmp_path: Path, overlay: str, *components: str) -> Rendered:
    """An overlay with components of `kubernetes/components/` added, as a user would add them."""

    # kustomize refuses absolute paths to other kustomizations: refer to them relatively.
    def relative(target: Path) -> str:
        return os.path.relpath(target, tmp_path)

    kustomization = {
        "apiVersion": "kustomize.config.k8s.io/v1beta1",
        "kind": "Kustomization",
        "resources": [relative(KUBERNETES / "overlays" / overlay)],
        "components": [relative(KUBERNETES / "components" / c) for c in components],
    }
    (tmp_path / "kustomization.yaml").write_text(yaml.safe_dump(kustomization))
    return render_directory(tmp_path, f"{overlay}+{'+'.join(components)}")


def schema_errors(objects: list[Manifest], version: str) -> list[str]:
    """What strict validation against Kubernetes `version`'s API schemas finds, per object."""
    errors = []
    for obj in objects:
        try:
            validate(obj, version, strict=True)
        except ValidationError as error:
            path = ".".join(str(p) for p in error.path)
            errors.append(f"{obj['kind']}/{obj['metadata']['name']}: {path}: {error.message}")
    return errors


def dockerfile_instructions(text: str) -> Iterator[tuple[str, str]]:
    """(KEYWORD, arguments) per instruction, comments dropped, continuations joined."""
    logical = ""
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        if stripped.endswith("\\"):
            logical += stripped[:-1] + " "
            continue
        logical += stripped
        keyword, _, rest = logical.partition(" ")
        yield keyword.upper(), rest.strip()
        logical = ""
