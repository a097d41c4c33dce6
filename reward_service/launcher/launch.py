"""Launch: the train command's argv, plus the flags that point SLIME at the service.

The caller's arguments are never re-split or re-quoted: they arrive as a list
and leave as the same list, with `--rm-type remote_rm --rm-url <URL>` (and
`--reward-key reward` for the detail answer) appended unless already there.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import NoReturn

DEFAULT_TRAIN_COMMAND = ("python3", "train.py")

DETAIL_REWARD_KEY = "reward"


def flag_value(argv: Sequence[str], flag: str) -> str | None:
    """The value given to `flag` (`--flag V` or `--flag=V`), the last one winning."""
    value = None
    for i, arg in enumerate(argv):
        if arg == flag and i + 1 < len(argv):
            value = argv[i + 1]
        elif arg.startswith(flag + "="):
            value = arg[len(flag) + 1 :]
    return value


def has_flag(argv: Sequence[str], flag: str) -> bool:
    """Whether `flag` appears, bare or as `--flag=V`."""
    return any(arg == flag or arg.startswith(flag + "=") for arg in argv)


def slime_argv(command: Sequence[str], url: str, reward_key: str | None) -> list[str]:
    """`command` untouched, then the reward flags SLIME lacks.

    `--reward-key` is left out beside `--custom-rm-path`: a custom reward
    function (such as our batch adapter) returns plain numbers.
    """
    argv = list(command) or list(DEFAULT_TRAIN_COMMAND)
    if not has_flag(argv, "--rm-type"):
        argv += ["--rm-type", "remote_rm"]
    if not has_flag(argv, "--rm-url"):
        argv += ["--rm-url", url]
    if reward_key and not has_flag(argv, "--reward-key") and not has_flag(argv, "--custom-rm-path"):
        argv += ["--reward-key", reward_key]
    return argv


def bypassed(argv: Sequence[str]) -> str | None:
    """Why SLIME, run with `argv`, would never call the service, or None when it will.

    A `--rm-type` other than `remote_rm` (without `--custom-rm-path`, which SLIME calls
    instead) grades in SLIME's own process: the launcher keeps the caller's flags, and says so.
    """
    rm_type = flag_value(argv, "--rm-type")
    if rm_type is None or rm_type == "remote_rm" or has_flag(argv, "--custom-rm-path"):
        return None
    return (
        f"the train command sets --rm-type {rm_type}: SLIME grades in its own process and never "
        "calls the service; drop the flag (or pass --rm-type remote_rm) to use it"
    )


def exec_train(argv: Sequence[str]) -> NoReturn:
    """Replace this process with the train command, so signals reach it directly."""
    os.execvp(argv[0], list(argv))
