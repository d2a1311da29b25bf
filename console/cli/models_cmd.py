"""`labconsole models`: the model catalog (built in code, deterministic random weights)."""

from __future__ import annotations

import argparse

from console.cli.common import EXIT_OK, emit_json, wants_json

NAME = "models"
HELP = "the model catalog"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """No options of its own."""


def main(args: argparse.Namespace) -> int:
    from engines import catalog

    models = catalog.describe()
    if wants_json(args):
        emit_json({"models": models})
    else:
        for m in models:
            print(f"{m['name']:6} {m['description']}  input {m['input']}")
    return EXIT_OK
