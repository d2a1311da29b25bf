"""`labconsole rules show`: the validity rules in force and where each came from; and `--rules FILE` for the
commands that judge runs (run, sweep, analyze).

The rules are the defaults, then the lab's rules.toml in the data folder, then --rules FILE (see
console.analysis.rules_file). A bad file is a usage error (exit 2) naming the file, the key and what is allowed.
"""

from __future__ import annotations

import argparse
from typing import Any

from console.cli.common import EXIT_OK, emit_json, fail, wants_json

NAME = "rules"
HELP = "the validity rules in force (defaults, the data folder's rules.toml, --rules FILE)"
USES_HISTORY = False


def add_arguments(parser: argparse.ArgumentParser) -> None:
    actions = parser.add_subparsers(dest="rules_action", metavar="ACTION")
    show = actions.add_parser("show", help="print the rules in force and where each came from")
    show.add_argument("--json", action="store_true", help="print one JSON document")
    add_rules_option(show)


def main(args: argparse.Namespace) -> int:
    if getattr(args, "rules_action", None) != "show":
        return fail("say what to do with the rules: `labconsole rules show [--json] [--rules FILE]`")
    found = rules_for(args)
    if isinstance(found, int):
        return found
    document = {"schema": "labconsole.rules/1", **found.to_dict(), "lab_file": str(_lab_file())}
    if wants_json(args):
        emit_json(document)
        return EXIT_OK
    print(f"validity rules in force (the lab's file: {document['lab_file']}"
          f"{'' if _lab_file().is_file() else ', not present: defaults'})")
    for key, value in document["rules"].items():
        print(f"  {key:26} {_shown(value):14} {_origin(document['sources'].get(key))}")
    return EXIT_OK


# ---- Public API (for run, sweep and analyze)
def add_rules_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--rules", metavar="FILE", default=None,
                        help="judge validity by the rules in this TOML file (keys as `labconsole rules show` lists "
                             "them), over the data folder's rules.toml and the defaults")


def rules_for(args: argparse.Namespace) -> Any:
    """The RulesInForce for the command, or the exit code (2) after saying what is wrong with a rules file."""
    from console.analysis.rules_file import RulesError, in_force

    try:
        return in_force(getattr(args, "rules", None))
    except RulesError as exc:
        return fail(f"rules file {exc}")


# ---- Private API
def _lab_file():
    from console.analysis.rules_file import data_file

    return data_file()


def _shown(value: Any) -> str:
    if isinstance(value, list):
        return ", ".join(_shown(v) for v in value)
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return f"{value:g}"
    return str(value)


def _origin(source: str | None) -> str:
    from console.analysis.rules_file import DATA_FILE, OPTION

    return {DATA_FILE: "data folder rules.toml", OPTION: "--rules"}.get(source or "", "default")

