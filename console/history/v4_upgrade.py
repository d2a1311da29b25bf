"""The data half of schema v4: what an older history's rows become, inside the migration's transaction.

Every run gets its configuration and fingerprint (console.analysis.fingerprint) and an empty tag list; JSON
columns holding NaN are rewritten strictly (jsoncols); the one-row-per-iteration `latencies` table becomes
compact chunks (latency_codec), run by run, so a file of any size migrates in bounded memory per run.
"""

from __future__ import annotations

import json
from itertools import chain
from typing import Any

import numpy as np
from sqlite_utils import Database

from console.history import damage, jsoncols, latency_codec

# Summary figures kept as plain columns of `runs` (the run_summary view, fast listing): column → path in summary
SUMMARY_PATHS = {
    "iterations": ("iterations",), "p50_ms": ("latency_ms", "p50"), "p99_ms": ("latency_ms", "p99"),
    "mean_ms": ("latency_ms", "mean"), "throughput_per_s": ("throughput_per_s",), "valid": ("valid",),
    "energy_j_per_inference": ("energy", "joules_per_inference"), "energy_method": ("energy", "method"),
    "baseline_verdict": ("baseline", "verdict"),
}
SUMMARY_COLUMNS = tuple(SUMMARY_PATHS)
REAL_COLUMNS = ("iterations", "p50_ms", "p99_ms", "mean_ms", "throughput_per_s", "valid", "energy_j_per_inference")
CHUNK_MAX = 65536  # iterations per stored chunk: big enough to compress well, small enough to page in quickly
_JSON_COLUMNS = {"runs": ("spec", "summary", "environment", "sweep_point"), "sweeps": ("grid", "base", "summary"),
                 "machine_cards": ("card",), "ops": ("detail",)}


def rewrite(db: Database) -> None:
    _strict_json(db)
    _fingerprints(db)
    _chunk_latencies(db)


def run_identity(spec: dict[str, Any], environment: dict[str, Any] | None, hostname: str | None,
                 host_id: str | None) -> tuple[str, str]:
    """(fingerprint, configuration JSON) of a run: what the store writes at create and at finish. The analysis
    package is imported here, not with the history: opening the history at start-up does not need it."""
    from console.analysis.fingerprint import configuration, fingerprint

    config = configuration(spec, environment, hostname, host_id)
    return fingerprint(config), jsoncols.dumps(config, "configuration")


def insert_chunks(conn: Any, run_id: str, t_ns: np.ndarray, latency_ns: np.ndarray, first_seq: int) -> int:
    """Store iterations as chunks numbered from `first_seq`; returns the next free number."""
    seq = first_seq
    for start in range(0, len(t_ns), CHUNK_MAX):
        t0, blob = latency_codec.encode(t_ns[start:start + CHUNK_MAX], latency_ns[start:start + CHUNK_MAX])
        conn.execute("INSERT INTO latency_chunks (run_id, seq, n, t0_ns, data) VALUES (?, ?, ?, ?, ?)",
                     [run_id, seq, len(t_ns[start:start + CHUNK_MAX]), t0, blob])
        seq += 1
    return seq


def insert_facts(conn: Any, run_id: str, fingerprint: str, configuration: str, precision: str,
                 plain: dict[str, Any] | None = None) -> None:
    values = {"run_id": run_id, "fingerprint": fingerprint, "configuration": configuration, "precision": precision,
              "tags": "[]", **(plain or {})}
    conn.execute(f"INSERT INTO run_facts ({', '.join(values)}) VALUES ({', '.join('?' * len(values))})",
                 list(values.values()))


def summary_columns(summary: dict[str, Any] | None) -> dict[str, Any]:
    """The plain column values of a summary (None where a figure is missing or not a plain value)."""
    values = {}
    for column, path in SUMMARY_PATHS.items():
        value: Any = summary or {}
        for key in path:
            value = value.get(key) if isinstance(value, dict) else None
        if isinstance(value, bool):
            value = int(value)
        values[column] = value if isinstance(value, (int, float, str)) else None
    return values


def precision_of(spec: dict[str, Any] | None) -> str:
    return str((spec or {}).get("precision") or "fp32")


# ---- Private helpers
def _strict_json(db: Database) -> None:
    for table, columns in _JSON_COLUMNS.items():
        for column in columns:
            rows = db.execute(f"SELECT rowid, {column} FROM {table} WHERE {column} LIKE '%NaN%' "
                              f"OR {column} LIKE '%Infinity%'").fetchall()
            for rowid, text in rows:
                try:
                    value = json.loads(text)
                except (ValueError, RecursionError):
                    continue  # not JSON at all: left as it is, for the strict reader to mark damaged
                db.execute(f"UPDATE {table} SET {column} = ? WHERE rowid = ?",
                           [jsoncols.dumps(value, column), rowid])


def _fingerprints(db: Database) -> None:
    rows = db.execute("SELECT runs.run_id, runs.spec, runs.environment, hosts.hostname, runs.host_id, "
                      "runs.summary FROM runs LEFT JOIN hosts ON hosts.host_id = runs.host_id").fetchall()
    for run_id, spec, environment, hostname, host_id, summary in rows:
        # a damaged column (console.history.damage) counts as absent here; readers then mark the run damaged
        spec = damage.decode("spec", spec)[0] or {}
        identity = run_identity(spec, damage.decode("environment", environment)[0], hostname, host_id)
        plain = summary_columns(damage.decode("summary", summary)[0])
        insert_facts(db.conn, run_id, *identity, precision_of(spec), plain)


def _chunk_latencies(db: Database) -> None:
    run_ids = [run_id for (run_id,) in db.execute("SELECT DISTINCT run_id FROM latencies").fetchall()]
    for run_id in run_ids:
        cursor = db.execute("SELECT t_ns, latency_ns FROM latencies WHERE run_id = ? ORDER BY rowid", [run_id])
        pairs = np.fromiter(chain.from_iterable(cursor), dtype=np.int64).reshape(-1, 2)
        insert_chunks(db.conn, run_id, pairs[:, 0], pairs[:, 1], 0)
