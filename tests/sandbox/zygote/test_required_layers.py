"""The layers a sandbox reports, and the ones a deployment requires."""

from __future__ import annotations

import pytest

from reward_service.errors import SandboxUnavailable
from reward_service.sandbox import LAYERS
from reward_service.sandbox.zygote_client import ZygoteSandbox, probe_layers


def test_layers_are_known_names_and_include_the_always_on_ones(sandbox: ZygoteSandbox) -> None:
    """Every reported layer is a documented name; process and rlimits are always there."""
    assert {"process", "rlimits"} <= set(sandbox.layers) <= set(LAYERS)
    if {"netns", "mountns", "pidns"} <= set(sandbox.layers):
        assert "namespaces" in sandbox.layers


def test_probe_layers_reports_what_a_sandbox_gets(sandbox: ZygoteSandbox) -> None:
    """The start-up probe names the same layers as a running sandbox."""
    assert probe_layers() == sandbox.layers


def test_a_required_layer_that_is_not_active_fails_the_build() -> None:
    """uid (root only) and userns (non-root only) are never both active: requiring both fails."""
    with pytest.raises(SandboxUnavailable, match="required sandbox layers not active"):
        ZygoteSandbox(required_layers={"uid", "userns"})


def test_an_unknown_required_layer_fails_the_build() -> None:
    """A misspelt layer is an error, not silently ignored."""
    with pytest.raises(SandboxUnavailable, match="unknown sandbox layers"):
        ZygoteSandbox(required_layers={"seccmop"})


@pytest.mark.parametrize(
    ("active", "missing"),
    [
        (("process", "rlimits", "uid", "seccomp"), None),
        (("process", "rlimits", "seccomp", "landlock"), None),
        (("process", "rlimits", "seccomp"), "landlock or uid"),
        (("process", "rlimits", "landlock"), "seccomp"),
    ],
)
def test_required_alternatives_are_checked_against_the_active_layers(
    monkeypatch: pytest.MonkeyPatch, active: tuple[str, ...], missing: str | None
) -> None:
    """`a|b` is met by either layer; building fails naming what is missing and what is active."""
    monkeypatch.setattr(ZygoteSandbox, "_start", lambda self: active)
    required = {"seccomp", "uid|landlock"}
    if missing is None:
        assert ZygoteSandbox(required_layers=required).layers == active
        return
    with pytest.raises(SandboxUnavailable) as error:
        ZygoteSandbox(required_layers=required)
    assert str(error.value) == (
        f"required sandbox layers not active here: {missing} (active: {', '.join(active)})"
    )


def test_a_required_alternative_that_is_active_here_passes(sandbox: ZygoteSandbox) -> None:
    """With a real zygote: an item whose one active alternative is here passes; alone, the
    inactive alternative fails the build."""
    active = next(layer for layer in ("seccomp", "landlock", "uid") if layer in sandbox.layers)
    inactive = next(layer for layer in ("uid", "userns") if layer not in sandbox.layers)
    with ZygoteSandbox(required_layers=[f"{inactive}|{active}"]) as box:
        assert box.layers == sandbox.layers
    with pytest.raises(SandboxUnavailable, match=f"not active here: {inactive} "):
        ZygoteSandbox(required_layers=[inactive])


def test_an_unknown_alternative_fails_the_build() -> None:
    """A misspelt name among alternatives is an error too, before any zygote starts."""
    with pytest.raises(SandboxUnavailable, match=r"unknown sandbox layers \['lanlock'\]"):
        ZygoteSandbox(required_layers={"uid|lanlock"})
