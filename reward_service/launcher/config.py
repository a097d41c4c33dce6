"""`LaunchConfig`: the SLIME launcher's defaults, read from the environment once.

The service has its own `Settings`; this is the client side (the launcher,
the preflight and the batch adapter run in the training job), so it is a
separate, smaller object. Every `SLIME_REWARD_*` variable is read here and
nowhere else:

    SLIME_REWARD_URL        full scoring URL; wins over the five below
    SLIME_REWARD_RAY_ADDRESS  Ray dashboard (http://<head>:8265) whose Serve
                            application `reward-service` is the service
    SLIME_REWARD_SERVICE    Kubernetes Service name           (slime-reward)
    SLIME_REWARD_NAMESPACE  its namespace                      (reward-service)
    SLIME_REWARD_PORT       its port                           (8000)
    SLIME_REWARD_SCORER     scorer name, appended as /score/<scorer>
    SLIME_REWARD_TOKEN      the service's API token, sent as /t/<token>/score
    SLIME_REWARD_DETAIL     1: ask for the detail object, SLIME reads it with
                            --reward-key reward                (0)
    SLIME_REWARD_WAIT_S     preflight: how long to wait for /readyz (600)
    SLIME_REWARD_PREFLIGHT  0: launch without the preflight    (1)
    SLIME_REWARD_ATTEMPTS   batch adapter: attempts per request (8)
    SLIME_REWARD_TIMEOUT_S  batch adapter: seconds per attempt  (120)

The defaults are where the manifests in `kubernetes/` put the service: Service
`slime-reward` in namespace `reward-service`, reachable from the namespaces
labelled `reward-service/client=true` (tests/deploy/test_namespace.py holds the
manifests, these defaults and the docs to one story).

`ConfigError`, `assignments`, `secrets_from_env` (the variables named by
`slime submit --secret-env`) and `ray_dashboard` (Ray's own `RAY_ADDRESS`, the
default of `--address`) live in `reward_service.subcommands`, shared with the
`ray` commands, and are re-exported here.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from reward_service.subcommands import ConfigError as ConfigError
from reward_service.subcommands import assignments as assignments
from reward_service.subcommands import ray_dashboard as ray_dashboard
from reward_service.subcommands import secrets_from_env as secrets_from_env

SERVICE = "slime-reward"
SERVICE_NAMESPACE = "reward-service"
CLIENT_NAMESPACE_LABEL = "reward-service/client"
"""Namespaces with this label set to "true" may reach the service (its NetworkPolicy)."""

_URL_SAFE = re.compile(r"[A-Za-z0-9._~-]+")

_TRUE = frozenset({"1", "true", "yes", "on"})
_FALSE = frozenset({"0", "false", "no", "off", ""})


def _flag(environ: Mapping[str, str], name: str, default: bool) -> bool:
    raw = environ.get(name)
    if raw is None:
        return default
    value = raw.strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise ConfigError(f"{name}={raw!r}: expected 1 or 0")


def _number(environ: Mapping[str, str], name: str, default: float, *, minimum: float) -> float:
    raw = environ.get(name)
    if raw is None or not raw.strip():
        return default
    try:
        value = float(raw)
    except ValueError:
        raise ConfigError(f"{name}={raw!r}: expected a number") from None
    if value < minimum:
        raise ConfigError(f"{name}={raw!r}: must be at least {minimum:g}")
    return value


def _token(environ: Mapping[str, str]) -> str | None:
    token = environ.get("SLIME_REWARD_TOKEN", "").strip()
    if token and not _URL_SAFE.fullmatch(token):
        # The value is never echoed: it is a secret.
        raise ConfigError(
            "SLIME_REWARD_TOKEN: it travels in the URL path, so only letters, digits and "
            "'.', '_', '~', '-' may appear in it (e.g. openssl rand -hex 32)"
        )
    return token or None


@dataclass(frozen=True)
class LaunchConfig:
    """Where the reward service is and how the launcher talks to it."""

    url: str | None = None
    ray_address: str | None = None
    service: str = SERVICE
    namespace: str = SERVICE_NAMESPACE
    port: int = 8000
    token: str | None = field(default=None, repr=False)
    scorer: str | None = None
    detail: bool = False
    wait_s: float = 600.0
    preflight: bool = True
    attempts: int = 8
    timeout_s: float = 120.0

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> LaunchConfig:
        """Read every `SLIME_REWARD_*` variable; raise `ConfigError` on a bad value."""
        env = os.environ if environ is None else environ
        port = _number(env, "SLIME_REWARD_PORT", 8000, minimum=1)
        if port != int(port) or port > 65535:
            raise ConfigError(f"SLIME_REWARD_PORT={env['SLIME_REWARD_PORT']!r}: not a TCP port")
        attempts = _number(env, "SLIME_REWARD_ATTEMPTS", 8, minimum=1)
        return cls(
            url=env.get("SLIME_REWARD_URL") or None,
            ray_address=env.get("SLIME_REWARD_RAY_ADDRESS") or None,
            service=env.get("SLIME_REWARD_SERVICE") or SERVICE,
            namespace=env.get("SLIME_REWARD_NAMESPACE") or SERVICE_NAMESPACE,
            port=int(port),
            token=_token(env),
            scorer=env.get("SLIME_REWARD_SCORER") or None,
            detail=_flag(env, "SLIME_REWARD_DETAIL", False),
            wait_s=_number(env, "SLIME_REWARD_WAIT_S", 600.0, minimum=0),
            preflight=_flag(env, "SLIME_REWARD_PREFLIGHT", True),
            attempts=int(attempts),
            timeout_s=_number(env, "SLIME_REWARD_TIMEOUT_S", 120.0, minimum=0.001),
        )
