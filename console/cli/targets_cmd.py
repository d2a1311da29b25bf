"""`labconsole targets`: the hardware targets of this machine, usable or not and why."""

from __future__ import annotations

import argparse

from console.cli.common import EXIT_OK, emit_json, wants_json

NAME = "targets"
HELP = "hardware targets on this machine"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--refresh", action="store_true", help="rediscover instead of using the per-host cache")


def main(args: argparse.Namespace) -> int:
    from console.machine.targets import discover_targets

    targets = discover_targets(refresh=args.refresh)
    if wants_json(args):
        emit_json({"targets": targets})
    else:
        for t in targets:
            state = "available" if t["available"] else f"not available ({t['reason']})"
            print(f"{t['id']:8} {t['name'][:48]:48} {state}")
    return EXIT_OK
