"""Runs a console left `running` when it died become `interrupted`, each with a summary of what it stored.

A killed console (power cut, SIGKILL, a full disk that never cleared) cannot finish its run, but every
latency it committed is in the file. The next console that opens the history to write marks such runs
`interrupted` and computes their summary from those latencies, so the history shows what was measured,
says what is missing, and never calls the run valid. Only a writer's open does this (the caller holds the
writer lock exclusively, see lock.py); reading the history never writes.
"""

from __future__ import annotations

import json
import logging
import sqlite3
import zlib
from typing import Any

import numpy as np

from console.history import damage, jsoncols, latency_codec, schema, v4_upgrade

log = logging.getLogger(__name__)
INTERRUPTED_ERROR = "the console stopped before this run finished; data up to the last commit is kept"


# ---- Public API
def recover(conn: sqlite3.Connection) -> list[str]:
    """Mark running runs and sweeps interrupted, in one short write transaction; return the run ids.

    Nothing is written (and no write lock taken) when nothing is running, so a write-open of a healthy
    history does not wait on, or block, anyone."""
    tables = set(schema.user_tables(conn))
    running = [run_id for (run_id,) in conn.execute("SELECT run_id FROM runs WHERE status = 'running'")]
    sweeps = "sweeps" in tables and conn.execute(  # absent only while a test holds the schema back
        "SELECT 1 FROM sweeps WHERE status = 'running' LIMIT 1").fetchone() is not None
    if not running and not sweeps:
        return []
    summaries = {run_id: interrupted_summary(conn, run_id) for run_id in running} \
        if {"latency_chunks", "run_facts"} <= tables else {}
    now = schema.utc_now()
    conn.execute("BEGIN IMMEDIATE")
    try:
        for run_id in running:
            summary = summaries.get(run_id)
            cursor = conn.execute(
                "UPDATE runs SET status = 'interrupted', ended_at = ?, error = COALESCE(error, ?), "
                "summary = COALESCE(summary, ?) WHERE run_id = ? AND status = 'running'",
                [now, INTERRUPTED_ERROR, None if summary is None else jsoncols.dumps(summary, "summary"), run_id])
            if summary is not None and cursor.rowcount:
                plain = v4_upgrade.summary_columns(jsoncols.finite(summary))
                conn.execute(f"UPDATE run_facts SET {', '.join(f'{column} = ?' for column in plain)} "
                             "WHERE run_id = ?", [*plain.values(), run_id])
        if sweeps:
            conn.execute("UPDATE sweeps SET status = 'interrupted', ended_at = ? WHERE status = 'running'", [now])
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
    return running


def interrupted_summary(conn: sqlite3.Connection, run_id: str) -> dict[str, Any] | None:
    """The summary of an interrupted run from its stored latencies (None when the run already has one, or
    its latencies cannot be decoded: the status still changes, the error says why the run stopped)."""
    from console.analysis.finished_run import interrupted_summary as summary_of  # as for a finished run

    row = conn.execute("SELECT summary, batch, spec, environment FROM runs WHERE run_id = ?", [run_id]).fetchone()
    if row is None or row[0] is not None:
        return None
    try:
        parts = [latency_codec.decode(t0, data) for t0, data in conn.execute(
            "SELECT t0_ns, data FROM latency_chunks WHERE run_id = ? ORDER BY seq", [run_id])]
    except (ValueError, zlib.error):
        return None
    spec, damaged = damage.decode("spec", row[2])
    if damaged:  # a damaged spec (console.history.damage): the status still changes, no summary is guessed
        return None
    spec = spec or {}
    t_ns = np.concatenate([t for t, _ in parts]) if parts else np.zeros(0, dtype=np.int64)
    latency_ns = np.concatenate([lat for _, lat in parts]) if parts else np.zeros(0, dtype=np.int64)
    try:
        return summary_of(spec, t_ns, latency_ns, int(row[1] or spec.get("batch") or 1), _stored_rules(row[3]),
                          schema.utc_now())
    except Exception:  # noqa: BLE001 - a summary that cannot be computed must not make the history unusable
        log.exception("no summary for interrupted run %s", run_id)
        return None


def _stored_rules(environment: str | None) -> Any:
    """The validity rules the run stored when it started (environment.validity_rules); when it stored none (it
    stopped before its model loaded), the rules in force now — or the defaults, when the lab's file is broken."""
    from console.analysis import rules_file

    try:
        stored = rules_file.from_stored((json.loads(environment) or {}).get("validity_rules")) if environment else None
    except (ValueError, AttributeError):
        stored = None
    if stored is not None:
        return stored
    try:
        return rules_file.in_force().rules
    except rules_file.RulesError:
        return None
