"""Histories as older builds wrote them: the schema held back to version N and rows inserted the way that build
inserted them (today's store writes v4 columns, so it cannot stand in for an old build)."""

from __future__ import annotations

import json
import sqlite3
import uuid

from sqlite_utils import Database

from console.history import schema


def make(path, version: int, runs: list[dict]) -> None:
    """A history file at schema `version` holding `runs`: each {spec, summary, status, latencies: [(t, lat)],
    samples: [(t, source, metric, value, unit, method)], run_id (optional)}; one host."""
    conn = sqlite3.connect(path)
    db = Database(conn)
    db.execute("CREATE TABLE schema_version (version INTEGER NOT NULL, applied_at TEXT NOT NULL)")
    for number, step in schema.MIGRATIONS[:version]:
        step(db)
        db.execute("INSERT INTO schema_version VALUES (?, ?)", [number, "2026-01-01T00:00:00.000000Z"])
    db.execute("INSERT INTO hosts (host_id, hostname, os, machine, cpu, python, first_seen) VALUES "
               "('old-host', 'oldbox', 'Linux', 'x86_64', 'Old CPU', '3.11', '2026-01-01T00:00:00.000000Z')")
    for number, run in enumerate(runs):
        spec = run.get("spec") or {"model": "mlp", "engine": "torch", "target": "cpu", "batch": 1}
        run_id = run.get("run_id") or uuid.uuid4().hex
        db.execute("INSERT INTO runs (run_id, host_id, name, status, started_at, ended_at, model, engine, target, "
                   "batch, scenario, spec, summary) VALUES (?, 'old-host', '', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                   [run_id, run.get("status", "completed"), f"2026-01-{number + 1:02d}T00:00:00.000000Z",
                    f"2026-01-{number + 1:02d}T00:01:00.000000Z", spec.get("model"), spec.get("engine"),
                    spec.get("target"), spec.get("batch"), spec.get("scenario", "single-stream"), json.dumps(spec),
                    json.dumps(run.get("summary")) if run.get("summary") is not None else None])
        db.conn.executemany("INSERT INTO latencies (run_id, t_ns, latency_ns) VALUES (?, ?, ?)",
                            [(run_id, t, lat) for t, lat in run.get("latencies", [])])
        db.conn.executemany("INSERT INTO samples (run_id, t_ns, source, metric, value, unit, method) "
                            "VALUES (?, ?, ?, ?, ?, ?, ?)", [(run_id, *row) for row in run.get("samples", [])])
        run["run_id"] = run_id
    conn.commit()
    conn.close()
