"""A run's iterations (latency chunks) and telemetry samples: held in memory, written at commit, read back.

Bulk inserts are held here and written in one short transaction at the next commit, so a live run holds the write
lock for milliseconds a second. One mixin of HistoryStore (store.py says why the store is assembled from parts).
"""

from __future__ import annotations

import sqlite3
import zlib
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from console.history import latency_codec, v4_upgrade
from console.history.errors import HistoryError
from console.history.store_base import StoreBase
from console.history.store_values import dicts, int_array, sample_row


class SeriesMixin(StoreBase):
    """add_latencies / add_samples (held until commit) and latencies / samples / metrics read back."""

    # ---- Public API
    def add_latencies(self, run_id: str, t_ns: Sequence[int] | np.ndarray, latency_ns: Sequence[int] | np.ndarray) -> None:
        """Append iterations (start timestamp, duration) in arrival order. Does not commit: they are held here
        and stored as one compact chunk per run at the next commit (bigger chunks compress better), or dropped
        by rollback() like any uncommitted write."""
        starts, durations = int_array(t_ns, "t_ns"), int_array(latency_ns, "latency_ns")
        if len(starts) != len(durations):
            raise ValueError(f"t_ns and latency_ns differ in length ({len(starts)} vs {len(durations)})")
        if not len(starts):
            return
        run_id = str(run_id)
        if run_id not in self._next_seq:  # the first batch of a run: refuse an unknown run now, not at commit
            self._require_known(run_id, "recording latencies")
            with self._guard(f"recording latencies for run {run_id}"):
                row = self._connection.execute("SELECT COALESCE(MAX(seq) + 1, 0) FROM latency_chunks "
                                               "WHERE run_id = ?", [run_id]).fetchone()
            self._next_seq[run_id] = int(row[0])
        self._pending.setdefault(run_id, []).append((starts, durations))

    def add_samples(self, run_id: str, rows: Iterable[tuple[int, str, str, float, str, str]]) -> None:
        """Append telemetry rows (t_ns, source, metric, value, unit, method). Does not commit: like latencies
        they are held here and written at the next commit, so no write transaction stays open in between."""
        records = [(str(run_id), *sample_row(row)) for row in rows]
        if not records:
            return
        self._require_known(str(run_id), "recording samples")
        self._pending_samples.extend(records)

    def latencies(self, run_id: str) -> tuple[np.ndarray, np.ndarray]:
        """(t_ns, latency_ns) as int64 arrays in arrival order."""
        with self._guard(f"reading latencies of run {run_id}"):
            self._flush_latencies()
            rows = self._connection.execute(
                "SELECT t0_ns, data FROM latency_chunks WHERE run_id = ? ORDER BY seq", [run_id]).fetchall()
        try:
            parts = [latency_codec.decode(t0, data) for t0, data in rows]
        except (ValueError, zlib.error) as exc:
            raise HistoryError(f"the stored latencies of run {run_id} cannot be decoded ({exc})",
                               "the other runs are unaffected; keep a copy of the file and report it.",
                               self.path) from exc
        if not parts:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
        return np.concatenate([t for t, _ in parts]), np.concatenate([lat for _, lat in parts])

    def latency_count(self, run_id: str) -> int:
        """How many iterations a run stored, without decoding them."""
        with self._guard(f"counting latencies of run {run_id}"):
            row = self._connection.execute("SELECT COALESCE(SUM(n), 0) FROM latency_chunks WHERE run_id = ?",
                                           [run_id]).fetchone()
        return int(row[0]) + sum(len(t) for t, _ in self._pending.get(run_id, []))

    def samples(self, run_id: str, metric: str | None = None) -> list[dict[str, Any]]:
        """Telemetry rows of a run (optionally one metric), ordered by time."""
        sql = "SELECT t_ns, source, metric, value, unit, method FROM samples WHERE run_id = ?"
        params: list[Any] = [run_id]
        if metric is not None:
            sql, params = sql + " AND metric = ?", [run_id, metric]
        with self._guard(f"reading samples of run {run_id}"):
            self._flush_latencies()
            return dicts(self._connection.execute(sql + " ORDER BY t_ns, rowid", params))

    def metrics(self, run_id: str) -> list[str]:
        with self._guard(f"reading metrics of run {run_id}"):
            rows = self._connection.execute(
                "SELECT DISTINCT metric FROM samples WHERE run_id = ? ORDER BY metric", [run_id]).fetchall()
        return [name for (name,) in rows]

    # ---- Private API
    def _flush_latencies(self) -> None:
        """Write the samples and iterations held since the last commit (iterations: one chunk or a few per
        run). Called just before commit, so the write transaction lasts only as long as these inserts."""
        if self._pending_samples:
            self._connection.executemany(
                "INSERT INTO samples (run_id, t_ns, source, metric, value, unit, method) VALUES (?, ?, ?, ?, ?, ?, ?)",
                self._pending_samples)
            self._pending_samples.clear()
        while self._pending:
            run_id, parts = next(iter(self._pending.items()))
            t_ns = np.concatenate([t for t, _ in parts])
            latency_ns = np.concatenate([lat for _, lat in parts])
            try:
                self._connection.execute("SAVEPOINT latencies")
                next_seq = v4_upgrade.insert_chunks(self._connection, run_id, t_ns, latency_ns,
                                                    self._next_seq[run_id])
                self._connection.execute("RELEASE latencies")
            except sqlite3.IntegrityError as exc:
                self._connection.execute("ROLLBACK TO latencies")
                self._connection.execute("RELEASE latencies")
                del self._pending[run_id]
                raise HistoryError(f"recording latencies for run {run_id} was refused by the database ({exc})",
                                   "create a run with create_run() before writing its data.", self.path) from exc
            self._next_seq[run_id] = next_seq
            del self._pending[run_id]

    def _compact_latencies(self, run_id: str) -> None:
        """A finished run's per-second chunks merged into as few as CHUNK_MAX allows: reading a run back then
        costs a few decompressions instead of one per second it ran, and big chunks compress better."""
        rows = self._connection.execute("SELECT n, t0_ns, data FROM latency_chunks WHERE run_id = ? ORDER BY seq",
                                        [run_id]).fetchall()
        if len(rows) <= max(1, -(-sum(n for n, _, _ in rows) // v4_upgrade.CHUNK_MAX)):
            return
        parts = [latency_codec.decode(t0, data) for _, t0, data in rows]
        self._connection.execute("DELETE FROM latency_chunks WHERE run_id = ?", [run_id])
        self._next_seq[run_id] = v4_upgrade.insert_chunks(
            self._connection, run_id, np.concatenate([t for t, _ in parts]),
            np.concatenate([lat for _, lat in parts]), 0)
