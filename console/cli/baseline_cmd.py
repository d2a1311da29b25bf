"""`labconsole baseline set|show|clear`: the run each new run of its configuration is compared with."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from console.cli.arguments import history_failure
from console.cli.common import EXIT_OK, db_path, emit_json, error, fail, wants_json

NAME = "baseline"
HELP = "set, show or clear the baseline run of a configuration"
ACTIONS = ("set", "show", "clear")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("action", choices=ACTIONS, help="set RUN as its configuration's baseline; show the "
                        "baseline of RUN's configuration (every baseline without RUN); clear it")
    parser.add_argument("run", metavar="RUN", nargs="?", help="run id or a unique prefix (≥ 4 characters)")


def main(args: argparse.Namespace) -> int:
    from console.history import HistoryError, HistoryStore, open_reader

    if args.action != "show" and not args.run:
        return fail(f"baseline {args.action}: give the RUN (`labconsole history` lists them)")
    if not db_path(args).exists():  # set/clear open the history to write: they must not create it (nor its lock)
        return error(f"there is no history at {db_path(args)}, so it has no run {args.run!r}. Fix: point --db "
                     "(or LABCONSOLE_DB) at the history that holds the run; nothing was created")
    try:
        if args.action == "show":
            with open_reader(db_path(args)) as store:
                rows = _shown(store, args.run)
        else:
            with HistoryStore(db_path(args)) as store:
                run = store.get_run(args.run)
                if run is None:
                    return fail(f"RUN: no run {args.run!r} in the history (`labconsole history` lists them)")
                if args.action == "set":
                    store.set_baseline(run["run_id"])
                    rows = [_row(store, store.baseline_of(run["fingerprint"]))]
                else:
                    cleared = store.clear_baseline(run["fingerprint"])
                    rows = []
                    if not cleared:
                        print(f"run {run['run_id'][:8]}'s configuration had no baseline")
    except HistoryError as exc:  # an id prefix too short or ambiguous: 2, like an unknown id
        return history_failure(exc)
    if rows is None:
        return fail(f"RUN: no run {args.run!r} in the history (`labconsole history` lists them)")
    if wants_json(args):
        if args.action == "show" and not args.run:
            emit_json({"baselines": rows}, schema="baselines")
        else:  # one configuration's baseline; run_id null when it has none (cleared, or never set)
            emit_json(rows[0] if rows else dict.fromkeys(("fingerprint", "run_id", "set_at", "configuration",
                                                          "p50_ms", "label")))
    else:
        for row in rows:
            print(f"{row['fingerprint']}  baseline {row['run_id'][:8]} (set {row['set_at'][:19]})  {row['label']}")
        if not rows and args.action == "show":
            print("no baseline set" + (" for this configuration" if args.run else ""))
    return EXIT_OK


def _shown(store: Any, ref: str | None) -> list[dict[str, Any]] | None:
    if not ref:  # a damaged baseline run is left out of the list, with a note (console.history.damage)
        from console.history import damage

        runs = [(store.get_run(b["run_id"], include_damaged=True), b["set_at"]) for b in store.baselines()]
        for run, _ in runs:
            if run.get("damaged"):
                print(damage.skipped_note(run["run_id"], run["damaged"]), file=sys.stderr)
        return [_row(store, run, set_at) for run, set_at in runs if not run.get("damaged")]
    run = store.get_run(ref)
    if run is None:
        return None
    baseline = store.baseline_of(run["fingerprint"])
    return [_row(store, baseline)] if baseline else []


def _row(store: Any, run: dict[str, Any], set_at: str | None = None) -> dict[str, Any]:
    if set_at is None:
        set_at = next(b["set_at"] for b in store.baselines() if b["run_id"] == run["run_id"])
    return {"fingerprint": run["fingerprint"], "run_id": run["run_id"], "set_at": set_at,
            "configuration": run["configuration"], "p50_ms": run.get("p50_ms"),
            "label": " · ".join(str(x) for x in (run["model"], run["engine"], run["target"], f"b{run['batch']}",
                                                 run.get("precision"), run.get("hostname")))}
