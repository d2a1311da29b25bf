"""The command line: same engine, same history as the window; `--json` on every read command.

One module per command; each has NAME, HELP, `add_arguments(parser)` and `main(args) -> int`. Adding a command
= one module + one line in COMMANDS.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from console import paths
from console.cli import (
    analyze_cmd,
    baseline_cmd,
    cluster_cmd,
    collectives_cmd,
    compare_cmd,
    demo_cmd,
    doctor_cmd,
    export_cmd,
    gpu_check_cmd,
    history_cmd,
    import_cmd,
    machine_cmd,
    make_data_cmd,
    models_cmd,
    node_cmd,
    regressions_cmd,
    report_cmd,
    rules_cmd,
    run_cmd,
    selftest_cmd,
    storage_cmd,
    sweep_cmd,
    targets_cmd,
    telemetry_cmd,
    topology_cmd,
    ttt_cmd,
    whatif_cmd,
)
from console.cli.arguments import history_path
from console.cli.common import EXIT_CANCELLED, EXIT_FAILED, EXIT_OK, EXIT_USAGE

__all__ = ["main", "build_parser", "EXIT_OK", "EXIT_FAILED", "EXIT_USAGE", "EXIT_CANCELLED"]

COMMANDS = (run_cmd, analyze_cmd, history_cmd, targets_cmd, models_cmd, compare_cmd, sweep_cmd, selftest_cmd,
            telemetry_cmd, make_data_cmd, machine_cmd, whatif_cmd, export_cmd, import_cmd, baseline_cmd,
            regressions_cmd, report_cmd, demo_cmd, node_cmd, cluster_cmd, doctor_cmd, rules_cmd, storage_cmd,
            collectives_cmd, topology_cmd, gpu_check_cmd, ttt_cmd)


# ---- Public API
def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="labconsole", description="Lab Console: run, measure and keep AI workloads.")
    parser.add_argument("--version", action=_VersionAction)
    parser.add_argument("--db", default=None, metavar="PATH", type=history_path, help="history database")
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--db", default=argparse.SUPPRESS, metavar="PATH", type=history_path,
                        help=f"history database (default: ${paths.DB_ENV} or {paths.history_db(None)})")
    common.add_argument("--json", action="store_true", default=argparse.SUPPRESS, help="print one JSON document")
    sub = parser.add_subparsers(dest="command")
    for command in COMMANDS:
        parents = [common] if getattr(command, "USES_HISTORY", True) else []
        command.add_arguments(sub.add_parser(command.NAME, parents=parents, help=command.HELP,
                                             description=getattr(command, "DESCRIPTION", None)))
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """The exit status: argparse's own errors (exit 2), --help and --version (0) are returned, not raised, so a
    caller of main() always gets a number. Standard output that cannot be written (a full disk, a reader that left)
    is exit 1 with one line, or 141 quietly, never a traceback (console.cli.stdout_guard)."""
    from console.cli.stdout_guard import run_guarded

    return run_guarded(lambda: _dispatch(argv))


# ---- Private API
def _dispatch(argv: Sequence[str] | None) -> int:
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else 2
    command = next((c for c in COMMANDS if c.NAME == args.command), None)
    uses_history = command is None or getattr(command, "USES_HISTORY", True)
    env_db = os.environ.get(paths.DB_ENV) if uses_history and getattr(args, "db", None) is None else None
    if env_db:  # checked as --db is: a name the system cannot take is a usage error before anything runs
        try:
            history_path(env_db)
        except argparse.ArgumentTypeError as exc:
            from console.cli.common import fail

            return fail(f"the {paths.DB_ENV} environment variable: {exc}")
    if args.command is None:
        from console.ui.app import run_app

        return run_app(db=args.db)
    return command.main(args)


class _VersionAction(argparse.Action):
    """`--version`: the console's, the engines', Qt's and Python's versions, and a bundle's build date.

    Computed only when asked (package metadata lookups cost start-up time), never by importing the engines.
    """

    def __init__(self, option_strings, dest=argparse.SUPPRESS, default=argparse.SUPPRESS,
                 help="show the versions of Lab Console, its engines, Qt and Python, then exit"):  # noqa: A002
        super().__init__(option_strings, dest=dest, default=default, nargs=0, help=help)

    def __call__(self, parser, namespace, values, option_string=None):
        from console.about import version_text

        print(version_text(), file=sys.stdout, flush=True)
        parser.exit()
