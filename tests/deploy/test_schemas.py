"""Rendered manifests against the real Kubernetes API schemas, offline."""

from __future__ import annotations

import pytest
from kubernetes_validate import ValidationError, validate

from .rendering import Rendered

# Oldest and newest Kubernetes versions the manifests are claimed to work on.
VERSIONS = ("1.29.0", "1.33.0")


@pytest.mark.parametrize("version", VERSIONS)
def test_rendered_objects_pass_strict_schema_validation(rendered: Rendered, version: str) -> None:
    """Every rendered object validates strictly (no unknown fields) for each claimed version."""
    errors = []
    for obj in rendered.objects:
        try:
            validate(obj, version, strict=True)
        except ValidationError as error:
            path = ".".join(str(p) for p in error.path)
            errors.append(f"{obj['kind']}/{obj['metadata']['name']}: {path}: {error.message}")
    assert errors == [], f"{rendered.overlay} on {version}:\n" + "\n".join(errors)
