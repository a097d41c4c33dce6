"""Submit a SLIME job to a Ray cluster, its arguments kept as argv.

`ray job submit` joins its entrypoint into one string that `/bin/sh -c` runs,
so the entrypoint is quoted here with `shlex.join`: every argument, spaces,
quotes and `$` included, reaches the job unchanged. The runtime environment
is a dict handed to Ray's job SDK; secrets are named, their values read from
this shell and never printed (nor put on a command line, where `ps` shows them).
"""

from __future__ import annotations

import asyncio
import json
import shlex
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from reward_service.errors import RewardServiceError

DEFAULT_ENTRYPOINT = ("bash", "reward_service/launcher/slime_launcher.sh")

Say = Callable[[str], None]


class SubmitError(RewardServiceError):
    """The job could not be submitted, or it did not succeed."""


@dataclass(frozen=True)
class JobSpec:
    """What to run on the Ray cluster, and with which environment."""

    entrypoint: Sequence[str] = DEFAULT_ENTRYPOINT
    working_dir: str | None = None
    env: Mapping[str, str] = field(default_factory=dict)
    secret_names: Sequence[str] = ()
    submission_id: str | None = None

    def entrypoint_line(self) -> str:
        """The entrypoint as the one shell line Ray runs, each argument quoted."""
        return shlex.join(self.entrypoint)

    def runtime_env(self, secrets: Mapping[str, str]) -> dict[str, Any]:
        """Ray's runtime_env dict; `secrets` holds the values of `secret_names`."""
        runtime_env: dict[str, Any] = {}
        if self.working_dir:
            runtime_env["working_dir"] = self.working_dir
        env_vars = {**self.env, **{name: secrets[name] for name in self.secret_names}}
        if env_vars:
            runtime_env["env_vars"] = env_vars
        return runtime_env

    def describe(self) -> str:
        """The job as JSON, safe to print: each secret shows only the variable it comes from."""
        masked = {name: f"<secret from ${name}>" for name in self.secret_names}
        shown = {"entrypoint": self.entrypoint_line(), "runtime_env": self.runtime_env(masked)}
        if self.submission_id:
            shown["submission_id"] = self.submission_id
        return json.dumps(shown, indent=2)


def _stdout(line: str) -> None:
    print(line, flush=True)


async def _follow_logs(client: Any, job_id: str, say: Say) -> None:
    async for chunk in client.tail_job_logs(job_id):
        say(chunk.rstrip("\n"))


def submit(
    spec: JobSpec,
    secrets: Mapping[str, str],
    *,
    address: str | None = None,
    wait: bool = False,
    say: Say = _stdout,
) -> str:
    """Submit the job and return its id; with `wait`, stream its logs and insist it succeeds."""
    try:
        from ray.job_submission import JobStatus, JobSubmissionClient
    except ImportError:
        raise SubmitError("submitting needs Ray's job SDK: pip install 'ray[default]'") from None
    say(f"submitting to Ray at {address or '$RAY_ADDRESS'}:\n{spec.describe()}")
    try:
        client = JobSubmissionClient(address)
        job_id: str = client.submit_job(
            entrypoint=spec.entrypoint_line(),
            runtime_env=spec.runtime_env(secrets),
            submission_id=spec.submission_id,
        )
    except (ConnectionError, RuntimeError, ValueError) as exc:
        raise SubmitError(f"Ray refused the job: {exc}") from None
    say(f"submitted job {job_id}")
    if wait:
        asyncio.run(_follow_logs(client, job_id, say))
        status = client.get_job_status(job_id)
        if status != JobStatus.SUCCEEDED:
            info = client.get_job_info(job_id)
            raise SubmitError(f"job {job_id} ended {status}: {info.message}")
        say(f"job {job_id} succeeded")
    return job_id
