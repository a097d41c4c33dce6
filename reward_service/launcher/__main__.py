"""`python -m reward_service.launcher ...`: the `slime` commands without the main CLI."""

from __future__ import annotations

import argparse
import sys

from reward_service.launcher.slime_command import register


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m reward_service")
    commands = parser.add_subparsers(dest="command", required=True)
    register(commands)
    args = parser.parse_args(["slime", *(sys.argv[1:] if argv is None else argv)])
    args.run(args)


if __name__ == "__main__":
    main()
