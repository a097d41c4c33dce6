"""What the `reward-service` sub-commands share: how they register, fail, and read their input.

`cli.py` builds the parser; `bench/bench_command.py`, `launcher/slime_command.py` (`slime`)
and `rayserve/ray_command.py` (`ray`) each add a command with `register(Subparsers)`
and store its handler as `args.run`. Here, below all of them (standard library
and `errors` only), is what they have in common:

* `guarded`: a handler as a sub-command, a `RewardServiceError` one line and exit 1;
* `assignments`: `NAME=VALUE` flags (`slime submit --env`, `ray --replica-env`);
* `secrets_from_env`: the variables `--secret-env NAME` forwards to a Ray job or replica;
* `ray_dashboard`: Ray's own `RAY_ADDRESS`, the default of `--address`;
* `ConfigError`: a flag or environment variable holds a value the command cannot use.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TypeAlias

from reward_service.errors import RewardServiceError

Subparsers: TypeAlias = "argparse._SubParsersAction[argparse.ArgumentParser]"
"""What `register` adds a command to: the main parser's `add_subparsers()`."""


class ConfigError(RewardServiceError, ValueError):
    """A flag or an environment variable holds a value the command cannot use."""


def guarded(
    handler: Callable[[argparse.Namespace], int], command: str
) -> Callable[[argparse.Namespace], None]:
    """`handler` as the `command` sub-command: a `RewardServiceError` becomes one line, exit 1.

    A handler's non-zero return is the exit code.
    """

    def run(args: argparse.Namespace) -> None:
        try:
            code = handler(args)
        except RewardServiceError as exc:
            print(f"reward-service {command}: error: {exc}", file=sys.stderr, flush=True)
            code = 1
        if code:
            sys.exit(code)

    return run


def assignments(
    pairs: Iterable[str], flag: str, error: type[RewardServiceError] = ConfigError
) -> dict[str, str]:
    """`NAME=VALUE` command-line pairs as a dict; a pair without `=` or a name raises `error`."""
    found: dict[str, str] = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep or not name:
            raise error(f"{flag} {pair!r}: expected NAME=VALUE")
        found[name] = value
    return found


def secrets_from_env(
    names: Sequence[str], environ: Mapping[str, str] | None = None
) -> dict[str, str]:
    """The values of the named variables, to forward to a Ray job; `ConfigError` if one is unset."""
    env = os.environ if environ is None else environ
    missing = [name for name in names if name not in env]
    if missing:
        raise ConfigError(f"secret variable(s) not set in this shell: {', '.join(missing)}")
    return {name: env[name] for name in names}


def ray_dashboard(address: str | None, environ: Mapping[str, str] | None = None) -> str:
    """The Ray dashboard to talk to: `address`, else `$RAY_ADDRESS`; `ConfigError` if neither."""
    env = os.environ if environ is None else environ
    found = address or env.get("RAY_ADDRESS")
    if not found:
        raise ConfigError(
            "no Ray dashboard address: pass --address http://<head>:8265 or set RAY_ADDRESS"
        )
    return found
