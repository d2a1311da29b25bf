"""A history that lasts years: bytes per stored iteration, reading a million latencies back, listing 10,000 runs.

Latencies are real: a small matrix product timed here with perf_counter_ns, as a worker times an inference
(nanosecond timestamps, real timer and scheduling jitter), stored the way a live run stores them (a batch every
~100 ms, a commit every second at 2,000 iterations/s). Baseline in the same run: the v3 layout, one SQLite row
per iteration, for bytes and read time. Goals (issue 11): ≤ 4 bytes per iteration, 1M latencies read in < 100 ms,
10,000 runs listed in < 200 ms (run_rows: the History page's table). Each figure is the median of several
rounds with its distribution-free 95% interval, judged by the shared rule (bench_verdict).
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import time
from itertools import repeat
from pathlib import Path

import numpy as np
from bench_stats import median_with_interval
from bench_verdict import Goal, judge

from console.history import HistoryStore

ITERATIONS = 1_000_000
PER_COMMIT = 2000   # a second of iterations at 2,000/s
PER_BATCH = 200     # what a worker sends every ~100 ms
ROUNDS = 11
RUNS = 10_000
BYTES_GOAL = Goal.at_most(4.0, "B")
READ_GOAL = Goal.at_most(100.0, "ms")
LIST_GOAL = Goal.at_most(200.0, "ms")
ROOT = Path(__file__).resolve().parents[2]


def measured_latencies(count: int) -> tuple[np.ndarray, np.ndarray]:
    """(start ns, duration ns) of `count` real calls timed back to back."""
    a = np.random.default_rng(0).random((48, 48))
    starts, durations = np.empty(count, np.int64), np.empty(count, np.int64)
    clock = time.perf_counter_ns
    for i in range(count):
        begin = clock()
        a @ a
        end = clock()
        starts[i], durations[i] = begin, end - begin
    return starts, durations


def store_like_a_live_run(store: HistoryStore, run_id: str, t: np.ndarray, lat: np.ndarray) -> None:
    for lo in range(0, t.size, PER_BATCH):
        store.add_latencies(run_id, t[lo:lo + PER_BATCH], lat[lo:lo + PER_BATCH])
        if (lo + PER_BATCH) % PER_COMMIT == 0:
            store.commit()
    store.commit()


def test_bytes_per_iteration_and_reading_a_million_back(tmp_path, bench):
    t, lat = measured_latencies(ITERATIONS)
    with HistoryStore(tmp_path / "history.db") as store:
        run_id = store.create_run({"model": "bench", "engine": "none", "target": "cpu", "batch": 1})
        store_like_a_live_run(store, run_id, t, lat)
        live_chunks = store.db.execute("SELECT n, LENGTH(data) FROM latency_chunks").fetchall()
        live_bytes = sum(size for _, size in live_chunks) / ITERATIONS
        store.finish_run(run_id, "completed")  # merges the per-second chunks of the finished run
        per_chunk = store.db.execute("SELECT n, LENGTH(data) FROM latency_chunks WHERE run_id = ?",
                                     [run_id]).fetchall()
        reads = []
        for _ in range(ROUNDS):
            started = time.perf_counter()
            got_t, got_lat = store.latencies(run_id)
            reads.append((time.perf_counter() - started) * 1e3)
        assert got_lat.size == ITERATIONS and np.array_equal(got_t, t)
    rows_bytes, rows_read_ms = _row_per_iteration_layout(tmp_path / "v3.db", t, lat)
    # The interval: bytes per iteration of each live (per-second) chunk, as the run was being written
    value, interval = median_with_interval([size / n for n, size in live_chunks])
    total = sum(size for _, size in per_chunk) / ITERATIONS
    print(f"\n[benchmark] {ITERATIONS:,} real latencies (median {np.median(lat):.0f} ns): {live_bytes:.2f} B per "
          f"iteration while live (1 s chunks), {total:.2f} B once finished, row-per-iteration layout {rows_bytes:.1f} B")
    bench.record(judge("history: bytes per stored iteration", value, interval, BYTES_GOAL,
                       samples=len(live_chunks), finished=total, row_layout_bytes=rows_bytes))
    read_ms, read_interval = median_with_interval(reads)
    print(f"[benchmark] read {ITERATIONS:,} latencies: {read_ms:.0f} ms (row layout {rows_read_ms:.0f} ms)")
    bench.record(judge("history: read 1M latencies", read_ms, read_interval, READ_GOAL, samples=ROUNDS,
                       row_layout_ms=rows_read_ms))


def test_listing_ten_thousand_runs(tmp_path, bench):
    spec, summary, environment = _real_run_json(tmp_path)
    path = tmp_path / "many.db"
    with HistoryStore(path) as store:
        template = store.create_run(spec)
        store.finish_run(template, "completed", summary=summary, environment=environment)
        for table, changes in (("runs", ("run_id", "started_at")), ("run_facts", ("run_id",))):
            row = store.db.execute(f"SELECT * FROM {table} WHERE run_id = ?", [template]).fetchone()
            columns = [c[0] for c in store.db.execute(f"SELECT * FROM {table} LIMIT 0").description]
            copies = []
            for n in range(RUNS - 1):
                copy = dict(zip(columns, row, strict=True))
                copy["run_id"] = f"{n:032x}"
                if "started_at" in changes:
                    copy["started_at"] = f"2026-{1 + n % 12:02d}-{1 + n % 28:02d}T00:00:{n % 60:02d}.{n:06d}Z"
                copies.append(list(copy.values()))
            store.db.conn.executemany(f"INSERT INTO {table} VALUES ({', '.join('?' * len(columns))})", copies)
        store.commit()
    times = []
    with HistoryStore(path, read_only=True) as reader:
        for _ in range(ROUNDS):
            started = time.perf_counter()
            rows = reader.run_rows()
            times.append((time.perf_counter() - started) * 1e3)
        assert len(rows) == RUNS and rows[0]["p50_ms"] is not None
        started = time.perf_counter()
        reader.list_runs()
        decoded_ms = (time.perf_counter() - started) * 1e3
    value, interval = median_with_interval(times)
    print(f"\n[benchmark] list {RUNS:,} runs: {value:.0f} ms (with every JSON column decoded: {decoded_ms:.0f} ms; "
          f"summary {len(json.dumps(summary))} B, environment {len(json.dumps(environment))} B per run)")
    bench.record(judge("history: list 10,000 runs", value, interval, LIST_GOAL, samples=ROUNDS,
                       decoded_ms=decoded_ms))


def _row_per_iteration_layout(path: Path, t: np.ndarray, lat: np.ndarray) -> tuple[float, float]:
    """Bytes per iteration and one read's time of the v3 table (run_id, t_ns, latency_ns) with its index."""
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE latencies (run_id TEXT NOT NULL, t_ns INTEGER, latency_ns INTEGER)")
    conn.execute("CREATE INDEX idx_latencies_run_id ON latencies (run_id)")
    run_id = "f" * 32
    conn.executemany("INSERT INTO latencies VALUES (?, ?, ?)", zip(repeat(run_id), t.tolist(), lat.tolist()))
    conn.commit()
    pages = conn.execute("PRAGMA page_count").fetchone()[0] * conn.execute("PRAGMA page_size").fetchone()[0]
    started = time.perf_counter()
    rows = conn.execute("SELECT t_ns, latency_ns FROM latencies WHERE run_id = ? ORDER BY rowid", [run_id]).fetchall()
    read_ms = (time.perf_counter() - started) * 1e3
    conn.close()
    assert len(rows) == t.size
    return pages / t.size, read_ms


def _real_run_json(tmp_path: Path) -> tuple[dict, dict, dict]:
    """spec, summary and environment of a real short run, so the listed rows are as big as real ones."""
    db = tmp_path / "one.db"
    done = subprocess.run([sys.executable, "-m", "console", "run", "--model", "mlp", "--duration", "1", "--warmup",
                           "0.2", "--json", "--db", str(db)], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    with HistoryStore(db, read_only=True) as store:
        run = store.list_runs()[0]
    return run["spec"], run["summary"], run["environment"]

