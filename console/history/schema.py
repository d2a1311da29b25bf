"""The history schema as a forward-only list of migrations.

A lab keeps its history for years and opens it with whatever Lab Console is installed; so the schema
only ever moves forward, one numbered step at a time, each step recorded in `schema_version`. A file
written by a newer build is refused (by the store) rather than "repaired" into something it no longer reads.

To change the schema: append `(N + 1, _vN_plus_1)` to MIGRATIONS. Never edit a released step.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from datetime import datetime, timezone
from typing import Any

from sqlite_utils import Database

Migration = Callable[[Database], None]

RUN_STATUSES = ("running", "completed", "failed", "cancelled", "interrupted")
FINAL_STATUSES = RUN_STATUSES[1:]
# A sweep is `partial` when some of its points failed and others completed (the completed ones are kept).
SWEEP_STATUSES = ("running", "completed", "partial", "failed", "cancelled", "interrupted")
SWEEP_FINAL_STATUSES = SWEEP_STATUSES[1:]
SAMPLE_METHODS = ("measured", "integrated", "estimated")


def utc_now() -> str:
    """ISO-8601 UTC with a fixed width (microseconds, 'Z'), so text order is time order."""
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


# ---- Migrations
def _v1(db: Database) -> None:
    """hosts, runs, latencies, samples."""
    db["hosts"].create(
        {"host_id": str, "hostname": str, "os": str, "machine": str, "cpu": str, "python": str, "first_seen": str},
        pk="host_id", not_null={"first_seen"})
    db["runs"].create(
        {"run_id": str, "host_id": str, "name": str, "status": str, "started_at": str, "ended_at": str,
         "model": str, "engine": str, "target": str, "batch": int, "scenario": str,
         "spec": str, "summary": str, "error": str, "environment": str},
        pk="run_id", not_null={"status", "started_at", "spec"},
        foreign_keys=[("host_id", "hosts", "host_id")])
    db["runs"].create_index(["started_at"])
    # No primary key beyond rowid: rowid order is arrival order, and the bulk inserts stay cheap.
    db["latencies"].create({"run_id": str, "t_ns": int, "latency_ns": int}, not_null={"run_id"},
                           foreign_keys=[("run_id", "runs", "run_id")])
    db["latencies"].create_index(["run_id"])
    db["samples"].create(
        {"run_id": str, "t_ns": int, "source": str, "metric": str, "value": float, "unit": str, "method": str},
        not_null={"run_id", "metric"}, foreign_keys=[("run_id", "runs", "run_id")])
    db["samples"].create_index(["run_id", "metric"])


def _v2(db: Database) -> None:
    """sweeps (a grid of runs run as one action); runs.sweep_id and runs.sweep_point tag the runs of a sweep."""
    db["sweeps"].create(
        {"sweep_id": str, "host_id": str, "name": str, "status": str, "created_at": str, "ended_at": str,
         "grid": str, "base": str, "summary": str},
        pk="sweep_id", not_null={"status", "created_at", "grid"},
        foreign_keys=[("host_id", "hosts", "host_id")])
    db["sweeps"].create_index(["created_at"])
    # ADD COLUMN keeps every existing row (NULL: not part of a sweep); a REFERENCES column must default to NULL.
    db.execute("ALTER TABLE runs ADD COLUMN sweep_id TEXT REFERENCES sweeps(sweep_id)")
    db.execute("ALTER TABLE runs ADD COLUMN sweep_point TEXT")
    db["runs"].create_index(["sweep_id"])


def _v3(db: Database) -> None:
    """machine_cards (a target's measured ceilings, per host), ops (a run's per-op profile), artifacts (files kept
    with a run: traces, reports)."""
    db["machine_cards"].create(
        {"card_id": str, "host_id": str, "hostname": str, "target": str, "device_name": str, "measured_at": str,
         "card": str},
        pk="card_id", not_null={"target", "measured_at", "card"}, foreign_keys=[("host_id", "hosts", "host_id")])
    db["machine_cards"].create_index(["hostname", "target", "measured_at"])
    db["ops"].create(
        {"run_id": str, "op": str, "calls": int, "time_s": float, "flops": float, "bytes": float, "detail": str},
        not_null={"run_id", "op"}, foreign_keys=[("run_id", "runs", "run_id")])
    db["ops"].create_index(["run_id"])
    db["artifacts"].create(
        {"artifact_id": str, "run_id": str, "kind": str, "path": str, "bytes": int, "created_at": str},
        pk="artifact_id", not_null={"run_id", "kind", "path", "created_at"},
        foreign_keys=[("run_id", "runs", "run_id")])
    db["artifacts"].create_index(["run_id"])


def _v4(db: Database) -> None:
    """A history that lasts years: latencies as compact chunks (latency_codec), a fingerprint, configuration,
    tags and a note per run, baselines per configuration, a log of imports, the run_summary view for people who
    open the file with sqlite-utils or Datasette, and JSON columns rewritten without NaN (SQLite's JSON functions
    reject it)."""
    from console.history import v4_upgrade  # the data rewrite, kept apart from the table definitions

    db["latency_chunks"].create(
        {"run_id": str, "seq": int, "n": int, "t0_ns": int, "data": bytes},
        pk=("run_id", "seq"), not_null={"run_id", "seq", "n", "t0_ns", "data"},
        foreign_keys=[("run_id", "runs", "run_id")])
    # What a run is and what it measured, in narrow rows of their own: a `runs` row carries kilobytes of JSON in
    # overflow pages, which SQLite walks to reach any column added after them; a table of run_facts rows is
    # listed by the ten thousand in milliseconds.
    facts: dict[str, Any] = {"run_id": str, "fingerprint": str, "precision": str}
    facts.update({column: float if column in v4_upgrade.REAL_COLUMNS else str
                  for column in v4_upgrade.SUMMARY_COLUMNS})
    facts.update({"tags": str, "note": str, "configuration": str})
    db["run_facts"].create(facts, pk="run_id", foreign_keys=[("run_id", "runs", "run_id")])
    db["run_facts"].create_index(["fingerprint"])
    # The History table's columns of `runs` in one covering index, read without visiting the wide rows.
    db.execute("DROP INDEX idx_runs_started_at")
    db.execute("CREATE INDEX idx_runs_listing ON runs (started_at, status, ended_at, name, model, engine, target, "
               "batch, scenario, host_id, run_id)")
    db["baselines"].create({"fingerprint": str, "run_id": str, "set_at": str}, pk="fingerprint",
                           not_null={"run_id", "set_at"}, foreign_keys=[("run_id", "runs", "run_id")])
    db["imports"].create({"import_id": str, "source": str, "imported_at": str, "report": str}, pk="import_id",
                         not_null={"source", "imported_at"})
    v4_upgrade.rewrite(db)
    db.execute("DROP TABLE latencies")
    db.execute(RUN_SUMMARY_VIEW)


# Plain columns only (run_facts, kept up to date by the store): no JSON parsed per row, so the view and the
# History table stay fast at tens of thousands of runs.
RUN_SUMMARY_VIEW = """
CREATE VIEW run_summary AS
SELECT runs.run_id, runs.name, runs.status, runs.started_at, runs.ended_at, hosts.hostname, runs.model,
       runs.engine, runs.target, f.precision, runs.batch, runs.scenario, f.fingerprint, f.iterations,
       f.p50_ms, f.p99_ms, f.mean_ms, f.throughput_per_s, f.valid, f.energy_j_per_inference,
       f.energy_method, f.baseline_verdict, f.tags, f.note
