"""`labconsole history`: stored runs, newest first (reads only: the history is never written here).

`history rm RUN…` and `history prune --older-than DAYS` delete runs: console.cli.history_delete."""

from __future__ import annotations

import argparse
from typing import Any

from console.cli import history_delete
from console.cli.arguments import DATE_FORMS, date_bound
from console.cli.common import EXIT_FAILED, EXIT_OK, db_path, emit_json, error, fmt, wants_json
from console.cli.numbers import whole

NAME = "history"
HELP = "list stored runs, newest first; `history rm RUN…` and `history prune --older-than DAYS` delete runs"


MAX_LIMIT = 1_000_000_000  # SQLite takes a 64-bit LIMIT; beyond a billion rows is a typo
FILTERS = ("model", "engine", "target", "precision", "tag", "since", "until")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--limit", type=whole(1, MAX_LIMIT), default=50, metavar="N",
                        help=f"at most N runs, 1 to {MAX_LIMIT:,} (default 50)")
    for name in FILTERS:
        dated = name in ("since", "until")
        parser.add_argument(f"--{name}", metavar="DATE" if dated else name.upper(), type=date_bound if dated else None,
                            help=f"started on or after DATE, {DATE_FORMS}" if name == "since" else
                            "started before DATE" if name == "until" else f"only runs with this {name}")
    validity = parser.add_mutually_exclusive_group()
    validity.add_argument("--valid", dest="valid", action="store_const", const=True, help="only valid runs")
    validity.add_argument("--invalid", dest="valid", action="store_const", const=False, help="only invalid runs")
    history_delete.add_actions(parser)


def main(args: argparse.Namespace) -> int:
    if getattr(args, "history_action", None):
        return history_delete.main(args)
    from console.history import HistoryError, damage, open_reader

    try:  # a history that does not exist is an error (exit 1), never created here: open_reader says the fix
        with open_reader(db_path(args)) as store:
            runs = store.list_runs(limit=args.limit, valid=args.valid, include_damaged=True,
                                   **{name: getattr(args, name) for name in FILTERS})
    except HistoryError as exc:
        error(exc)
        return EXIT_FAILED
    rows = [_row(r) for r in runs]
    if wants_json(args):
        emit_json({"runs": rows})
    else:
        print(f"{'run':8}  {'started (UTC)':19}  {'status':11}  {'model':8} {'engine':6} {'target':7} "
              f"{'scenario':13} {'p50 ms':>8}  {'samples/s':>10}  valid")
        for r in rows:
            valid = {True: "VALID", False: "INVALID"}.get(r["valid"], "—")
            print(f"{r['run_id'][:8]}  {r['started_at'][:19]:19}  {r['status']:11}  {_cell(r['model']):8} "
                  f"{_cell(r['engine']):6} {_cell(r['target']):7} {r['scenario']['name']:13} "
                  f"{fmt(r['latency_ms']['p50']):>8}  "
                  f"{fmt(r['throughput_per_s'], 4):>10}  {'DAMAGED' if r['damaged'] else valid}")
            for item in r["damaged"]:  # which field and why, under the run: the other runs read as usual
                print(f"{'':10}damaged: {damage.describe([item])}")
        if any(r["damaged"] for r in rows):
            print(f"damaged runs are skipped by the other commands; {damage.RESTORE}")
    return EXIT_OK


def _cell(value: str | None) -> str:
    """A column a run may lack (a spec with no model, engine or target: `None` broke the table's widths)."""
    return "—" if value is None else value


def _row(run: dict[str, Any]) -> dict[str, Any]:
    """One run as `history --json` lists it: identity, headline figures, validity and the scenario block."""
    summary = run["summary"] or {}
    spec = run.get("spec") or {}
    return {"run_id": run["run_id"], "started_at": run["started_at"], "status": run["status"], "name": run["name"],
            "model": run["model"], "engine": run["engine"], "target": run["target"], "batch": run["batch"],
            "precision": spec.get("precision", run.get("precision") or "fp32"),
            "latency_ms": {"p50": (summary.get("latency_ms") or {}).get("p50")},
            "throughput_per_s": summary.get("throughput_per_s"), "valid": summary.get("valid"),
            "scenario": {"name": spec.get("scenario", run.get("scenario") or "single-stream"),
                         **(summary.get("scenario") or {})},
            "sweep_id": run.get("sweep_id"), "error": run["error"], "fingerprint": run.get("fingerprint"),
            "tags": run.get("tags") or [], "note": run.get("note"), "hostname": run.get("hostname"),
            "damaged": run.get("damaged") or [],  # [{field, reason}]: a JSON column that could not be read
            "storage": _storage(summary)}


def _storage(summary: dict[str, Any]) -> dict[str, Any] | None:
    """A storage benchmark's headline (`labconsole storage`): its kind, figures, pass rule and cache state."""
    if not summary.get("storage_kind"):
        return None
    return {key: summary.get(key) for key in ("storage_kind", "figures", "passed", "status_reason", "cache_state")}
