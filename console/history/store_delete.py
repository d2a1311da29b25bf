"""Deleting runs: a run and every row that belongs to it go in one transaction, or nothing does.

"Every row" is found, not listed: each table with a `run_id` column (latency_chunks, samples, ops, artifacts,
run_facts, baselines today, and whatever a later schema adds) loses the run's rows before `runs` does, so no
orphan is left and a new table cannot be forgotten here. A run still `running` under a live writer (a console
recording it now) is refused, because that console would go on writing rows for a run that no longer exists.
The files an artifact row names (traces, reports) are left on disk and listed, for the caller to say so.
A sweep whose every run is deleted goes too (it would list as "0/0 runs" and could still be reported); a sweep
still running keeps its row. `prunable` leaves the configurations' baselines out unless asked: a baseline is old
by nature, and a scheduled prune must not empty regression tracking.
One mixin of HistoryStore (store.py says why the store is assembled from parts).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from datetime import datetime, timedelta, timezone
from typing import Any

from console.history import lock, schema
from console.history.errors import HistoryError
from console.history.store_base import StoreBase

CHUNK = 500  # ids per statement: under SQLite's oldest variable limit (999)


class DeleteMixin(StoreBase):
    """delete_runs, and prunable (which runs an age and a status select)."""

    # ---- Public API
    def delete_runs(self, run_ids: Iterable[str]) -> dict[str, Any]:
        """Delete these runs (whole ids) and every row of theirs, in one transaction. Returns {"runs": the ids
        deleted, "rows": {table: rows deleted}, "artifact_files": the paths their artifact rows named (the files
        are not touched)}. An unknown id, or a run `running` while a console records into this history, refuses
        the whole call with the fix; nothing is deleted then."""
        ids = list(dict.fromkeys(str(run_id) for run_id in run_ids))
        if not ids:
            return {"runs": [], "rows": {}, "artifact_files": []}
        with self._guard(f"deleting {_runs(len(ids))}"):
            self._commit_pending()  # what is held for other runs is written first, in its own transaction
            conn = self._connection
            conn.execute("BEGIN IMMEDIATE")  # the write lock before the status check: no run starts in between
            try:
                statuses = dict(_select(conn, "SELECT run_id, status FROM runs WHERE run_id IN ({})", ids))
                self._refuse_missing_or_running(ids, statuses)
                files = [path for (path,) in _select(conn, "SELECT path FROM artifacts WHERE run_id IN ({}) "
                                                     "ORDER BY created_at", ids)]
                sweeps = [sweep_id for (sweep_id,) in _select(
                    conn, "SELECT DISTINCT sweep_id FROM runs WHERE sweep_id IS NOT NULL AND run_id IN ({})", ids)]
                rows = {table: _delete(conn, table, ids) for table in _run_tables(conn) if table != "runs"}
                rows["runs"] = _delete(conn, "runs", ids)
                rows["sweeps"] = _delete_emptied_sweeps(conn, sweeps)
                conn.commit()
            except BaseException:
                if conn.in_transaction:
                    conn.rollback()
                raise
        for run_id in ids:
            self._known_runs.discard(run_id)
            self._next_seq.pop(run_id, None)
            self.skipped_damaged.pop(run_id, None)
        return {"runs": ids, "rows": {table: n for table, n in rows.items() if n}, "artifact_files": files}

    def prunable(self, older_than_days: float, status: str | None = None,
                 include_baselines: bool = False) -> list[dict[str, Any]]:
        """The runs `prune --older-than DAYS [--status S]` would delete: started more than DAYS ago (optionally
        of one status), never a `running` one, and not a configuration's baseline unless include_baselines;
        newest first, as run_rows lists them."""
        days = float(older_than_days)
        if not math.isfinite(days) or days < 0:
            raise ValueError(f"older_than_days must be a number of days ≥ 0, got {older_than_days!r}")
        if status == "running":
            raise ValueError(f"a running run is not pruned; status must be one of {', '.join(schema.FINAL_STATUSES)}")
        cutoff = (datetime.now(timezone.utc) - timedelta(days=days)).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
        kept = set() if include_baselines else {row["run_id"] for row in self.baselines()}
        return [row for row in self.run_rows(status=status, until=cutoff)
                if row["status"] != "running" and row["run_id"] not in kept]

    # ---- Private API
    def _refuse_missing_or_running(self, ids: list[str], statuses: dict[str, str]) -> None:
        missing = [run_id for run_id in ids if run_id not in statuses]
        if missing:
            raise HistoryError(f"there is no run {', '.join(missing)} in {self.path}; nothing was deleted",
                               "check the run ids (`labconsole history` lists them).", self.path)
        running = [run_id for run_id in ids if statuses[run_id] == "running"]
        if running and lock.live_writer(self.path):
            shown = ", ".join(run_id[:8] for run_id in running)
            raise HistoryError(f"run {shown} is still running: a console is recording into this history; nothing "
                               "was deleted", "wait for the run to end or stop it, then delete it (a run left "
                               "running by a console that died is marked interrupted once no console records).",
                               self.path)


def _run_tables(conn: Any) -> list[str]:
    """Every table with a run_id column, `runs` included."""
    return [table for table in schema.user_tables(conn)
            if any(column[1] == "run_id" for column in conn.execute(f'PRAGMA table_info("{table}")'))]


def _delete_emptied_sweeps(conn: Any, sweep_ids: list[str]) -> int:
    """Delete the sweeps among these that no run is left in, unless still running; the count deleted."""
    sql = ("DELETE FROM sweeps WHERE sweep_id = ? AND status != 'running' "
           "AND NOT EXISTS (SELECT 1 FROM runs WHERE sweep_id = ?)")
    return sum(conn.execute(sql, [sweep_id, sweep_id]).rowcount for sweep_id in sweep_ids)


def _select(conn: Any, sql: str, ids: list[str]) -> list[tuple]:
    rows: list[tuple] = []
    for start in range(0, len(ids), CHUNK):
        part = ids[start:start + CHUNK]
        rows += conn.execute(sql.format(", ".join("?" * len(part))), part).fetchall()
    return rows


def _delete(conn: Any, table: str, ids: list[str]) -> int:
    count = 0
    for start in range(0, len(ids), CHUNK):
        part = ids[start:start + CHUNK]
        count += conn.execute(f'DELETE FROM "{table}" WHERE run_id IN ({", ".join("?" * len(part))})', part).rowcount
    return count


def _runs(count: int) -> str:
    return f"{count} run" + ("" if count == 1 else "s")
