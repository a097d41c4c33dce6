"""The `code` scorer's settings (`REWARD_CODE__<FIELD>`) and its start-up check."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from typing import TYPE_CHECKING

from pydantic import Field, field_validator, model_validator

from reward_service.errors import InvalidSetting, SandboxUnavailable
from reward_service.sandbox.run_launcher import build_launcher
from reward_service.sandbox.toolchains import TOOLCHAINS, Found, build_pch, discover
from reward_service.sandbox.zygote_client import parse_required_layers
from reward_service.scorers.base import GradingLimits, ScorerSettings, StartupCheck

if TYPE_CHECKING:
    from reward_service.sandbox.zygote_client import ZygoteSandbox

log = logging.getLogger(__name__)

MiB = 1024 * 1024
DEFAULT_TOOLCHAIN_PATH = (
    "/usr/local/bin:/usr/bin:/bin:/usr/local/go/bin:/usr/lib/go/bin:"
    f"{os.path.expanduser('~')}/.cargo/bin"
)
DEFAULT_PCH_DIR = os.path.join(sys.prefix, "share", "reward-service", "pch")
"""Beside the service's Python, which every run may read already."""
DEFAULT_LAUNCHER_DIR = os.path.join(sys.prefix, "share", "reward-service", "launcher")


class CodeSettings(ScorerSettings):
    """Per-test limits a label may ask within, the sandbox's scratch size and required layers."""

    time_limit_s: float = Field(2.0, gt=0, description="seconds per test (wall, CPU) by default")
    max_time_limit_s: float = Field(10.0, gt=0, description="cap on a label's time_limit_s")
    memory_mb: int = Field(256, ge=16, description="address space per test by default")
    max_memory_mb: int = Field(
        1024, ge=16, description="cap on a label's memory_mb (below the worker's memory cap)"
    )
    output_bytes: int = Field(1 * MiB, ge=1024, description="stdout kept per test by default")
    max_output_bytes: int = Field(8 * MiB, ge=1024, description="cap on a label's output_bytes")
    scratch_mb: int = Field(64, ge=1, description="a run's scratch directory, where boundable")
    required_layers: frozenset[str] = Field(
        default_factory=frozenset,
        description='sandbox layers that must be active or start-up fails, JSON ["seccomp", '
        '"landlock|uid"] (an item a|b: any one of them)',
    )
    budget_margin_s: float = Field(
        1.0, gt=0, description="seconds between an answer's tests' budget and its hard deadline"
    )
    languages: frozenset[str] = Field(
        frozenset(TOOLCHAINS),
        description="languages graded besides Python, JSON list (of cpp, java, go, javascript, "
        "rust, c, ruby, php, perl, lua, typescript, R, verilog, csharp, kotlin, kotlin_script, "
        "scala, d, D_ut, racket); python always",
    )
    toolchain_path: str = Field(
        DEFAULT_TOOLCHAIN_PATH, description="PATH the compilers and runtimes are looked up in"
    )
    build_time_s: float = Field(10.0, gt=0, description="seconds (wall, CPU) per compile")
    build_memory_mb: int = Field(
        1024, ge=256, description="address space per compile (below the worker's memory cap)"
    )
    pch_dir: str = Field(
        DEFAULT_PCH_DIR,
        description="where precompiled bits/stdc++.h and contest.h are built at start-up "
        "(g++ -O2 -std=c++17 builds use them); empty: none",
    )
    launcher_dir: str = Field(
        DEFAULT_LAUNCHER_DIR,
        description="where the run launcher is built at start-up (it starts the runs that "
        "exec their program); empty: none, runs are forked",
    )

    @field_validator("languages")
    @classmethod
    def _languages_are_known(cls, languages: frozenset[str]) -> frozenset[str]:
        unknown = languages - set(TOOLCHAINS)
        if unknown:
            raise ValueError(f"unknown languages {sorted(unknown)}; known: {sorted(TOOLCHAINS)}")
        return languages

    @field_validator("required_layers")
    @classmethod
    def _required_layers_are_known(cls, required: frozenset[str]) -> frozenset[str]:
        try:
            return parse_required_layers(required)
        except SandboxUnavailable as e:
            raise ValueError(str(e)) from None

    @model_validator(mode="after")
    def _defaults_within_caps(self) -> CodeSettings:
        for default, cap in (
            ("time_limit_s", "max_time_limit_s"),
            ("memory_mb", "max_memory_mb"),
            ("output_bytes", "max_output_bytes"),
        ):
            if getattr(self, default) > getattr(self, cap):
                raise ValueError(f"{default} must not exceed {cap}")
        return self


