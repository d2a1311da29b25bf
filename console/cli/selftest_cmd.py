"""`labconsole self-test`: prove this install works (window, a real run per engine, the history)."""

from __future__ import annotations

import argparse

NAME = "self-test"
HELP = "prove this install works (window, run, history)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--out", required=True, metavar="DIR")


def main(args: argparse.Namespace) -> int:
    from console.ui.selftest import self_test

    return self_test(args.out, db=getattr(args, "db", None))
