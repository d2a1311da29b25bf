"""HistoryStore: one connection to the run history, used from one thread.

The file is plain SQLite (WAL mode) so `sqlite-utils` and Datasette can open it next to a running console.
Opening validates before it writes: a file that is not SQLite, not a regular file, another tool's database or
one written by a newer Lab Console is refused and left byte-for-byte untouched, because a history is worth more
than the run being started. Readers (`open_reader`) get their own read-only connection and never write.
Bulk inserts (latencies, samples) are held in memory and written at commit in one short transaction, so a
live run holds the write lock for milliseconds a second and a second console never waits long.
"""

from __future__ import annotations

import contextlib
import dataclasses
import errno
import json
import os
import random
import sqlite3
import time
import uuid
import zlib
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from sqlite_utils import Database

from console.history import damage, host, jsoncols, latency_codec, recovery, schema, v4_upgrade
from console.history.errors import (
    OTHER_FILE_FIX,
    WRITABLE_FIX,
    HistoryError,
    IdPrefixError,
    cannot_write,
    not_a_database,
    not_a_file,
    sqlite_code,
    translate,
)
from console.history.lock import WriterLock
from console.history.recovery import INTERRUPTED_ERROR  # noqa: F401 - part of the store's public names

SQLITE_MAGIC = b"SQLite format 3\x00"
BUSY_TIMEOUT_S = 5.0
MIN_PREFIX = 4
_FACTS = ", ".join(f"f.{c}" for c in ("fingerprint", "configuration", "tags", "note", "precision",
                                       *v4_upgrade.SUMMARY_COLUMNS))
_RUN_SELECT = (f"SELECT runs.*, hosts.hostname AS hostname, {_FACTS} FROM runs "
               "LEFT JOIN hosts ON hosts.host_id = runs.host_id LEFT JOIN run_facts AS f ON f.run_id = runs.run_id")
_TABLE_OF = {name: "f" if table == "run_facts" else table for name, (_, table) in damage.RUN_COLUMNS.items()}
# The run_summary view's columns, read from the covering index idx_runs_listing and run_facts (schema v4)
_ROW_SELECT = ("SELECT runs.run_id, runs.name, runs.status, runs.started_at, runs.ended_at, hosts.hostname, runs.model, "
               "runs.engine, runs.target, f.precision, runs.batch, runs.scenario, f.fingerprint, f.iterations, "
               "f.p50_ms, f.p99_ms, f.mean_ms, f.throughput_per_s, f.valid, f.energy_j_per_inference, "
               "f.energy_method, f.baseline_verdict, f.tags, f.note FROM runs "
               "LEFT JOIN hosts ON hosts.host_id = runs.host_id LEFT JOIN run_facts AS f ON f.run_id = runs.run_id")
# list_runs filters: name → SQL condition on one parameter
_RUN_FILTERS = {
    "model": "runs.model = ?", "engine": "runs.engine = ?", "target": "runs.target = ?",
    "precision": "f.precision = ?",
    "since": "runs.started_at >= ?", "until": "runs.started_at < ?", "fingerprint": "f.fingerprint = ?",
    "hostname": "hosts.hostname = ?", "status": "runs.status = ?",
    # damaged tags (not JSON) match no tag rather than failing the whole listing (console.history.damage)
    "tag": "CASE WHEN json_valid(f.tags) THEN EXISTS (SELECT 1 FROM json_each(f.tags) WHERE json_each.value = ?) "
           "ELSE 0 END",
    "valid": "COALESCE(f.valid, 0) = ?",
}
_SPEC_COLUMNS = ("name", "model", "engine", "target", "scenario")


