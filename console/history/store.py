"""HistoryStore: one connection to the run history, used from one thread.

The file is plain SQLite (WAL mode) so `sqlite-utils` and Datasette can open it next to a running console.
Opening validates before it writes: a file that is not SQLite, or was written by a newer Lab Console, is
refused and left byte-for-byte untouched, because a history is worth more than the run being started.
Bulk inserts do not commit; the HistoryWriter decides when (at least every second).
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import sqlite3
import uuid
from collections.abc import Iterable, Iterator, Mapping, Sequence
from itertools import chain, repeat
from pathlib import Path
from typing import Any

import numpy as np
from sqlite_utils import Database

from console.history import host, schema
from console.history.errors import (
    OTHER_FILE_FIX,
    WRITABLE_FIX,
    HistoryError,
    cannot_write,
    not_a_database,
    translate,
)
from console.history.lock import WriterLock

SQLITE_MAGIC = b"SQLite format 3\x00"
BUSY_TIMEOUT_S = 5.0
INTERRUPTED_ERROR = "the console stopped before this run finished; data up to the last commit is kept"
MIN_PREFIX = 4
_JSON_COLUMNS = ("spec", "summary", "environment", "sweep_point")
_SWEEP_JSON_COLUMNS = ("grid", "base", "summary")
_SPEC_COLUMNS = ("name", "model", "engine", "target", "scenario")


class HistoryStore:
    """Open (create, validate, migrate) the history at `path`; see the module docstring for the rules."""

    # ---- Public API
    def __init__(self, path: str | os.PathLike):
        self.path = Path(path).expanduser()
        self._conn: sqlite3.Connection | None = None
        self._lock: WriterLock | None = None
        _check_file(self.path)
        self._conn = self._connect()
        try:
            self._db = Database(self._conn, execute_plugins=False)
            self._db.enable_wal()
            self._conn.execute("PRAGMA synchronous=NORMAL")
            self._conn.execute("PRAGMA foreign_keys=ON")
            schema.migrate(self._db, schema.read_version(self._conn))
            self.host_id = self._register_host()
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
        row = {column: _text_or_none(spec.get(column)) for column in _SPEC_COLUMNS}
        row.update(run_id=str(run_id), host_id=self.host_id, status="running", started_at=schema.utc_now(),
                   batch=_int_or_none(spec.get("batch")), spec=_dumps(spec, "spec"))
        assert self._lock is not None
        self._lock.hold_shared()  # from now on, other stores must not take our running runs for dead ones
        columns = ", ".join(row)
        with self._guard(f"creating run {run_id}"):
            try:
                self._connection.execute(f"INSERT INTO runs ({columns}) VALUES ({', '.join('?' * len(row))})",
                                         list(row.values()))
            except sqlite3.IntegrityError as exc:
                raise HistoryError(f"run {run_id} already exists in {self.path}",
                                   "leave run_id out (a fresh uuid4 is used) or pass a new one.",
                                   self.path) from exc
            self._connection.commit()
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
            self._connection.commit()

    def set_environment(self, run_id: str, environment: Mapping[str, Any]) -> None:
        """Store what the run ran on (versions, driver, CPU flags) as soon as it is known. Commits."""
        with self._guard(f"storing the environment of run {run_id}"):
            cursor = self._connection.execute("UPDATE runs SET environment = ? WHERE run_id = ?",
                                              [_dumps(environment, "environment"), run_id])
            self._require_run(cursor, run_id)
            self._connection.commit()

    def add_latencies(self, run_id: str, t_ns: Sequence[int] | np.ndarray, latency_ns: Sequence[int] | np.ndarray) -> None:
        """Append iterations (start timestamp, duration) in arrival order. Does not commit."""
        starts, durations = _int_list(t_ns, "t_ns"), _int_list(latency_ns, "latency_ns")
        if len(starts) != len(durations):
            raise ValueError(f"t_ns and latency_ns differ in length ({len(starts)} vs {len(durations)})")
        with self._guard(f"recording latencies for run {run_id}"):
            self._connection.executemany("INSERT INTO latencies (run_id, t_ns, latency_ns) VALUES (?, ?, ?)",
                                         zip(repeat(run_id), starts, durations))

    def add_samples(self, run_id: str, rows: Iterable[tuple[int, str, str, float, str, str]]) -> None:
        """Append telemetry rows (t_ns, source, metric, value, unit, method). Does not commit."""
        records = [(run_id, *sample_row(row)) for row in rows]
        with self._guard(f"recording samples for run {run_id}"):
            self._connection.executemany(
                "INSERT INTO samples (run_id, t_ns, source, metric, value, unit, method) VALUES (?, ?, ?, ?, ?, ?, ?)",
                records)

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
            self._connection.commit()
        return sweep_id

    def tag_run(self, run_id: str, sweep_id: str, point: Mapping[str, Any]) -> None:
        """Mark a run as one point of a sweep (point: the grid values it ran with). Commits."""
        with self._guard(f"tagging run {run_id} with sweep {sweep_id}"):
            cursor = self._connection.execute("UPDATE runs SET sweep_id = ?, sweep_point = ? WHERE run_id = ?",
                                              [sweep_id, _dumps(point, "sweep_point"), run_id])
            self._require_run(cursor, run_id)
            self._connection.commit()

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
            self._connection.commit()

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
        """The sweep with this id, or the only one whose id starts with this prefix (≥ 4 chars); None if none."""
        ref = str(sweep_id_or_prefix).strip()
        with self._guard("looking up a sweep"):
            rows = _dicts(self._connection.execute("SELECT * FROM sweeps WHERE sweep_id = ?", [ref]))
            if not rows and len(ref) >= MIN_PREFIX:
                rows = _dicts(self._connection.execute(
                    "SELECT * FROM sweeps WHERE substr(sweep_id, 1, ?) = ? LIMIT 2", [len(ref), ref]))
        if len(rows) > 1:
            raise HistoryError(f"sweep id prefix {ref!r} matches several sweeps", "give more characters of the id.",
                               self.path)
        return _decode_sweep(rows[0]) if rows else None

    def runs_of_sweep(self, sweep_id: str) -> list[dict[str, Any]]:
        """The runs of a sweep in the order they ran, JSON columns (sweep_point included) decoded."""
        with self._guard(f"reading the runs of sweep {sweep_id}"):
            return [_decode_run(row) for row in _dicts(self._connection.execute(
                "SELECT * FROM runs WHERE sweep_id = ? ORDER BY started_at, rowid", [sweep_id]))]

    def commit(self) -> None:
        with self._guard("committing"):
            self._connection.commit()

    def rollback(self) -> None:
        """Drop what was written since the last commit (the writer replays it after a disk-full error)."""
        with self._guard("rolling back"):
            self._connection.rollback()

    def list_runs(self, limit: int | None = None, status: str | None = None) -> list[dict[str, Any]]:
        """Runs newest first, JSON columns decoded."""
        if status is not None and status not in schema.RUN_STATUSES:
            raise ValueError(f"status must be one of {', '.join(schema.RUN_STATUSES)}, got {status!r}")
        sql, params = "SELECT * FROM runs", []
        if status is not None:
            sql, params = sql + " WHERE status = ?", [status]
        sql += " ORDER BY started_at DESC, rowid DESC"
        if limit is not None:
            sql, params = sql + " LIMIT ?", [*params, int(limit)]
        with self._guard("listing runs"):
            return [_decode_run(row) for row in _dicts(self._connection.execute(sql, params))]

    def get_run(self, run_id_or_prefix: str) -> dict[str, Any] | None:
        """The run with this id, or the one whose id starts with this prefix (≥ 4 chars); None if none."""
        ref = str(run_id_or_prefix).strip()
        with self._guard("looking up a run"):
            rows = _dicts(self._connection.execute("SELECT * FROM runs WHERE run_id = ?", [ref]))
            if not rows and len(ref) >= MIN_PREFIX:
                rows = _dicts(self._connection.execute(
                    "SELECT * FROM runs WHERE substr(run_id, 1, ?) = ? ORDER BY started_at DESC LIMIT 11",
                    [len(ref), ref]))
        if not rows:
            if ref and len(ref) < MIN_PREFIX:
                raise HistoryError(f"run id prefix {ref!r} is too short to look a run up",
                                   f"give at least {MIN_PREFIX} characters of the run id "
                                   "(`labconsole history` lists them).", self.path)
            return None
        if len(rows) > 1:
            shown = ", ".join(f"{row['run_id']} ({row['started_at']}, {row['model']})" for row in rows[:10])
            more = " and more" if len(rows) > 10 else ""
            raise HistoryError(f"run id prefix {ref!r} matches several runs: {shown}{more}",
                               "give more characters of the run id.", self.path)
        return _decode_run(rows[0])

    def latencies(self, run_id: str) -> tuple[np.ndarray, np.ndarray]:
        """(t_ns, latency_ns) as int64 arrays in arrival order."""
        with self._guard(f"reading latencies of run {run_id}"):
            cursor = self._connection.execute(
                "SELECT t_ns, latency_ns FROM latencies WHERE run_id = ? ORDER BY rowid", [run_id])
            pairs = np.fromiter(chain.from_iterable(cursor), dtype=np.int64).reshape(-1, 2)
        return pairs[:, 0].copy(), pairs[:, 1].copy()

    def samples(self, run_id: str, metric: str | None = None) -> list[dict[str, Any]]:
        """Telemetry rows of a run (optionally one metric), ordered by time."""
        sql = "SELECT t_ns, source, metric, value, unit, method FROM samples WHERE run_id = ?"
        params: list[Any] = [run_id]
        if metric is not None:
            sql, params = sql + " AND metric = ?", [run_id, metric]
        with self._guard(f"reading samples of run {run_id}"):
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

    def _connect(self) -> sqlite3.Connection:
        """Connect and read the schema version without writing anything, refusing files we must not touch."""
        try:
            conn = sqlite3.connect(str(self.path), timeout=BUSY_TIMEOUT_S)
        except sqlite3.Error as exc:
            raise translate(exc, self.path, "opening the history") from exc
        try:
            conn.execute(f"PRAGMA busy_timeout={int(BUSY_TIMEOUT_S * 1000)}")
            version = schema.read_version(conn)
            if version > schema.LATEST_VERSION:
                raise HistoryError(
                    f"{self.path} was written by a newer Lab Console (history schema version {version}; this "
                    f"build reads up to {schema.LATEST_VERSION}). It was left untouched",
                    "upgrade Lab Console, or point --db / LABCONSOLE_DB at another file.", self.path)
            foreign = schema.user_tables(conn) if version == 0 else []
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

    def _register_host(self) -> str:
        row = host.describe()
        self._conn.execute(  # type: ignore[union-attr]
            "INSERT INTO hosts (host_id, hostname, os, machine, cpu, python, first_seen) "
            "VALUES (:host_id, :hostname, :os, :machine, :cpu, :python, :first_seen) "
            "ON CONFLICT(host_id) DO UPDATE SET hostname = excluded.hostname, os = excluded.os, "
            "machine = excluded.machine, cpu = excluded.cpu, python = excluded.python",
            {**row, "first_seen": schema.utc_now()})
        self._conn.commit()  # type: ignore[union-attr]
        return row["host_id"]

    def _recover_interrupted(self) -> None:
        """Runs left `running` by a console that is gone become `interrupted` (see lock.py for 'gone')."""
        assert self._lock is not None and self._conn is not None
        if not self._lock.no_live_writer():
            return
        try:
            self._conn.execute("UPDATE runs SET status = 'interrupted', ended_at = ?, error = COALESCE(error, ?) "
                               "WHERE status = 'running'", [schema.utc_now(), INTERRUPTED_ERROR])
            if "sweeps" in schema.user_tables(self._conn):  # absent only while a test holds the schema back
                self._conn.execute("UPDATE sweeps SET status = 'interrupted', ended_at = ? WHERE status = 'running'",
                                   [schema.utc_now()])
            self._conn.commit()
        finally:
            self._lock.release_exclusive()

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


# ---- Private helpers
def _check_file(path: Path) -> None:
    """Refuse, before SQLite opens anything, a path we cannot write or a file that is not SQLite."""
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
    if not os.access(path, os.R_OK | os.W_OK):
        raise cannot_write(path, "Permission denied")
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


def _json_default(value: Any) -> Any:
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    if isinstance(value, (set, frozenset)):
        return sorted(value, key=str)
    raise TypeError(f"{type(value).__name__} is not JSON-serialisable")


def _dumps(value: Any, what: str) -> str:
    try:
        return json.dumps(value, default=_json_default)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{what} cannot be stored as JSON: {exc}") from exc


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


def _int_list(values: Sequence[int] | np.ndarray, what: str) -> list[int]:
    array = np.asarray(values)
    if array.ndim != 1:
        raise ValueError(f"{what} must be one-dimensional, got shape {array.shape}")
    if array.size and not np.issubdtype(array.dtype, np.integer):
        raise ValueError(f"{what} must hold integer nanoseconds, got {array.dtype}")
    return array.astype(np.int64, copy=False).tolist()


def sample_row(row: Sequence[Any]) -> tuple[int, str, str, float | None, str, str]:
    """Validate one (t_ns, source, metric, value, unit, method) row and give it plain Python types."""
    t_ns, source, metric, value, unit, method = row
    if method not in schema.SAMPLE_METHODS:
        raise ValueError(f"sample method must be one of {', '.join(schema.SAMPLE_METHODS)}, got {method!r}")
    return (int(t_ns), str(source), str(metric), None if value is None else float(value), unit, method)


def _dicts(cursor: sqlite3.Cursor) -> list[dict[str, Any]]:
    names = [column[0] for column in cursor.description]
    return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]


def _decode_run(row: dict[str, Any]) -> dict[str, Any]:
    for column in _JSON_COLUMNS:
        if row.get(column) is not None:
            row[column] = json.loads(row[column])
    return row


def _decode_sweep(row: dict[str, Any]) -> dict[str, Any]:
    for column in _SWEEP_JSON_COLUMNS:
        if row.get(column) is not None:
            row[column] = json.loads(row[column])
    return row
