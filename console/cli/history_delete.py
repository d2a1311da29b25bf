"""`labconsole history rm RUN…` and `labconsole history prune --older-than DAYS`: runs leave the history.

Each deletes the runs and every row of theirs in one transaction (console.history.store_delete), so a refused or
failed call leaves the history as it was. `prune` lists what it would delete with --dry-run (reading only, like
`history`), asks on a terminal, and without a terminal wants --yes: a script never deletes by accident. A run
that a console is recording now is refused with the fix, and prune keeps the configurations' baselines unless
--include-baselines. The files artifact rows named (traces, reports) stay
on disk, and the output lists them. Exit codes as every command: 0 done, 1 failed or not confirmed, 2 bad usage
(an unknown run or prefix, a prune without --yes where no terminal can ask) — and nothing was deleted.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from console.cli.arguments import history_failure
from console.cli.common import EXIT_OK, db_path, emit_json, error, fail, wants_json
from console.cli.numbers import number

NAME = "history.delete"  # the --json document's schema (console.cli.schema)
MAX_DAYS = 100 * 366


# ---- Public API
def add_actions(parser: argparse.ArgumentParser) -> None:
    """`rm` and `prune` under `history` (which lists runs when no action is named)."""
    actions = parser.add_subparsers(dest="history_action", metavar="ACTION", title="actions (without one: list)")
    rm = actions.add_parser("rm", help="delete runs and everything stored with them",
                            description="Delete the named runs and every row of theirs (latencies, samples, ops, "
                                        "artifacts, tags, a baseline pointing at them) in one transaction.")
    rm.add_argument("runs", metavar="RUN", nargs="+", help="run id or a unique prefix (≥ 4 characters)")
    prune = actions.add_parser("prune", help="delete runs older than DAYS (asks first on a terminal)",
                               description="Delete every run that started more than DAYS ago (never a running "
                                           "one), and every row of theirs, in one transaction.")
    prune.add_argument("--older-than", metavar="DAYS", required=True, type=number(0, MAX_DAYS, unit="days"),
                       help="runs that started more than DAYS ago (0: every finished run)")
    from console.history.schema import FINAL_STATUSES

    prune.add_argument("--status", choices=FINAL_STATUSES, default=None, help="only runs with this status")
    prune.add_argument("--include-baselines", action="store_true",
                       help="delete runs that are a configuration's baseline too (kept by default)")
    prune.add_argument("--dry-run", action="store_true", help="list what would be deleted; delete nothing")
    prune.add_argument("--yes", action="store_true", help="delete without asking (needed without a terminal)")
    for action in (rm, prune):
        _add_shared(action)


def main(args: argparse.Namespace) -> int:
    if not db_path(args).exists():  # deleting must not create the history (nor its lock file)
        return error(f"there is no history at {db_path(args)}, so there is nothing to delete. Fix: point --db "
                     "(or LABCONSOLE_DB) at the history that holds the runs; nothing was created")
    return _rm(args) if args.history_action == "rm" else _prune(args)


# ---- Private API
def _add_shared(parser: argparse.ArgumentParser) -> None:
    from console.cli.arguments import history_path

    parser.add_argument("--json", action="store_true", default=argparse.SUPPRESS, help="print one JSON document")
    parser.add_argument("--db", default=argparse.SUPPRESS, metavar="PATH", type=history_path,
                        help="history database")


def _rm(args: argparse.Namespace) -> int:
    from console.history import HistoryError, HistoryStore, open_reader

    try:
        with open_reader(db_path(args)) as reader:  # resolved before anything is opened to write
            runs = []
            for ref in args.runs:
                run = reader.get_run(ref, include_damaged=True)  # a damaged run can be deleted like any other
                if run is None:
                    return fail(f"RUN: no run {ref!r} in the history (`labconsole history` lists them); nothing "
                                "was deleted")
                runs.append(run)
        runs = list({run["run_id"]: run for run in runs}.values())  # a run named twice is deleted once
        with HistoryStore(db_path(args)) as store:
            result = store.delete_runs([run["run_id"] for run in runs])
    except HistoryError as exc:  # a prefix too short or ambiguous: 2; a running run, an unusable history: 1
        return history_failure(exc)
    return _report(args, "rm", [_row(run) for run in runs], result)


def _prune(args: argparse.Namespace) -> int:
    from console.history import HistoryError, HistoryStore, open_reader

    try:
        with open_reader(db_path(args)) as reader:  # the selection reads only, like `history`
            rows = [_row(row) for row in reader.prunable(args.older_than, args.status, args.include_baselines)]
            kept = len(reader.prunable(args.older_than, args.status, include_baselines=True)) - len(rows)
        if kept and not wants_json(args):
            print(f"kept {kept} baseline run{'s' if kept != 1 else ''} (a configuration's baseline; "
                  "--include-baselines deletes them too)", file=sys.stderr)
        if args.dry_run or not rows:
            return _report(args, "prune", rows, None if args.dry_run else {"runs": [], "rows": {},
                                                                           "artifact_files": []})
        if not args.yes:
            refused = _confirm(rows, args.older_than, args.status)
            if refused is not None:
                return refused
        with HistoryStore(db_path(args)) as store:
            result = store.delete_runs([row["run_id"] for row in rows])
    except HistoryError as exc:
        return history_failure(exc)
    return _report(args, "prune", rows, result)


def _confirm(rows: list[dict[str, Any]], days: float, status: str | None) -> int | None:
    """None when the user said yes; else the exit code, after saying why nothing was deleted."""
    what = f"{len(rows)} {status + ' ' if status else ''}run{'s' if len(rows) != 1 else ''} older than {days:g} days"
    if not (sys.stdin.isatty() and sys.stderr.isatty()):
        return fail(f"prune would delete {what}: give --yes to delete them without a terminal to ask on (or "
                    "--dry-run to list them); nothing was deleted")
    for row in rows[:10]:
        print(f"  {_line(row)}", file=sys.stderr)
    if len(rows) > 10:
        print(f"  … and {len(rows) - 10} more", file=sys.stderr)
    print(f"Delete {what}, with everything stored with them? [y/N] ", end="", file=sys.stderr, flush=True)
    try:
        answer = sys.stdin.readline().strip().lower()
    except (OSError, KeyboardInterrupt):
        answer = ""
    if answer in ("y", "yes"):
        return None
    return error("nothing was deleted: the prune was not confirmed. Fix: answer y, or give --yes")


def _report(args: argparse.Namespace, action: str, rows: list[dict[str, Any]], result: dict[str, Any] | None) -> int:
    """Print what went (or, for --dry-run, what would go); result None = a dry run."""
    dry = result is None
    files = [] if dry else result["artifact_files"]
    if wants_json(args):
        emit_json({"action": action, "dry_run": dry, "runs": rows, "deleted_rows": {} if dry else result["rows"],
                   "artifact_files": files}, schema=NAME)
        return EXIT_OK
    verb = "would delete" if dry else "deleted"
    print(f"{verb} {len(rows)} run{'s' if len(rows) != 1 else ''}" + (":" if rows else ""))
    for row in rows:
        print(f"  {_line(row)}")
    if not dry and result["rows"]:
        print("rows: " + ", ".join(f"{table} {count:,}" for table, count in sorted(result["rows"].items())))
    if files:
        print(f"their {len(files)} artifact file(s) were left on disk:")
        for path in dict.fromkeys(files):
            print(f"  {path}")
    return EXIT_OK


def _row(run: dict[str, Any]) -> dict[str, Any]:
    """A deleted run's identity, from get_run's or run_rows' dict."""
    return {key: run.get(key) for key in ("run_id", "started_at", "status", "name", "model", "engine", "target")}


def _line(row: dict[str, Any]) -> str:
    return (f"{row['run_id'][:8]}  {(row['started_at'] or '')[:19]:19}  {row['status'] or '':11}  "
            f"{row['model'] or '—'} {row['engine'] or ''} {row['target'] or ''}").rstrip()
