"""Runs: created `running`, finished with a status and summary, told where they ran, looked up and listed.

One mixin of HistoryStore (store.py says why the store is assembled from parts).
"""

from __future__ import annotations

import json
import sqlite3
import uuid
from collections.abc import Mapping
from typing import Any

from console.history import damage, schema, v4_upgrade
from console.history.errors import HistoryError, IdPrefixError
from console.history.store_base import StoreBase
from console.history.store_queries import MIN_PREFIX, ROW_SELECT, RUN_SELECT, TABLE_OF, decode_run, filtered
from console.history.store_values import (
    SPEC_COLUMNS,
    as_dict,
    check_storable,
    dicts,
    dumps,
    dumps_or_none,
    int_or_none,
    text_or_none,
)


class RunsMixin(StoreBase):
    """create_run … finish_run, and reading runs back (get_run, list_runs, run_rows)."""

    # ---- Public API
    def create_run(self, spec: Mapping[str, Any] | Any, run_id: str | None = None) -> str:
        """Record a new `running` run; spec is a mapping (or a dataclass) stored as JSON. Commits."""
        spec = as_dict(spec)
        run_id = run_id or uuid.uuid4().hex
        check_storable(spec, self.path)
        row = {column: text_or_none(spec.get(column)) for column in SPEC_COLUMNS}
        row.update(run_id=str(run_id), host_id=self.host_id, status="running", started_at=schema.utc_now(),
                   batch=int_or_none(spec.get("batch")), spec=dumps(spec, "spec"))
        identity = v4_upgrade.run_identity(spec, None, self.hostname, self.host_id)
        assert self._lock is not None
        self._lock.hold_shared()  # from now on, other stores must not take our running runs for dead ones
        columns = ", ".join(row)
        with self._guard(f"creating run {run_id}"):
            try:
                self._connection.execute(f"INSERT INTO runs ({columns}) VALUES ({', '.join('?' * len(row))})",
                                         list(row.values()))
                v4_upgrade.insert_facts(self._connection, str(run_id), *identity, v4_upgrade.precision_of(spec))
            except sqlite3.IntegrityError as exc:
                raise HistoryError(f"run {run_id} already exists in {self.path}",
                                   "leave run_id out (a fresh uuid4 is used) or pass a new one.",
                                   self.path) from exc
            self._commit_pending()
        self._known_runs.add(str(run_id))
        return str(run_id)

    def finish_run(self, run_id: str, status: str, summary: Mapping[str, Any] | None = None,
                   error: str | None = None, environment: Mapping[str, Any] | None = None) -> None:
        """Close a run with a final status. A None summary/error/environment keeps what is stored. Commits."""
        if status not in schema.FINAL_STATUSES:
            raise ValueError(f"status must be one of {', '.join(schema.FINAL_STATUSES)}, got {status!r}")
        with self._guard(f"finishing run {run_id}"):
            cursor = self._connection.execute(
                "UPDATE runs SET status = ?, ended_at = ?, summary = COALESCE(?, summary), "
                "error = COALESCE(?, error), environment = COALESCE(?, environment) WHERE run_id = ?",
                [status, schema.utc_now(), dumps_or_none(summary, "summary"), error,
                 dumps_or_none(environment, "environment"), run_id])
            self._require_run(cursor, run_id)
            if summary is not None:
                self._set_summary_columns(run_id, summary)
            if environment is not None:
                self._refresh_identity(run_id)
            self._flush_latencies()
            self._compact_latencies(run_id)
            self._commit_pending()

    def set_environment(self, run_id: str, environment: Mapping[str, Any]) -> None:
        """Store what the run ran on (versions, driver, CPU flags) as soon as it is known. Commits."""
        with self._guard(f"storing the environment of run {run_id}"):
            cursor = self._connection.execute("UPDATE runs SET environment = ? WHERE run_id = ?",
                                              [dumps(environment, "environment"), run_id])
            self._require_run(cursor, run_id)
            self._refresh_identity(run_id)
            self._flush_latencies()
            self._commit_pending()

    def set_host(self, run_id: str, host_row: Mapping[str, Any]) -> None:
        """Record that a run ran on another machine (a run dispatched to a lab node): that host's row is added
        or refreshed and the run points at it, so its series and baseline are the node's. Commits."""
        with self._guard(f"recording the host of run {run_id}"):
            host_id = self._upsert_host(host_row)
            cursor = self._connection.execute("UPDATE runs SET host_id = ? WHERE run_id = ?", [host_id, run_id])
            self._require_run(cursor, run_id)
            self._refresh_identity(run_id)
            self._commit_pending()

    def hostname_of(self, run: Mapping[str, Any]) -> str | None:
        """The name of the host a run ran on (a history may hold runs of several lab machines)."""
        with self._guard("reading a run's host"):
            row = self._connection.execute("SELECT hostname FROM hosts WHERE host_id = ?",
                                           [run.get("host_id")]).fetchone()
        return row[0] if row else None

    def get_run(self, run_id_or_prefix: str, include_damaged: bool = False) -> dict[str, Any] | None:
        """The run with this id, or the one whose id starts with this prefix (≥ 4 chars); None if none.
        A damaged run (console.history.damage) raises DamagedRunError naming the field and the fix, unless
        `include_damaged`: then it is returned with `damaged` and its damaged columns None."""
        ref = str(run_id_or_prefix).strip()
        with self._guard("looking up a run"):
            rows = dicts(self._connection.execute(RUN_SELECT + " WHERE runs.run_id = ?", [ref]))
            if not rows and len(ref) >= MIN_PREFIX:
                rows = dicts(self._connection.execute(
                    RUN_SELECT + " WHERE substr(runs.run_id, 1, ?) = ? ORDER BY runs.started_at DESC LIMIT 11",
                    [len(ref), ref]))
        if not rows:
            if ref and len(ref) < MIN_PREFIX:
                raise IdPrefixError(f"run id prefix {ref!r} is too short to look a run up",
                                   f"give at least {MIN_PREFIX} characters of the run id "
                                   "(`labconsole history` lists them).", self.path)
            return None
        if len(rows) > 1:
            shown = ", ".join(f"{row['run_id']} ({row['started_at']}, {row['model']})" for row in rows[:10])
            more = " and more" if len(rows) > 10 else ""
            raise IdPrefixError(f"run id prefix {ref!r} matches several runs: {shown}{more}",
                                f"give more characters of the run id (at least {MIN_PREFIX}; the whole id always "
                                "works).", self.path)
        run = decode_run(rows[0])
        if run.get("damaged") and not include_damaged:
            raise damage.DamagedRunError(run["run_id"], run["damaged"], self.path)
        return run

    def list_runs(self, limit: int | None = None, status: str | None = None, include_damaged: bool = False,
                  **filters: Any) -> list[dict[str, Any]]:
        """Runs newest first, JSON columns decoded, each with its host's name. Filters (None = any): model,
        engine, target, precision, fingerprint, hostname, tag, valid (bool), since / until (ISO date or time,
        compared with started_at; until is exclusive, so until="2026-12-01" ends with November).

        A damaged run (a JSON column that is not strict JSON of its kind: console.history.damage) is left out
        and remembered in `skipped_damaged` for the caller's note; `include_damaged` lists it, its damaged
        columns None and `damaged` saying which and why (for `history` and the History page)."""
        sql, params = filtered(RUN_SELECT, limit, status, filters)
        with self._guard("listing runs"):
            rows = dicts(self._connection.execute(sql, params))
        return self._usable(rows, include_damaged)

    def run_rows(self, limit: int | None = None, status: str | None = None, **filters: Any) -> list[dict[str, Any]]:
        """The run_summary view's plain columns (p50_ms, p99_ms, throughput_per_s, valid, energy, tags, note …),
        newest first, with list_runs' filters: a table of thousands of runs without decoding their JSON."""
        sql, params = filtered(ROW_SELECT, limit, status, filters)
        with self._guard("listing runs"):
            rows = dicts(self._connection.execute(sql, params))
            for row in rows:
                tags, reason = ([], None) if row["tags"] in (None, "[]") else damage.decode("tags", row["tags"])
                row["tags"] = tags or []
                if reason:
                    self._mark_damage(row)
        return rows

    # ---- Private API
    def _mark_damage(self, row: dict[str, Any]) -> None:
        """`damaged` on a run_rows row whose tags are damaged, every JSON column checked. The other rows' big JSON
        columns are not read here (checking them costs about as much again as the listing: 10,000 runs, +150 ms):
        a damaged summary shows when the run is opened (get_run)."""
        names = ("spec", "summary", "environment", "sweep_point", "configuration", "tags")
        raw = self._connection.execute(f"SELECT {', '.join(f'{TABLE_OF[name]}.{name}' for name in names)} FROM "
                                       "runs LEFT JOIN run_facts AS f ON f.run_id = runs.run_id WHERE "
                                       "runs.run_id = ?", [row["run_id"]]).fetchone()
        decoded = damage.decode_run(dict(zip(names, raw or (None,) * len(names), strict=True)))
        if decoded.get("damaged"):
            row["damaged"] = decoded["damaged"]

    def _refresh_identity(self, run_id: str) -> None:
        """Recompute a run's fingerprint once its environment is known (a model file's content hash)."""
        row = self._connection.execute(
            "SELECT runs.spec, runs.environment, hosts.hostname, runs.host_id FROM runs "
            "LEFT JOIN hosts ON hosts.host_id = runs.host_id WHERE run_id = ?", [run_id]).fetchone()
        if row is None:
            return
        spec, environment, hostname, host_id = row
        identity = v4_upgrade.run_identity(json.loads(spec or "{}"), json.loads(environment) if environment else None,
                                           hostname, host_id)
        self._connection.execute("UPDATE run_facts SET fingerprint = ?, configuration = ? WHERE run_id = ?",
                                 [*identity, run_id])