def sandbox_for(settings: CodeSettings) -> ZygoteSandbox:
    """The sandbox a worker (or the start-up check) builds from `settings`."""
    from reward_service.sandbox.zygote_client import ZygoteSandbox

    return ZygoteSandbox(
        settings.scratch_mb,
        required_layers=settings.required_layers,
        toolchain_path=settings.toolchain_path,
        languages=settings.languages,
        pch_dir=settings.pch_dir,
        launcher_dir=settings.launcher_dir,
        build_time_s=settings.build_time_s,
        build_memory_mb=settings.build_memory_mb,
    )


def check_sandbox(settings: CodeSettings, limits: GradingLimits) -> StartupCheck:
    """Start a sandbox once, as the workers will, and report its layers and toolchains
    (building the precompiled C++ header first, when it is missing).

    Raises `InvalidSetting` when a run could not fit in its worker, and
    `SandboxUnavailable` when required layers are not active (start-up stops);
    with none required, a sandbox that cannot start is a failed optional check.
    A missing toolchain is reported; its language's answers grade as `error`.
    """
    for name, asked in (
        ("MAX_MEMORY_MB", settings.max_memory_mb),
        ("BUILD_MEMORY_MB", settings.build_memory_mb),
    ):
        if asked >= limits.worker_memory_mb:
            raise InvalidSetting(
                f"REWARD_CODE__{name} ({asked}) must be below REWARD_WORKER_MEMORY_MB "
                f"({limits.worker_memory_mb}): a run inherits its worker's address-space cap"
            )
    required = bool(settings.required_layers)
    pch = prepare_pch(settings)
    built = prepare_launcher(settings)
    toolchains = discover(settings.toolchain_path, sorted(settings.languages), versions=True)
    try:
        with sandbox_for(settings) as sandbox:
            layers = list(sandbox.layers)
            launcher = sandbox.launcher
            if launcher != "on" and built.startswith("off"):  # why none was built
                launcher = built
            closed = {k: v for k, v in sandbox.toolchains.items() if isinstance(v, str)}
    except SandboxUnavailable as exc:
        if required:
            raise
        return StartupCheck(False, f"sandbox unavailable; code answers grade as errors: {exc}")
    toolchains.update((k, closed[k]) for k in toolchains if isinstance(closed.get(k), str))
    found = {k: v.version for k, v in sorted(toolchains.items()) if isinstance(v, Found)}
    missing = {k: v for k, v in sorted(toolchains.items()) if isinstance(v, str)}
    summary = f"sandbox layers: {', '.join(layers)}; languages: {', '.join(['python', *found])}"
    summary += f"; run launcher: {launcher}"
    if missing:
        summary += (
            "; not graded (answers are errors): "
            + ", ".join(f"{language} ({why})" for language, why in missing.items())
            + "; install them, or point REWARD_CODE__TOOLCHAIN_PATH at them"
        )
    details = {"layers": layers, "toolchains": found, "missing_toolchains": missing, "pch": pch}
    details["launcher"] = launcher
    return StartupCheck(True, summary, required, details, degraded=bool(missing))


def prepare_launcher(settings: CodeSettings) -> str:
    """The run launcher, built (by the C compiler in the toolchain path) when missing."""
    if not settings.launcher_dir:
        return "off"
    try:
        return build_launcher(settings.launcher_dir, settings.toolchain_path)
    except OSError as exc:
        # a speed-up only: without it, runs that exec their program are forked
        log.info("no run launcher: %s", exc)
        return f"off: {exc}"


def prepare_pch(settings: CodeSettings) -> str:
    """The precompiled headers (`bits/stdc++.h`, `contest.h`), built (by the service's own
    g++) when missing."""
    if not settings.pch_dir or "cpp" not in settings.languages:
        return "off"
    cpp = discover(settings.toolchain_path, ["cpp"])["cpp"]
    if not isinstance(cpp, Found):
        return f"off: {cpp}"
    try:
        return build_pch(settings.pch_dir, cpp)
    except (OSError, subprocess.SubprocessError) as exc:
        log.warning("no precompiled bits/stdc++.h: %s", exc)
        return f"off: {exc}"
