"""The SELECTs runs are listed with, and list_runs' filters as SQL.

Apart from the runs' methods because the sweeps (runs_of_sweep) and deletion (prune's selection) read runs
through the same joins and filters.
"""

from __future__ import annotations

from typing import Any

from console.history import damage, schema, v4_upgrade
from console.history.summary_shapes import read_summary

MIN_PREFIX = 4
_FACTS = ", ".join(f"f.{c}" for c in ("fingerprint", "configuration", "tags", "note", "precision",
                                       *v4_upgrade.SUMMARY_COLUMNS))
RUN_SELECT = (f"SELECT runs.*, hosts.hostname AS hostname, {_FACTS} FROM runs "
              "LEFT JOIN hosts ON hosts.host_id = runs.host_id LEFT JOIN run_facts AS f ON f.run_id = runs.run_id")
TABLE_OF = {name: "f" if table == "run_facts" else table for name, (_, table) in damage.RUN_COLUMNS.items()}
# The run_summary view's columns, read from the covering index idx_runs_listing and run_facts (schema v4)
ROW_SELECT = ("SELECT runs.run_id, runs.name, runs.status, runs.started_at, runs.ended_at, hosts.hostname, runs.model, "
              "runs.engine, runs.target, f.precision, runs.batch, runs.scenario, f.fingerprint, f.iterations, "
              "f.p50_ms, f.p99_ms, f.mean_ms, f.throughput_per_s, f.valid, f.energy_j_per_inference, "
              "f.energy_method, f.baseline_verdict, f.tags, f.note FROM runs "
              "LEFT JOIN hosts ON hosts.host_id = runs.host_id LEFT JOIN run_facts AS f ON f.run_id = runs.run_id")
# list_runs filters: name → SQL condition on one parameter
RUN_FILTERS = {
    "model": "runs.model = ?", "engine": "runs.engine = ?", "target": "runs.target = ?",
    "precision": "f.precision = ?",
    "since": "runs.started_at >= ?", "until": "runs.started_at < ?", "fingerprint": "f.fingerprint = ?",
    "hostname": "hosts.hostname = ?", "status": "runs.status = ?",
    # damaged tags (not JSON) match no tag rather than failing the whole listing (console.history.damage)
    "tag": "CASE WHEN json_valid(f.tags) THEN EXISTS (SELECT 1 FROM json_each(f.tags) WHERE json_each.value = ?) "
           "ELSE 0 END",
    "valid": "COALESCE(f.valid, 0) = ?",
}


def filtered(select: str, limit: int | None, status: str | None, filters: dict[str, Any]) -> tuple[str, list[Any]]:
    """`select` restricted by list_runs' filters, newest first."""
    if status is not None and status not in schema.RUN_STATUSES:
        raise ValueError(f"status must be one of {', '.join(schema.RUN_STATUSES)}, got {status!r}")
    unknown = sorted(set(filters) - set(RUN_FILTERS))
    if unknown:
        raise ValueError(f"unknown run filter {', '.join(unknown)}; known: {', '.join(sorted(RUN_FILTERS))}")
    conditions, params = [], []
    for name, value in {**filters, "status": status}.items():
        if value is not None:
            conditions.append(RUN_FILTERS[name])
            params.append(int(bool(value)) if name == "valid" else str(value))
    sql = select + (" WHERE " + " AND ".join(conditions) if conditions else "")
    sql += " ORDER BY runs.started_at DESC, runs.rowid DESC"
    if limit is not None:
        sql, params = sql + " LIMIT ?", [*params, int(limit)]
    return sql, params


def decode_run(row: dict[str, Any]) -> dict[str, Any]:
    """Strictly, through console.history.damage: a damaged column is None and listed in row["damaged"]; a summary
    stored in an older shape is read in today's (console.history.summary_shapes)."""
    run = damage.decode_run(row)
    if "summary" in run:
        run["summary"] = read_summary(run["summary"])
    return run


def decode_sweep(row: dict[str, Any]) -> dict[str, Any]:
    """Strictly, like a run: a damaged grid, base or summary is None and listed in row["damaged"] (the Sweeps
    list shows such a sweep with what is left; opening it is refused with the field)."""
    return damage.decode_run(row, damage.SWEEP_COLUMNS)
