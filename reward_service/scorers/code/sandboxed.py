"""The base of the scorers that run programs (`code`, `run_code`): settings, budget, sandbox.

Both run an answer's programs through the one sandbox port (`sandbox.Sandbox`),
under the `code` scorer's settings (`REWARD_CODE__*`: caps, scratch, required
layers, toolchains), within a budget that leaves the worker room inside the
answer's hard deadline. A worker holds one sandbox per scorer, started when
first needed and stopped with the scorer; tests hand in their own
(`reward_service.testing.RecordingSandbox`).
"""

from __future__ import annotations

from collections.abc import Callable

from reward_service.sandbox import Sandbox
from reward_service.scorers.base import GradingLimits, Scorer, ScorerSettings
from reward_service.scorers.code.settings import CodeSettings, sandbox_for

SandboxFactory = Callable[[CodeSettings], Sandbox]
"""Builds the sandbox a scorer runs programs in (tests inject their own)."""


def default_sandbox(settings: CodeSettings) -> Sandbox:
    """The service's sandbox (a pre-warmed zygote, the toolchains found) as `settings` say.

    Raises `SandboxUnavailable` when it cannot start or lacks a required layer.
    """
    return sandbox_for(settings)


class SandboxedScorer(Scorer):
    """A scorer whose answers run as programs in a sandbox, under `CodeSettings`.

    Building it starts no process: the sandbox starts at `sandbox`'s first
    use (the registry builds every scorer at load, and a deployment that
    never serves this one should not pay for its zygote).
    """

    settings_model = CodeSettings

    def __init__(
        self,
        limits: GradingLimits | None = None,
        settings: ScorerSettings | None = None,
        sandbox_factory: SandboxFactory | None = None,
    ) -> None:
        super().__init__(limits, settings)
        assert isinstance(self.settings, CodeSettings)
        self.code: CodeSettings = self.settings
        self._factory = sandbox_factory or default_sandbox
        self._sandbox: Sandbox | None = None
        deadline_s = self.limits.deadline_for(type(self))
        self.budget_s = max(1.0, deadline_s - self.code.budget_margin_s)
        """Seconds an answer's programs may take in all, builds included: its hard deadline
        less the worker's own margin (`CodeSettings.budget_margin_s`), at least one."""

    @property
    def sandbox(self) -> Sandbox:
        """The sandbox, started at its first use; raises what the factory raises
        (`SandboxUnavailable`, or OSError from the zygote's spawn)."""
        if self._sandbox is None:
            self._sandbox = self._factory(self.code)
        return self._sandbox

    def close(self) -> None:
        """Stop the sandbox, if it started."""
        sandbox, self._sandbox = self._sandbox, None
        if sandbox is not None:
            sandbox.close()
