"""`labconsole import OTHER.db`: merge another lab machine's history into this one, by run UUID.

Idempotent (a second import adds nothing and says so), hosts kept apart, a run that differs between the two
histories reported as a conflict and left as it is here; OTHER.db is only read (console.history.merge).
"""

from __future__ import annotations

import argparse
from typing import Any

from console.cli.common import EXIT_OK, db_path, emit_json, error, wants_json

NAME = "import"
HELP = "merge another machine's history into this one (by run id; conflicts reported, nothing overwritten)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("source", metavar="OTHER.db", help="the history file of another Lab Console")


def main(args: argparse.Namespace) -> int:
    from console.history import HistoryError, HistoryStore
    from console.history.merge import merge_history

    try:
        with HistoryStore(db_path(args)) as store:
            report = merge_history(store, args.source)
    except HistoryError as exc:
        return error(exc)
    if wants_json(args):
        emit_json(report)
    else:
        _print_report(report)
    return EXIT_OK


# ---- Private API
def _print_report(report: dict[str, Any]) -> None:
    print(f"import {report['source']}" + (f" (schema v{report['source_schema']}, upgraded in a temporary copy)"
                                          if report["migrated_copy"] else ""))
    if report["nothing_new"]:
        when = f" (last imported {report['imported_before']})" if report.get("imported_before") else ""
        print(f"  nothing new: all {report['runs_skipped']} runs of that file are already here{when}")
    else:
        print(f"  {report['runs_added']} runs added ({report['iterations_added']} iterations, "
              f"{report['samples_added']} telemetry samples), {report['runs_skipped']} already here")
        print(f"  {report['hosts_added']} hosts, {report['sweeps_added']} sweeps, {report['cards_added']} machine "
              f"cards, {report['baselines_added']} baselines, {report['artifacts_added']} artifact records added")
    if report["runs_in_progress"]:
        print(f"  {len(report['runs_in_progress'])} runs still running in that file were left out; import again "
              "once they have finished")
    for conflict in report["conflicts"]:
        print(f"  conflict: run {conflict['run_id'][:8]}: {conflict['why']}")
    for conflict in report["baseline_conflicts"]:
        print(f"  baseline kept: configuration {conflict['fingerprint']}: this history's {conflict['kept_run_id'][:8]} "
              f"(the file has {conflict['source_run_id'][:8]})")
