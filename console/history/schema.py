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


MIGRATIONS: list[tuple[int, Migration]] = [
    (1, _v1),
    (2, _v2),
]
LATEST_VERSION = MIGRATIONS[-1][0]


# ---- Public API
def read_version(conn: sqlite3.Connection) -> int:
    """The schema version recorded in the file, 0 for a new (empty) database. Reads only."""
    if not _has_table(conn, "schema_version"):
        return 0
    row = conn.execute("SELECT MAX(version) FROM schema_version").fetchone()
    return int(row[0] or 0)


def user_tables(conn: sqlite3.Connection) -> list[str]:
    rows = conn.execute("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' "
                        "ORDER BY name").fetchall()
    return [name for (name,) in rows]


def migrate(db: Database, current: int) -> list[int]:
    """Apply every migration above `current` in one transaction; return the versions applied."""
    pending = [(version, step) for version, step in MIGRATIONS if version > current]
    if not pending:
        return []
    with db.atomic():
        db.execute("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL, applied_at TEXT NOT NULL)")
        for version, step in pending:
            step(db)
            db.execute("INSERT INTO schema_version (version, applied_at) VALUES (?, ?)", [version, utc_now()])
    return [version for version, _ in pending]


# ---- Private API
def _has_table(conn: sqlite3.Connection, name: str) -> bool:
    return conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (name,)).fetchone() is not None
