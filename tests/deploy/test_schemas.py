"""Rendered manifests against the real Kubernetes API schemas, offline."""

from __future__ import annotations

import pytest

from .rendering import KUBERNETES_VERSIONS, Rendered, schema_errors


@pytest.mark.parametrize("version", KUBERNETES_VERSIONS)
def test_rendered_objects_pass_strict_schema_validation(rendered: Rendered, version: str) -> None:
    """Every rendered object validates strictly (no unknown fields) for each claimed version."""
    errors = schema_errors(rendered.objects, version)
    assert errors == [], f"{rendered.overlay} on {version}:\n" + "\n".join(errors)
