"""`labconsole import OTHER.db`: merge another lab machine's history into this one, by run UUID.

Idempotent (a second import adds nothing and says so), hosts kept apart, a run that differs between the two
histories reported as a conflict and left as it is here; OTHER.db is only read (console.history.merge). A run of
OTHER.db whose stored JSON cannot be read (damaged: which field, why) is refused and listed, the others are
imported, and the exit status is 1: a script learns that not everything came over.
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
    from pathlib import Path

    from console.history import HistoryError, HistoryStore
    from console.history.merge import check_source, merge_history

    try:
        check_source(Path(args.source).expanduser(), db_path(args))  # before the target is opened (or created)
        with HistoryStore(db_path(args)) as store:
            report = merge_history(store, args.source)
    except HistoryError as exc:
        return error(exc)
    if wants_json(args):
        emit_json(report)
    else:
        _print_report(report)
    refused = report.get("runs_refused") or []
    if refused:
        return error(f"{len(refused)} run(s) of {report['source']} are damaged and were not imported "
                     f"({', '.join(item['run_id'][:8] for item in refused[:5])}{' …' if len(refused) > 5 else ''}); "
                     "the other runs were. Fix: import them again from a sound copy of that history (a backup, or "
                     "the machine that recorded them)")
    return EXIT_OK


# ---- Private API
def _print_report(report: dict[str, Any]) -> None:
    from console.history import damage

    print(f"import {report['source']}" + (f" (schema v{report['source_schema']}, upgraded in a temporary copy)"
                                          if report["migrated_copy"] else ""))
    if report["nothing_new"]:
        when = f" (last imported {report['imported_before']})" if report.get("imported_before") else ""
        every = "the other" if report.get("runs_refused") else "all"
        print(f"  nothing new: {every} {report['runs_skipped']} runs of that file are already here{when}")
    else:
        print(f"  {report['runs_added']} runs added ({report['iterations_added']} iterations, "
              f"{report['samples_added']} telemetry samples), {report['runs_skipped']} already here")
        print(f"  {report['hosts_added']} hosts, {report['sweeps_added']} sweeps, {report['cards_added']} machine "
              f"cards, {report['baselines_added']} baselines, {report['artifacts_added']} artifact records added")
    if report["runs_in_progress"]:
        print(f"  {len(report['runs_in_progress'])} runs still running in that file were left out; import again "
              "once they have finished")
    for refused in report.get("runs_refused") or []:
        print(f"  refused: run {refused['run_id'][:8]} is damaged in that file ({damage.describe(refused['damaged'])})"
              "; not imported")
    for conflict in report["conflicts"]:
        print(f"  conflict: run {conflict['run_id'][:8]}: {conflict['why']}")
    for conflict in report["baseline_conflicts"]:
        print(f"  baseline kept: configuration {conflict['fingerprint']}: this history's {conflict['kept_run_id'][:8]} "
              f"(the file has {conflict['source_run_id'][:8]})")