class HistoryStore:
    """Open (create, validate, migrate) the history at `path`; see the module docstring for the rules."""

    # ---- Public API
    def __init__(self, path: str | os.PathLike, read_only: bool = False, *, upgrade_only: bool = False):
        """`read_only`: open to read and never write — no migration, no host record, no recovery of
        interrupted runs; a file of an older schema is refused with the fix (a read-only reader cannot
        migrate it). Every write method then fails with sqlite's 'readonly' error.

        `upgrade_only`: open to migrate and nothing else (no host record, no recovery), for open_reader on
        an older file; such a store only reads afterwards."""
        self.path = Path(path).expanduser()
        self.read_only = read_only
        self._conn: sqlite3.Connection | None = None
        self._lock: WriterLock | None = None
        self._pending: dict[str, list[tuple[np.ndarray, np.ndarray]]] = {}
        self._pending_samples: list[tuple] = []
        self._known_runs: set[str] = set()  # runs seen to exist: their samples are not looked up again
        self._next_seq: dict[str, int] = {}
        # damaged runs (console.history.damage) that listings left out: run_id → [{field, reason}], for a note
        self.skipped_damaged: dict[str, list[dict[str, str]]] = {}
        if read_only:
            self._open_read_only()
            return
        _check_file(self.path)
        self._conn = self._connect()
        try:
            self._db = Database(self._conn, execute_plugins=False)
            _enable_wal(self._conn)
            self._conn.execute("PRAGMA synchronous=NORMAL")
            self._conn.execute("PRAGMA foreign_keys=ON")
            self._migrate()
            if upgrade_only:
                self.host_id, self.hostname = None, None
                return
            self.host_id, self.hostname = self._register_host()
            self._lock = WriterLock(self.path)
            self._recover_interrupted()
        except BaseException as exc:
            self._abandon()
            if isinstance(exc, (sqlite3.Error, OSError)):
                raise translate(exc, self.path, "opening the history") from exc
            raise

    @property
    def db(self) -> Database:
        """The sqlite-utils Database on this connection, for ad-hoc reads (the CLI's queries, exports)."""
        return self._db

    def create_run(self, spec: Mapping[str, Any] | Any, run_id: str | None = None) -> str:
        """Record a new `running` run; spec is a mapping (or a dataclass) stored as JSON. Commits."""
        spec = _as_dict(spec)
        run_id = run_id or uuid.uuid4().hex
        check_storable(spec, self.path)
        row = {column: _text_or_none(spec.get(column)) for column in _SPEC_COLUMNS}
        row.update(run_id=str(run_id), host_id=self.host_id, status="running", started_at=schema.utc_now(),
                   batch=_int_or_none(spec.get("batch")), spec=_dumps(spec, "spec"))
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
                [status, schema.utc_now(), _dumps_or_none(summary, "summary"), error,
                 _dumps_or_none(environment, "environment"), run_id])
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
                                              [_dumps(environment, "environment"), run_id])
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

    def _upsert_host(self, host_row: Mapping[str, Any]) -> str:
        """Add or refresh another machine's hosts row (a node's `console.history.host.describe()`); its host_id.
        Does not commit: the caller's transaction does."""
        row = {key: _text_or_none(host_row.get(key)) for key in ("host_id", "hostname", "os", "machine", "cpu",
                                                                  "python")}
        if not row["host_id"]:
            raise ValueError("a host row needs its host_id")
        self._connection.execute(
            "INSERT INTO hosts (host_id, hostname, os, machine, cpu, python, first_seen) "
            "VALUES (:host_id, :hostname, :os, :machine, :cpu, :python, :first_seen) "
            "ON CONFLICT(host_id) DO UPDATE SET hostname = excluded.hostname, os = excluded.os, "
            "machine = excluded.machine, cpu = excluded.cpu, python = excluded.python",
            {**row, "first_seen": schema.utc_now()})
        return row["host_id"]

    def add_latencies(self, run_id: str, t_ns: Sequence[int] | np.ndarray, latency_ns: Sequence[int] | np.ndarray) -> None:
        """Append iterations (start timestamp, duration) in arrival order. Does not commit: they are held here
        and stored as one compact chunk per run at the next commit (bigger chunks compress better), or dropped
        by rollback() like any uncommitted write."""
        starts, durations = _int_array(t_ns, "t_ns"), _int_array(latency_ns, "latency_ns")
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

    # ---- Sweeps: a grid of runs started as one action; each run is tagged with its sweep and its point
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
                    [sweep_id, self.host_id, str(name or ""), schema.utc_now(), _dumps(grid, "grid"),
                     _dumps_or_none(base, "base")])
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
                                              [sweep_id, _dumps(point, "sweep_point"), run_id])
            self._require_run(cursor, run_id)
            self._commit_pending()

    def finish_sweep(self, sweep_id: str, status: str, summary: Mapping[str, Any] | None = None) -> None:
        """Close a sweep with a final status; a None summary keeps what is stored. Commits."""
        if status not in schema.SWEEP_FINAL_STATUSES:
            raise ValueError(f"status must be one of {', '.join(schema.SWEEP_FINAL_STATUSES)}, got {status!r}")
        with self._guard(f"finishing sweep {sweep_id}"):
            cursor = self._connection.execute(
                "UPDATE sweeps SET status = ?, ended_at = ?, summary = COALESCE(?, summary) WHERE sweep_id = ?",
                [status, schema.utc_now(), _dumps_or_none(summary, "summary"), sweep_id])
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
            return [_decode_sweep(row) for row in _dicts(self._connection.execute(sql, params))]

    def get_sweep(self, sweep_id_or_prefix: str) -> dict[str, Any] | None:
        """The sweep with this id, or the only one whose id starts with this prefix (≥ 4 chars); None if none.
        A damaged sweep (console.history.damage) raises HistoryError naming the field and the fix."""
        ref = str(sweep_id_or_prefix).strip()
        with self._guard("looking up a sweep"):
            rows = _dicts(self._connection.execute("SELECT * FROM sweeps WHERE sweep_id = ?", [ref]))
            if not rows and len(ref) >= MIN_PREFIX:
                rows = _dicts(self._connection.execute(
                    "SELECT * FROM sweeps WHERE substr(sweep_id, 1, ?) = ? LIMIT 10", [len(ref), ref]))
        if len(rows) > 1:
            raise IdPrefixError(f"sweep id prefix {ref!r} matches several sweeps: "
                                f"{', '.join(row['sweep_id'] for row in rows)}",
                                f"give more characters of the sweep id (at least {MIN_PREFIX}; the whole id "
                                "always works).", self.path)
        sweep = _decode_sweep(rows[0]) if rows else None
        if sweep is not None and sweep.get("damaged"):  # listed by list_sweeps, but not opened or reported
            raise damage.sweep_error(sweep["sweep_id"], sweep["damaged"], self.path)
        return sweep

    def runs_of_sweep(self, sweep_id: str, include_damaged: bool = False) -> list[dict[str, Any]]:
        """The runs of a sweep in the order they ran, JSON columns (sweep_point included) decoded; damaged runs
        are left out (and remembered in skipped_damaged) unless `include_damaged`, as in list_runs."""
        with self._guard(f"reading the runs of sweep {sweep_id}"):
            rows = _dicts(self._connection.execute(
                _RUN_SELECT + " WHERE runs.sweep_id = ? ORDER BY runs.started_at, runs.rowid", [sweep_id]))
        return self._usable(rows, include_damaged)

    # ---- Machine cards, per-op profiles and artifacts (schema v3)
    def add_machine_card(self, card: Mapping[str, Any], card_id: str | None = None,
                         host_row: Mapping[str, Any] | None = None) -> str:
        """Keep a target's measured ceilings (engines.machine's card) for this host, or for the host of `host_row`
        (a card a lab node measured of itself). Commits."""
        card = _as_dict(card)
        card_id = card_id or uuid.uuid4().hex
        with self._guard("storing a machine card"):
            host_id = self._upsert_host(host_row) if host_row else self.host_id
            row = {"card_id": card_id, "host_id": host_id, "hostname": _text_or_none(card.get("host")),
                   "target": str(card.get("target") or "cpu"), "device_name": _text_or_none(card.get("device_name")),
                   "measured_at": str(card.get("measured_at") or schema.utc_now()), "card": _dumps(card, "card")}
            self._connection.execute(f"INSERT INTO machine_cards ({', '.join(row)}) VALUES "
                                     f"({', '.join('?' * len(row))})", list(row.values()))
            self._commit_pending()
        return card_id

    def machine_cards(self, hostname: str | None = None, target: str | None = None,
                      latest_only: bool = False) -> list[dict[str, Any]]:
        """Stored cards newest first (each the card dict plus card_id), optionally of one host and target;
        `latest_only`: the newest card of each (host, target)."""
        sql, params = "SELECT card_id, hostname, target, card FROM machine_cards WHERE 1 = 1", []
        for column, value in (("hostname", hostname), ("target", target)):
            if value is not None:
                sql, params = sql + f" AND {column} = ?", [*params, value]
        with self._guard("reading machine cards"):
            rows = _dicts(self._connection.execute(sql + " ORDER BY measured_at DESC, rowid DESC", params))
        cards, seen = [], set()
        for row in rows:
            if latest_only and (row["hostname"], row["target"]) in seen:
                continue
            seen.add((row["hostname"], row["target"]))
            cards.append({**json.loads(row["card"]), "card_id": row["card_id"]})
        return cards

    def hostname_of(self, run: Mapping[str, Any]) -> str | None:
        """The name of the host a run ran on (a history may hold runs of several lab machines)."""
        with self._guard("reading a run's host"):
            row = self._connection.execute("SELECT hostname FROM hosts WHERE host_id = ?",
                                           [run.get("host_id")]).fetchone()
        return row[0] if row else None

    def add_ops(self, run_id: str, ops: Iterable[Mapping[str, Any]]) -> None:
        """A run's per-op profile: op, calls, time_s, flops, bytes; the rest of each row kept as detail. Commits."""
        core = ("op", "calls", "time_s", "flops", "bytes")
        rows = [(run_id, str(op["op"]), _int_or_none(op.get("calls")), op.get("time_s"), op.get("flops"),
                 op.get("bytes"), _dumps({k: v for k, v in op.items() if k not in core}, "op detail")) for op in ops]
        with self._guard(f"storing the profile of run {run_id}"):
            self._connection.executemany("INSERT INTO ops (run_id, op, calls, time_s, flops, bytes, detail) "
                                         "VALUES (?, ?, ?, ?, ?, ?, ?)", rows)
            self._commit_pending()

    def ops(self, run_id: str) -> list[dict[str, Any]]:
        """A run's per-op profile in the order it was stored (details merged back in)."""
        with self._guard(f"reading the profile of run {run_id}"):
            rows = _dicts(self._connection.execute("SELECT op, calls, time_s, flops, bytes, detail FROM ops "
                                                   "WHERE run_id = ? ORDER BY rowid", [run_id]))
        return [{**json.loads(row.pop("detail") or "{}"), **row} for row in rows]

    def add_artifact(self, run_id: str, kind: str, path: str | os.PathLike, size: int | None = None) -> str:
        """Remember a file kept with a run (a Chrome trace, a report). Commits."""
        artifact_id = uuid.uuid4().hex
        with self._guard(f"storing an artifact of run {run_id}"):
            self._connection.execute("INSERT INTO artifacts (artifact_id, run_id, kind, path, bytes, created_at) "
                                     "VALUES (?, ?, ?, ?, ?, ?)",
                                     [artifact_id, run_id, kind, str(path), _int_or_none(size), schema.utc_now()])
            self._commit_pending()
        return artifact_id

    def artifacts(self, run_id: str, kind: str | None = None) -> list[dict[str, Any]]:
        sql, params = "SELECT * FROM artifacts WHERE run_id = ?", [run_id]
        if kind is not None:
            sql, params = sql + " AND kind = ?", [*params, kind]
        with self._guard(f"reading the artifacts of run {run_id}"):
            return _dicts(self._connection.execute(sql + " ORDER BY created_at", params))

    def commit(self) -> None:
        with self._guard("committing"):
            self._commit_pending()

    def rollback(self) -> None:
        """Drop what was written since the last commit (the writer replays it after a disk-full error)."""
        self._pending.clear()
        self._pending_samples.clear()
        self._next_seq.clear()
        with self._guard("rolling back"):
            self._connection.rollback()

    def list_runs(self, limit: int | None = None, status: str | None = None, include_damaged: bool = False,
                  **filters: Any) -> list[dict[str, Any]]:
        """Runs newest first, JSON columns decoded, each with its host's name. Filters (None = any): model,
        engine, target, precision, fingerprint, hostname, tag, valid (bool), since / until (ISO date or time,
        compared with started_at; until is exclusive, so until="2026-12-01" ends with November).

        A damaged run (a JSON column that is not strict JSON of its kind: console.history.damage) is left out
        and remembered in `skipped_damaged` for the caller's note; `include_damaged` lists it, its damaged
        columns None and `damaged` saying which and why (for `history` and the History page)."""
        sql, params = _filtered(_RUN_SELECT, limit, status, filters)
        with self._guard("listing runs"):
            rows = _dicts(self._connection.execute(sql, params))
        return self._usable(rows, include_damaged)

    def run_rows(self, limit: int | None = None, status: str | None = None, **filters: Any) -> list[dict[str, Any]]:
        """The run_summary view's plain columns (p50_ms, p99_ms, throughput_per_s, valid, energy, tags, note …),
        newest first, with list_runs' filters: a table of thousands of runs without decoding their JSON."""
        sql, params = _filtered(_ROW_SELECT, limit, status, filters)
        with self._guard("listing runs"):
            rows = _dicts(self._connection.execute(sql, params))
            for row in rows:
                tags, reason = ([], None) if row["tags"] in (None, "[]") else damage.decode("tags", row["tags"])
                row["tags"] = tags or []
                if reason:
                    self._mark_damage(row)
        return rows

    # ---- Series, baselines, tags and notes (schema v4)
    def series(self, fingerprint: str) -> list[dict[str, Any]]:
        """The completed runs of one configuration, oldest first: the series regressions are found in."""
        return list(reversed(self.list_runs(status="completed", fingerprint=fingerprint)))

    def configurations(self) -> list[dict[str, Any]]:
        """Every configuration in the history: {fingerprint, configuration, runs (completed), first_started_at,
        last_started_at, baseline_run_id}, the most recently run first."""
        sql = ("SELECT f.fingerprint, MAX(f.configuration) AS configuration, COUNT(*) AS runs, "
               "MIN(runs.started_at) AS first_started_at, MAX(runs.started_at) AS last_started_at, "
               "baselines.run_id AS baseline_run_id FROM runs JOIN run_facts AS f ON f.run_id = runs.run_id "
               "LEFT JOIN baselines ON baselines.fingerprint = f.fingerprint "
               "WHERE runs.status = 'completed' AND f.fingerprint IS NOT NULL "
               "GROUP BY f.fingerprint ORDER BY last_started_at DESC")
        with self._guard("listing configurations"):
            rows = _dicts(self._connection.execute(sql))
        for row in rows:  # a damaged configuration reads as unknown: its series is still judged by fingerprint
            row["configuration"] = damage.decode("configuration", row["configuration"])[0]
        return rows

    def set_tags(self, run_id: str, tags: Iterable[str]) -> list[str]:
        """Replace a run's tags (trimmed, empty ones dropped, each once, in the order given). Commits."""
        clean = list(dict.fromkeys(str(tag).strip() for tag in tags if str(tag).strip()))
        self._update_run(run_id, "tags", _dumps(clean, "tags"), "tagging")
        return clean

    def set_note(self, run_id: str, note: str | None) -> None:
        """A free-text note on a run (None or blank clears it). Commits."""
        self._update_run(run_id, "note", (note or "").strip() or None, "noting")

    def set_summary_field(self, run_id: str, key: str, value: Any) -> None:
        """Merge one top-level key into a run's stored summary (e.g. its baseline verdict). Commits."""
        with self._guard(f"updating the summary of run {run_id}"):
            row = self._connection.execute("SELECT summary FROM runs WHERE run_id = ?", [run_id]).fetchone()
            if row is None:
                raise HistoryError(f"there is no run {run_id} in {self.path}",
                                   "check the run id (`labconsole history` lists them).", self.path)
            summary, reason = damage.decode("summary", row[0])
            if reason:  # merging into it would replace what is left of it
                raise damage.DamagedRunError(run_id, [{"field": "summary", "reason": reason}], self.path)
            summary = summary or {}
            summary[key] = value
            self._connection.execute("UPDATE runs SET summary = ? WHERE run_id = ?",
                                     [_dumps(summary, "summary"), run_id])
            self._set_summary_columns(run_id, summary)
            self._commit_pending()

    def set_baseline(self, run_id: str) -> str:
        """Make a completed, valid run the baseline of its configuration (replacing the previous one); returns
        the configuration's fingerprint. Commits."""
        run = self.get_run(run_id)
        if run is None:
            raise HistoryError(f"there is no run {run_id!r} in {self.path}",
                               "check the run id (`labconsole history` lists them).", self.path)
        short = run["run_id"][:8]
        if run["status"] != "completed":
            raise HistoryError(f"run {short} is {run['status']}, so it cannot be a baseline",
                               "choose a completed run of the same configuration.", self.path)
        if not (run.get("summary") or {}).get("valid"):
            reasons = "; ".join(r.get("detail", "") for r in (run.get("summary") or {}).get("invalid_reasons", []))
            raise HistoryError(f"run {short} is not a valid measurement ({reasons or 'no summary'}), so it cannot "
                               "be a baseline", "rerun the configuration until it is valid (longer duration or "
                               "more iterations) and set that run.", self.path)
        with self._guard(f"setting run {short} as a baseline"):
            self._connection.execute("INSERT INTO baselines (fingerprint, run_id, set_at) VALUES (?, ?, ?) "
                                     "ON CONFLICT(fingerprint) DO UPDATE SET run_id = excluded.run_id, "
                                     "set_at = excluded.set_at", [run["fingerprint"], run["run_id"], schema.utc_now()])
            self._commit_pending()
        return str(run["fingerprint"])

    def baseline_of(self, fingerprint: str) -> dict[str, Any] | None:
        """The baseline run of a configuration, or None."""
        with self._guard("reading a baseline"):
            row = self._connection.execute("SELECT run_id FROM baselines WHERE fingerprint = ?",
                                           [fingerprint]).fetchone()
        return self.get_run(row[0]) if row else None

    def clear_baseline(self, fingerprint: str) -> bool:
        """Forget a configuration's baseline; False when it had none. Commits."""
        with self._guard("clearing a baseline"):
            cursor = self._connection.execute("DELETE FROM baselines WHERE fingerprint = ?", [fingerprint])
            self._commit_pending()
        return cursor.rowcount > 0

    def baselines(self) -> list[dict[str, Any]]:
        with self._guard("listing baselines"):
            return _dicts(self._connection.execute("SELECT fingerprint, run_id, set_at FROM baselines "
                                                   "ORDER BY set_at DESC"))

    def get_run(self, run_id_or_prefix: str, include_damaged: bool = False) -> dict[str, Any] | None:
        """The run with this id, or the one whose id starts with this prefix (≥ 4 chars); None if none.
        A damaged run (console.history.damage) raises DamagedRunError naming the field and the fix, unless
        `include_damaged`: then it is returned with `damaged` and its damaged columns None."""
        ref = str(run_id_or_prefix).strip()
        with self._guard("looking up a run"):
            rows = _dicts(self._connection.execute(_RUN_SELECT + " WHERE runs.run_id = ?", [ref]))
            if not rows and len(ref) >= MIN_PREFIX:
                rows = _dicts(self._connection.execute(
                    _RUN_SELECT + " WHERE substr(runs.run_id, 1, ?) = ? ORDER BY runs.started_at DESC LIMIT 11",
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
        run = _decode_run(rows[0])
        if run.get("damaged") and not include_damaged:
            raise damage.DamagedRunError(run["run_id"], run["damaged"], self.path)
        return run

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
            return _dicts(self._connection.execute(sql + " ORDER BY t_ns, rowid", params))

    def metrics(self, run_id: str) -> list[str]:
        with self._guard(f"reading metrics of run {run_id}"):
            rows = self._connection.execute(
                "SELECT DISTINCT metric FROM samples WHERE run_id = ? ORDER BY metric", [run_id]).fetchall()
        return [name for (name,) in rows]

    def integrity_check(self) -> str:
        """'ok' when SQLite finds the file sound, else its list of problems, one per line."""
        with self._guard("checking integrity"):
            rows = self._connection.execute("PRAGMA integrity_check").fetchall()
        return "\n".join(str(row[0]) for row in rows)

    def close(self) -> None:
        """Commit what is pending and close; safe to call twice."""
        if self._conn is None:
            return
        try:
            self.commit()
        finally:
            self._abandon()

    def __enter__(self) -> HistoryStore:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # ---- Private API
    def _usable(self, rows: list[dict[str, Any]], include_damaged: bool) -> list[dict[str, Any]]:
        """Decoded runs; a damaged one kept (include_damaged) or left out and remembered in skipped_damaged."""
        runs = []
        for run in map(_decode_run, rows):
            if run.get("damaged") and not include_damaged:
                self.skipped_damaged[run["run_id"]] = run["damaged"]
            else:
                runs.append(run)
        return runs

    def _mark_damage(self, row: dict[str, Any]) -> None:
        """`damaged` on a run_rows row whose tags are damaged, every JSON column checked. The other rows' big JSON
        columns are not read here (checking them costs about as much again as the listing: 10,000 runs, +150 ms):
        a damaged summary shows when the run is opened (get_run)."""
        names = ("spec", "summary", "environment", "sweep_point", "configuration", "tags")
        raw = self._connection.execute(f"SELECT {', '.join(f'{_TABLE_OF[name]}.{name}' for name in names)} FROM "
                                       "runs LEFT JOIN run_facts AS f ON f.run_id = runs.run_id WHERE "
                                       "runs.run_id = ?", [row["run_id"]]).fetchone()
        decoded = damage.decode_run(dict(zip(names, raw or (None,) * len(names), strict=True)))
        if decoded.get("damaged"):
            row["damaged"] = decoded["damaged"]

    @property
    def _connection(self) -> sqlite3.Connection:
        if self._conn is None:
            raise HistoryError(f"the history store for {self.path} is closed", "open a new HistoryStore.", self.path)
        return self._conn

    @contextlib.contextmanager
    def _guard(self, doing: str) -> Iterator[None]:
        try:
            yield
        except sqlite3.IntegrityError as exc:
            raise HistoryError(f"{doing} was refused by the database ({exc})",
                               "create a run with create_run() before writing its data, and give each run a "
                               "new run_id.", self.path) from exc
        except (sqlite3.Error, OSError) as exc:
            raise translate(exc, self.path, doing) from exc
        except UnicodeEncodeError as exc:  # a lone surrogate in a note, a tag, a path: SQLite stores UTF-8 only
            raise HistoryError(f"{doing} was refused: the text holds {ascii(exc.object[exc.start:exc.end])}, which "
                               "is not a character (a byte of text in another encoding)",
                               "use plain Unicode text (rename the file if the text is a file name).",
                               self.path) from exc

    def _connect(self) -> sqlite3.Connection:
        """Connect and read the schema version without writing anything, refusing files we must not touch."""
        try:
            conn = sqlite3.connect(str(self.path), timeout=BUSY_TIMEOUT_S)
        except sqlite3.Error as exc:
            raise translate(exc, self.path, "opening the history") from exc
        try:
            conn.execute(f"PRAGMA busy_timeout={int(BUSY_TIMEOUT_S * 1000)}")
            conn.execute("BEGIN")  # one read snapshot: a console creating the file at this moment is seen whole
            try:
                version = _version_or_refuse(conn, self.path)
                foreign = schema.user_tables(conn) if version == 0 else []
            finally:
                conn.rollback()
            if version > schema.LATEST_VERSION:
                raise HistoryError(
                    f"{self.path} was written by a newer Lab Console (history schema version {version}; this "
                    f"build reads up to {schema.LATEST_VERSION}). It was left untouched",
                    "upgrade Lab Console, or point --db / LABCONSOLE_DB at another file.", self.path)
            if foreign:
                raise HistoryError(
                    f"{self.path} is an SQLite database but not a Lab Console history (it holds tables "
                    f"{', '.join(foreign[:8])}). It was left untouched", OTHER_FILE_FIX, self.path)
        except BaseException as exc:
            conn.close()
            if isinstance(exc, sqlite3.Error):
                raise translate(exc, self.path, "reading the history") from exc
            raise
        return conn

    def _migrate(self) -> None:
        """Bring the file to the latest schema (a no-op read when it is there); refuses another tool's file."""
        try:
            schema.migrate(self._db, schema.read_version(self._connection))
        except schema.NotAHistory as exc:
            raise _foreign(self.path, str(exc)) from exc

    def _register_host(self) -> tuple[str, str]:
        """This machine's hosts row, written only when it is missing or changed: an open that has nothing new
        to say takes no write lock, so it never waits on a run another console is recording."""
        row = host.describe()
        columns = ("hostname", "os", "machine", "cpu", "python")
        stored = self._connection.execute(f"SELECT {', '.join(columns)} FROM hosts WHERE host_id = ?",
                                          [row["host_id"]]).fetchone()
        if stored is None or tuple(stored) != tuple(row[column] for column in columns):
            self._upsert_host(row)
            self._commit_pending()
        return row["host_id"], row["hostname"]

    def _recover_interrupted(self) -> None:
        """Runs left `running` by a console that is gone become `interrupted`, with a summary of what they
        stored (recovery.py; see lock.py for 'gone')."""
        assert self._lock is not None and self._conn is not None
        if not self._lock.no_live_writer():
            return
        try:
            recovery.recover(self._conn)
        finally:
            self._lock.release_exclusive()

    def _commit_pending(self) -> None:
        """Every commit writes what is held too: rows left pending past a commit could later be dropped by a
        rollback that the writer, which replays only what it applied since its last commit, would not see."""
        self._flush_latencies()
        self._connection.commit()

    def _require_known(self, run_id: str, doing: str) -> None:
        """Refuse data for a run that does not exist now (a read, no lock), not later at commit."""
        if run_id in self._known_runs:
            return
        with self._guard(f"{doing} for run {run_id}"):
            found = self._connection.execute("SELECT 1 FROM runs WHERE run_id = ?", [run_id]).fetchone()
        if found is None:
            raise HistoryError(f"{doing} for run {run_id} was refused: there is no such run in {self.path}",
                               "create a run with create_run() before writing its data.", self.path)
        self._known_runs.add(run_id)

    def _open_read_only(self) -> None:
        self._conn, version = _read_only_connection(self.path)
        # A reader lists thousands of runs: a page cache up to 64 MiB (taken only as pages are read) holds the
        # listing index and run_facts, where the default 2 MiB re-reads them (10,000 runs: 60 → 45 ms here).
        self._conn.execute("PRAGMA cache_size=-65536")
        if version != schema.LATEST_VERSION:
            self._abandon()
            newer = version > schema.LATEST_VERSION
            raise HistoryError(
                f"{self.path} holds history schema version {version}; this build reads version "
                f"{schema.LATEST_VERSION}" + (" (it was written by a newer Lab Console)" if newer else ""),
                "upgrade Lab Console" if newer else "open it once with Lab Console (any run or `labconsole history`) "
                "so it is migrated, then read it again", self.path)
        self._db = Database(self._conn, execute_plugins=False)
        self.host_id, self.hostname = None, None

    def _update_run(self, run_id: str, column: str, value: Any, doing: str) -> None:
        with self._guard(f"{doing} run {run_id}"):
            cursor = self._connection.execute(f"UPDATE run_facts SET {column} = ? WHERE run_id = ?", [value, run_id])
            self._require_run(cursor, run_id)
            self._commit_pending()

    def _set_summary_columns(self, run_id: str, summary: Mapping[str, Any]) -> None:
        plain = v4_upgrade.summary_columns(jsoncols.finite(dict(summary)))
        self._connection.execute(f"UPDATE run_facts SET {', '.join(f'{column} = ?' for column in plain)} "
                                 "WHERE run_id = ?", [*plain.values(), run_id])

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

    def _require_run(self, cursor: sqlite3.Cursor, run_id: str) -> None:
        if cursor.rowcount == 0:
            raise HistoryError(f"there is no run {run_id} in {self.path}",
                               "create it with create_run() first (check the run id).", self.path)

    def _abandon(self) -> None:
        if self._conn is not None:
            with contextlib.suppress(sqlite3.Error):
                self._conn.close()
            self._conn = None
        if self._lock is not None:
            self._lock.close()
            self._lock = None


def open_reader(path: str | os.PathLike) -> HistoryStore:
    """A read-only store for commands that only read (history, compare, export, regressions …): its own
    read-only connection, no host record, no recovery, no write lock, so it never waits on a live run's writer
    and never changes the file (a file on a read-only disk or directory is read too). The one exception is a
    file of an older schema, upgraded once (as any Lab Console that opens it would: only the migration, in one
    transaction) before it is read; a file that does not exist yet is an error naming the fix."""
    path = Path(path).expanduser()
    conn, version = _read_only_connection(path)
    conn.close()
    if version < schema.LATEST_VERSION:
        _upgrade(path)
    return HistoryStore(path, read_only=True)


def check_storable(spec: Mapping[str, Any], path: str | os.PathLike | None = None) -> None:
    """Refuse a spec whose text SQLite cannot store (a lone surrogate such as '\\udcff': a byte of a file name or
    an argument in another encoding), naming the field, before anything is measured for it."""
    for column in _SPEC_COLUMNS:
        value = spec.get(column)
        if value is None:
            continue
        try:
            str(value).encode("utf-8")
        except UnicodeEncodeError as exc:
            flag = "--name" if column == "name" else f"--{column}"
            raise HistoryError(
                f"the run's {column} {ascii(str(value))} cannot be stored in the history: it holds "
                f"{ascii(exc.object[exc.start:exc.end])}, which is not a character (a byte of text in another "
                "encoding, e.g. from a file name)",
                f"give a {column} in plain Unicode text ({flag} TEXT); rename the file if it came from one.",
                path) from exc


# ---- Private helpers
def _read_only_connection(path: Path) -> tuple[sqlite3.Connection, int]:
    """A read-only connection to an existing history and its schema version; writes nothing.

    SQLite reads a WAL file through a `-shm` file it creates next to it; on a read-only directory or disk it
    cannot, so the file is then opened immutable (nobody can be writing it there either)."""
    _check_name(path)
    if not path.exists():
        raise HistoryError(f"there is no history at {path} yet", "run something first (`labconsole run` or the "
                           "window), or point --db / LABCONSOLE_DB at an existing history.", path)
    if not path.is_file():
        raise not_a_file(path) if not path.is_dir() else HistoryError(
            f"{path} is a directory, not a database file",
            f"give a file path such as {path / 'history.db'} with --db PATH or LABCONSOLE_DB.", path)
    _check_magic(path)
    uri = f"{path.resolve().as_uri()}?mode=ro"
    for attempt in (uri, f"{uri}&immutable=1"):
        conn = None
        try:
            conn = sqlite3.connect(attempt, uri=True, timeout=BUSY_TIMEOUT_S)
            return conn, _version_or_refuse(conn, path)
        except sqlite3.Error as exc:
            if conn is not None:
                conn.close()
            if attempt == uri and sqlite_code(exc) in (_READONLY, _CANTOPEN) and _unwritable_dir(path):
                continue
            raise translate(exc, path, "opening the history to read") from exc
        except BaseException:
            if conn is not None:
                conn.close()
            raise
    raise AssertionError("unreachable")  # pragma: no cover


_READONLY, _CANTOPEN = 8, 14


def _unwritable_dir(path: Path) -> bool:
    """No -shm can be created beside the file, and no -wal is there for an immutable open to overlook."""
    return not os.access(path.parent, os.W_OK) and not Path(f"{path}-wal").exists()


def _version_or_refuse(conn: sqlite3.Connection, path: Path) -> int:
    try:
        return schema.read_version(conn)
    except schema.NotAHistory as exc:
        raise _foreign(path, str(exc)) from exc


def _foreign(path: Path, detail: str) -> HistoryError:
    return HistoryError(f"{path} is an SQLite database but not a Lab Console history ({detail}). It was left "
                        "untouched", OTHER_FILE_FIX, path)


def _upgrade(path: Path) -> None:
    """Migrate an older history so it can be read: validation, the WAL switch and the migration, nothing else
    (no host record, no recovery: reading must not change what the file says about runs)."""
    HistoryStore(path, upgrade_only=True).close()


def _check_name(path: Path) -> None:
    """A path the system cannot name (LABCONSOLE_DB with a 300-character file name: ENAMETOOLONG) is a
    HistoryError saying so, not an OSError out of the exists()/is_dir() checks that follow."""
    try:
        os.stat(path)
    except OSError as exc:
        if exc.errno == errno.ENAMETOOLONG:
            raise HistoryError(f"{path}: {exc.strerror} ({len(os.fsencode(path)):,} bytes)",
                               "give a shorter path with --db PATH or the LABCONSOLE_DB environment variable.",
                               path) from None


def _check_file(path: Path) -> None:
    """Refuse, before SQLite opens anything, a path we cannot write or a file that is not SQLite."""
    _check_name(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise cannot_write(path, exc.strerror or str(exc)) from exc
    if path.is_dir():
        raise HistoryError(f"{path} is a directory, not a database file",
                           f"give a file path such as {path / 'history.db'} with --db PATH or LABCONSOLE_DB.", path)
    if not path.exists():
        if not os.access(path.parent, os.W_OK | os.X_OK):
            raise cannot_write(path, "Permission denied")
        return
    if not path.is_file():  # /dev/null, a pipe: SQLite would "open" it and create <path>-journal beside it
        raise not_a_file(path)
    if not os.access(path, os.R_OK | os.W_OK):
        raise cannot_write(path, "Permission denied")
    _check_magic(path)


def _check_magic(path: Path) -> None:
    """Refuse a file that is not SQLite before SQLite opens it (an empty file is a new history)."""
    try:
        with open(path, "rb") as handle:
            head = handle.read(len(SQLITE_MAGIC))
    except OSError as exc:
        raise HistoryError(f"cannot read the history database at {path}: {exc.strerror or exc}", WRITABLE_FIX,
                           path) from exc
    if head and head != SQLITE_MAGIC:
        raise not_a_database(path)


def _as_dict(value: Any) -> dict[str, Any]:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    if isinstance(value, Mapping):
        return dict(value)
    raise TypeError(f"spec must be a mapping or a dataclass, got {type(value).__name__}")


def _dumps(value: Any, what: str) -> str:
    return jsoncols.dumps(value, what)


def json_copy(value: Any, what: str) -> Any:
    """A deep, JSON-shaped copy: what the database will hold, taken now (the caller may mutate the original)."""
    return None if value is None else json.loads(_dumps(value, what))


def _dumps_or_none(value: Any, what: str) -> str | None:
    return None if value is None else _dumps(value, what)


def _text_or_none(value: Any) -> str | None:
    return None if value is None else str(value)


def _int_or_none(value: Any) -> int | None:
    try:
        return None if value is None or isinstance(value, bool) else int(value)
    except (TypeError, ValueError):
        return None


def _int_array(values: Sequence[int] | np.ndarray, what: str) -> np.ndarray:
    array = np.asarray(values)
    if array.ndim != 1:
        raise ValueError(f"{what} must be one-dimensional, got shape {array.shape}")
    if array.size and not np.issubdtype(array.dtype, np.integer):
        raise ValueError(f"{what} must hold integer nanoseconds, got {array.dtype}")
    return array.astype(np.int64, copy=True)


def sample_row(row: Sequence[Any]) -> tuple[int, str, str, float | None, str, str]:
    """Validate one (t_ns, source, metric, value, unit, method) row and give it plain Python types."""
    t_ns, source, metric, value, unit, method = row
    if method not in schema.SAMPLE_METHODS:
        raise ValueError(f"sample method must be one of {', '.join(schema.SAMPLE_METHODS)}, got {method!r}")
    return (int(t_ns), str(source), str(metric), None if value is None else float(value), unit, method)


def _filtered(select: str, limit: int | None, status: str | None, filters: dict[str, Any]) -> tuple[str, list[Any]]:
    """`select` restricted by list_runs' filters, newest first."""
    if status is not None and status not in schema.RUN_STATUSES:
        raise ValueError(f"status must be one of {', '.join(schema.RUN_STATUSES)}, got {status!r}")
    unknown = sorted(set(filters) - set(_RUN_FILTERS))
    if unknown:
        raise ValueError(f"unknown run filter {', '.join(unknown)}; known: {', '.join(sorted(_RUN_FILTERS))}")
    conditions, params = [], []
    for name, value in {**filters, "status": status}.items():
        if value is not None:
            conditions.append(_RUN_FILTERS[name])
            params.append(int(bool(value)) if name == "valid" else str(value))
    sql = select + (" WHERE " + " AND ".join(conditions) if conditions else "")
    sql += " ORDER BY runs.started_at DESC, runs.rowid DESC"
    if limit is not None:
        sql, params = sql + " LIMIT ?", [*params, int(limit)]
    return sql, params


def _dicts(cursor: sqlite3.Cursor) -> list[dict[str, Any]]:
    names = [column[0] for column in cursor.description]
    return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]


def _decode_run(row: dict[str, Any]) -> dict[str, Any]:
    """Strictly, through console.history.damage: a damaged column is None and listed in row["damaged"]."""
    return damage.decode_run(row)


def _decode_sweep(row: dict[str, Any]) -> dict[str, Any]:
    """Strictly, like a run: a damaged grid, base or summary is None and listed in row["damaged"] (the Sweeps
    list shows such a sweep with what is left; opening it is refused with the field)."""
    return damage.decode_run(row, damage.SWEEP_COLUMNS)


def _enable_wal(conn: sqlite3.Connection, deadline_s: float = BUSY_TIMEOUT_S) -> None:
    """Switch the file to WAL, retrying until the busy deadline: SQLite answers this pragma SQLITE_BUSY at once,
    without calling the busy handler, while another console holds the newly created file in rollback mode."""
    give_up = time.monotonic() + deadline_s
    while True:
        try:
            conn.execute("PRAGMA journal_mode=wal").fetchone()  # a file system without WAL keeps its mode
            return
        except sqlite3.OperationalError as exc:
            if sqlite_code(exc) not in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED) or time.monotonic() > give_up:
                raise
            time.sleep(random.uniform(0.005, 0.03))
