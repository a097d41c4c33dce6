"""Fixtures for the deployment checks: rendered overlays and the parsed Dockerfile."""

from __future__ import annotations

import pytest

from .rendering import DOCKERFILE, OVERLAYS, Rendered, dockerfile_instructions, render


@pytest.fixture(params=OVERLAYS)
def rendered(request: pytest.FixtureRequest) -> Rendered:
    """Each overlay, rendered (once per session)."""
    return render(request.param)


@pytest.fixture
def hyperpod() -> Rendered:
    """The HyperPod overlay, rendered."""
    return render("hyperpod")


@pytest.fixture(scope="session")
def dockerfile() -> list[tuple[str, str]]:
    """The Dockerfile's instructions as (KEYWORD, arguments), continuations joined."""
    return list(dockerfile_instructions(DOCKERFILE.read_text()))
