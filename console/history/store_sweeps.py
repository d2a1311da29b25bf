"""Sweeps: a grid of runs started as one action; each run is tagged with its sweep and its point.

One mixin of HistoryStore (store.py says why the store is assembled from parts).
"""

from __future__ import annotations

import sqlite3
import uuid
from collections.abc import Mapping
from typing import Any

from console.history import damage, schema
from console.history.errors import HistoryError, IdPrefixError
from console.history.store_base import StoreBase
from console.history.store_queries import MIN_PREFIX, RUN_SELECT, decode_sweep
from console.history.store_values import dicts, dumps, dumps_or_none


class SweepsMixin(StoreBase):
    """create_sweep, tag_run, finish_sweep and reading sweeps back."""

    # ---- Public API
    def create_sweep(self, name: str, grid: Mapping[str, Any], base: Mapping[str, Any] | None = None,
                     sweep_id: str | None = None) -> str:
        """Record a new `running` sweep (grid: the axes and their values, base: the spec every point starts
        from). Commits."""
        sweep_id = str(sweep_id or uuid.uuid4().hex)
        assert self._lock is not None
        self._lock.hold_shared()  # like a run: a live sweep must not be taken for an interrupted one
        with self._guard(f"creating sweep {sweep_id}"):
            try:
                self._connection.execute(
                    "INSERT INTO sweeps (sweep_id, host_id, name, status, created_at, grid, base) "
                    "VALUES (?, ?, ?, 'running', ?, ?, ?)",
                    [sweep_id, self.host_id, str(name or ""), schema.utc_now(), dumps(grid, "grid"),
                     dumps_or_none(base, "base")])
            except sqlite3.IntegrityError as exc:
                raise HistoryError(f"sweep {sweep_id} already exists in {self.path}",
                                   "leave sweep_id out (a fresh uuid4 is used) or pass a new one.",
                                   self.path) from exc
            self._commit_pending()
        return sweep_id

    def tag_run(self, run_id: str, sweep_id: str, point: Mapping[str, Any]) -> None:
        """Mark a run as one point of a sweep (point: the grid values it ran with). Commits."""
        with self._guard(f"tagging run {run_id} with sweep {sweep_id}"):
            cursor = self._connection.execute("UPDATE runs SET sweep_id = ?, sweep_point = ? WHERE run_id = ?",
                                              [sweep_id, dumps(point, "sweep_point"), run_id])
            self._require_run(cursor, run_id)
            self._commit_pending()

    def finish_sweep(self, sweep_id: str, status: str, summary: Mapping[str, Any] | None = None) -> None:
        """Close a sweep with a final status; a None summary keeps what is stored. Commits."""
        if status not in schema.SWEEP_FINAL_STATUSES:
            raise ValueError(f"status must be one of {', '.join(schema.SWEEP_FINAL_STATUSES)}, got {status!r}")
        with self._guard(f"finishing sweep {sweep_id}"):
            cursor = self._connection.execute(
                "UPDATE sweeps SET status = ?, ended_at = ?, summary = COALESCE(?, summary) WHERE sweep_id = ?",
                [status, schema.utc_now(), dumps_or_none(summary, "summary"), sweep_id])
            if cursor.rowcount == 0:
                raise HistoryError(f"there is no sweep {sweep_id} in {self.path}",
                                   "create it with create_sweep() first (check the sweep id).", self.path)
            self._commit_pending()

    def list_sweeps(self, limit: int | None = None) -> list[dict[str, Any]]:
        """Sweeps newest first, JSON columns decoded, with `runs` and `completed` (how many of its runs)."""
        sql = ("SELECT sweeps.*, (SELECT COUNT(*) FROM runs WHERE runs.sweep_id = sweeps.sweep_id) AS runs, "
               "(SELECT COUNT(*) FROM runs WHERE runs.sweep_id = sweeps.sweep_id AND runs.status = 'completed') "
               "AS completed FROM sweeps ORDER BY created_at DESC, rowid DESC")
        params: list[Any] = []
        if limit is not None:
            sql, params = sql + " LIMIT ?", [int(limit)]
        with self._guard("listing sweeps"):
            return [decode_sweep(row) for row in dicts(self._connection.execute(sql, params))]

    def get_sweep(self, sweep_id_or_prefix: str) -> dict[str, Any] | None:
        """The sweep with this id, or the only one whose id starts with this prefix (≥ 4 chars); None if none.
        A damaged sweep (console.history.damage) raises HistoryError naming the field and the fix."""
        ref = str(sweep_id_or_prefix).strip()
        with self._guard("looking up a sweep"):
            rows = dicts(self._connection.execute("SELECT * FROM sweeps WHERE sweep_id = ?", [ref]))
            if not rows and len(ref) >= MIN_PREFIX:
                rows = dicts(self._connection.execute(
                    "SELECT * FROM sweeps WHERE substr(sweep_id, 1, ?) = ? LIMIT 10", [len(ref), ref]))
        if len(rows) > 1:
            raise IdPrefixError(f"sweep id prefix {ref!r} matches several sweeps: "
                                f"{', '.join(row['sweep_id'] for row in rows)}",
                                f"give more characters of the sweep id (at least {MIN_PREFIX}; the whole id "
                                "always works).", self.path)
        sweep = decode_sweep(rows[0]) if rows else None
        if sweep is not None and sweep.get("damaged"):  # listed by list_sweeps, but not opened or reported
            raise damage.sweep_error(sweep["sweep_id"], sweep["damaged"], self.path)
        return sweep

    def runs_of_sweep(self, sweep_id: str, include_damaged: bool = False) -> list[dict[str, Any]]:
        """The runs of a sweep in the order they ran, JSON columns (sweep_point included) decoded; damaged runs
        are left out (and remembered in skipped_damaged) unless `include_damaged`, as in list_runs."""
        with self._guard(f"reading the runs of sweep {sweep_id}"):
            rows = dicts(self._connection.execute(
                RUN_SELECT + " WHERE runs.sweep_id = ? ORDER BY runs.started_at, runs.rowid", [sweep_id]))
        return self._usable(rows, include_damaged)