FROM runs LEFT JOIN hosts ON hosts.host_id = runs.host_id LEFT JOIN run_facts AS f ON f.run_id = runs.run_id
"""


MIGRATIONS: list[tuple[int, Migration]] = [
    (1, _v1),
    (2, _v2),
    (3, _v3),
    (4, _v4),
]
LATEST_VERSION = MIGRATIONS[-1][0]


# ---- Public API
class NotAHistory(Exception):
    """The file has a `schema_version` table, but not the one Lab Console writes (another tool's)."""


# The tables each version adds and keeps: a file that claims version N without them is another tool's.
_TABLES_OF = {1: ("hosts", "runs", "samples"), 2: ("sweeps",), 3: ("machine_cards", "ops", "artifacts"),
              4: ("latency_chunks", "run_facts", "baselines", "imports")}


def read_version(conn: sqlite3.Connection) -> int:
    """The schema version recorded in the file, 0 for a new (empty) database. Reads only.

    Raises NotAHistory when `schema_version` is not Lab Console's (other columns, a version such as '1.2',
    or the tables that version implies are missing): such a file must be refused, never migrated."""
    if not _has_table(conn, "schema_version"):
        return 0
    columns = {row[1] for row in conn.execute("PRAGMA table_info(schema_version)")}
    if not {"version", "applied_at"} <= columns:
        raise NotAHistory(f"its schema_version table has the columns {', '.join(sorted(columns))}, not Lab "
                          "Console's version and applied_at")
    count, high, low = conn.execute("SELECT COUNT(*), MAX(version), MIN(version) FROM schema_version").fetchone()
    odd = conn.execute("SELECT version FROM schema_version WHERE typeof(version) != 'integer' LIMIT 1").fetchone()
    if odd is not None:
        raise NotAHistory(f"its schema_version table holds the version {odd[0]!r}, not a Lab Console version "
                          "number")
    if not count or low < 1:
        raise NotAHistory("its schema_version table is empty" if not count else
                          f"its schema_version table holds the version {low}, not a Lab Console version number")
    missing = [name for version in range(1, min(int(high), LATEST_VERSION) + 1)
               for name in _TABLES_OF.get(version, ()) if not _has_table(conn, name)]
    if missing:
        raise NotAHistory(f"it records schema version {high} but has no {', '.join(missing)} table")
    return int(high)


def user_tables(conn: sqlite3.Connection) -> list[str]:
    rows = conn.execute("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' "
                        "ORDER BY name").fetchall()
    return [name for (name,) in rows]


def migrate(db: Database, current: int) -> list[int]:
    """Apply every migration above the file's version in one transaction; return the versions applied.

    `current` is the version read before; it is read again under the write lock (BEGIN IMMEDIATE), so two
    consoles creating or upgrading the same file at once both succeed: the second finds the work done."""
    if not [version for version, _ in MIGRATIONS if version > current]:
        return []
    conn = db.conn
    conn.execute("BEGIN IMMEDIATE")
    try:
        current = read_version(conn)
        pending = [(version, step) for version, step in MIGRATIONS if version > current]
        if pending:
            conn.execute("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL, "
                         "applied_at TEXT NOT NULL)")
        for version, step in pending:
            step(db)
            conn.execute("INSERT INTO schema_version (version, applied_at) VALUES (?, ?)", [version, utc_now()])
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
    return [version for version, _ in pending]


# ---- Private API
def _has_table(conn: sqlite3.Connection, name: str) -> bool:
    return conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (name,)).fetchone() is not None
