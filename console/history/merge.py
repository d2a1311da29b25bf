"""Bring another lab machine's history into this one, by run UUID.

Why by UUID: every run, sweep and machine card has a uuid4 and every host a stable host_id, so two histories
merge without renumbering anything, hosts stay apart, and importing the same file again finds everything already
there (idempotent). A run present in both with a different spec, status or summary is a conflict: reported, never
overwritten, because neither machine's record is known to be the right one. A run whose JSON the strict reader
(console.history.damage) cannot read is refused — reported with the field and why, not copied — so a damaged row
of another machine does not become a damaged row here; the other runs are imported.

The source is only read: a cleanly closed file is opened immutable (no -wal/-shm files appear beside it), a
file in use read-only. A source of an older schema is first copied (SQLite's backup, a consistent snapshot) to a
temporary file, which a HistoryStore migrates like any old history; the copy is merged and deleted. Everything is
written to the target in one transaction: a failure leaves the target as it was.
"""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
import stat
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from console.history import damage, jsoncols, schema
from console.history.errors import OTHER_FILE_FIX, HistoryError, translate

__all__ = ["merge_history", "check_source", "COMPARED"]

COMPARED = ("status", "spec", "summary")  # what makes two copies of one run the same record
_IMPORT_FIX = "give the path of a Lab Console history file (history.db of another lab machine)."
_SQLITE_MAGIC = b"SQLite format 3\x00"


# ---- Public API
def merge_history(store: Any, source: str | os.PathLike) -> dict[str, Any]:
    """Merge the history at `source` into `store` (a writable HistoryStore); returns the report:
    {source, source_schema, migrated_copy, runs_added, runs_skipped, runs_in_progress, conflicts: [{run_id,
    why}], runs_refused: [{run_id, damaged: [{field, reason}]}], hosts_added, sweeps_added, cards_added, baselines_added, baseline_conflicts, iterations_added,
    samples_added, ops_added, artifacts_added, nothing_new, import_id}. Raises HistoryError for a source that
    is not a history, is newer than this build, or is the target itself; the source is never written."""
    path = Path(source).expanduser()
    check_source(path, store.path)
    version = _source_version(path)
    with _readable_copy(path, version) as (conn, migrated):
        try:
            report = _Merge(store, conn, _storable(str(path.resolve()))).run()
        except sqlite3.Error as exc:
            raise translate(exc, store.path, f"importing {path}") from exc
    report.update(source=str(path.resolve()), source_schema=version, migrated_copy=migrated)
    return {key: report[key] for key in _REPORT_ORDER if key in report}


_REPORT_ORDER = ("source", "source_schema", "migrated_copy", "nothing_new", "runs_added", "runs_skipped",
                 "runs_in_progress", "conflicts", "runs_refused", "hosts_added", "sweeps_added", "cards_added", "baselines_added",
                 "baseline_conflicts", "iterations_added", "samples_added", "ops_added", "artifacts_added",
                 "import_id", "imported_before")


# ---- Private API
class _Merge:
    """One merge: the source's rows compared with the target's and copied in one transaction."""

    def __init__(self, store: Any, source: sqlite3.Connection, source_path: str):
        self.store = store
        self.src = source
        self.source_path = source_path
        self.dst: sqlite3.Connection = store._connection  # noqa: SLF001 — the history package's own connection
        self.columns: dict[str, list[str]] = {}
        self.report: dict[str, Any] = {
            "runs_added": 0, "runs_skipped": 0, "runs_in_progress": [], "conflicts": [], "runs_refused": [],
            "hosts_added": 0,
            "sweeps_added": 0, "cards_added": 0, "baselines_added": 0, "baseline_conflicts": [],
            "iterations_added": 0, "samples_added": 0, "ops_added": 0, "artifacts_added": 0}

    def run(self) -> dict[str, Any]:
        self.store.commit()  # our own pending writes are not part of the import
        self.dst.execute("BEGIN IMMEDIATE")
        try:
            new_runs, kept_runs = self._runs_plan()
            hosts = self._host_ids(new_runs)
            self._copy_hosts(hosts)
            self._copy_sweeps(new_runs)
            self._copy_runs(new_runs)
            self._copy_artifacts(new_runs | kept_runs)
            self._copy_cards()
            self._copy_baselines()
            self.report["nothing_new"] = not any(
                self.report[key] for key in ("runs_added", "hosts_added", "sweeps_added", "cards_added",
                                             "baselines_added", "artifacts_added"))
            self.report["imported_before"] = self._imported_before()
            if not self.report["nothing_new"]:
                self.report["import_id"] = self._record()
            self.dst.execute("COMMIT")
        except BaseException:
            with contextlib.suppress(sqlite3.Error):
                self.dst.execute("ROLLBACK")
            raise
        return self.report

    # -- runs
    def _runs_plan(self) -> tuple[set[str], set[str]]:
        """(runs to copy, runs already here and identical); conflicts, damaged and live runs go to the report."""
        new, same = set(), set()
        # the source is at the latest schema here (or a migrated copy of it): every run has its run_facts row
        for row in _dicts(self.src.execute("SELECT runs.run_id, status, spec, summary, environment, sweep_point, "
                                           "f.configuration, f.tags FROM runs LEFT JOIN run_facts AS f "
                                           "ON f.run_id = runs.run_id ORDER BY started_at, runs.rowid")):
            run_id = row["run_id"]
            damaged = damage.decode_run(dict(row)).get("damaged")
            if damaged and row["status"] != "running":
                self.report["runs_refused"].append({"run_id": run_id, "damaged": damaged})
                continue
            mine = _dicts(self.dst.execute("SELECT run_id, status, spec, summary FROM runs WHERE run_id = ?",
                                           [run_id]))
            if row["status"] == "running":
                if not mine:
                    self.report["runs_in_progress"].append(run_id)
                continue
            if not mine:
                new.add(run_id)
                continue
            differs = [column for column in COMPARED if _decoded(column, mine[0][column]) !=
                       _decoded(column, row[column])]
            if differs:
                self.report["conflicts"].append({"run_id": run_id, "why": _conflict_text(differs, mine[0], row)})
            else:
                same.add(run_id)
                self.report["runs_skipped"] += 1
        return new, same

    def _host_ids(self, run_ids: set[str]) -> set[str]:
        """The hosts the copied rows refer to (not every host the source knows: a migrated copy also holds
        the importing machine, which ran nothing there)."""
        hosts = {row[0] for row in self._select("SELECT host_id FROM runs WHERE run_id IN ({})", run_ids)}
        hosts |= {row[0] for row in self.src.execute("SELECT host_id FROM machine_cards")}
        hosts |= {row[0] for row in self._select("SELECT sweeps.host_id FROM sweeps JOIN runs "
                                                 "ON runs.sweep_id = sweeps.sweep_id WHERE runs.run_id IN ({})",
                                                 run_ids)}
        return {host for host in hosts if host is not None}

    def _copy_hosts(self, host_ids: set[str]) -> None:
        for host_id in sorted(host_ids):
            if self._exists("hosts", "host_id", host_id):
                continue  # this host's own row wins: it is the one that last saw the machine
            self.report["hosts_added"] += self._copy_rows("hosts", "WHERE host_id = ?", [host_id])

    def _copy_sweeps(self, run_ids: set[str]) -> None:
        for (sweep_id,) in self._select("SELECT DISTINCT sweep_id FROM runs WHERE sweep_id IS NOT NULL "
                                        "AND run_id IN ({})", run_ids):
            if not self._exists("sweeps", "sweep_id", sweep_id):
                self.report["sweeps_added"] += self._copy_rows("sweeps", "WHERE sweep_id = ?", [sweep_id])

    def _copy_runs(self, run_ids: set[str]) -> None:
        ordered = [row[0] for row in self._select("SELECT run_id FROM runs WHERE run_id IN ({}) "
                                                  "ORDER BY started_at, rowid", run_ids)]
        for run_id in ordered:
            self._copy_rows("runs", "WHERE run_id = ?", [run_id])
            self._copy_rows("run_facts", "WHERE run_id = ?", [run_id])
            self.report["iterations_added"] += sum(
                n for (n,) in self.src.execute("SELECT n FROM latency_chunks WHERE run_id = ?", [run_id]))
            self._copy_rows("latency_chunks", "WHERE run_id = ? ORDER BY seq", [run_id])
            self.report["samples_added"] += self._copy_rows("samples", "WHERE run_id = ? ORDER BY rowid", [run_id])
            self.report["ops_added"] += self._copy_rows("ops", "WHERE run_id = ? ORDER BY rowid", [run_id])
            self.report["runs_added"] += 1

    def _copy_artifacts(self, run_ids: set[str]) -> None:
        """Artifact rows (the files stay on the machine that made them) of runs that are here and agree."""
        for (artifact_id,) in self._select("SELECT artifact_id FROM artifacts WHERE run_id IN ({}) "
                                           "ORDER BY created_at", run_ids):
            if not self._exists("artifacts", "artifact_id", artifact_id):
                self.report["artifacts_added"] += self._copy_rows("artifacts", "WHERE artifact_id = ?",
                                                                  [artifact_id])

    def _copy_cards(self) -> None:
        for (card_id,) in self.src.execute("SELECT card_id FROM machine_cards ORDER BY measured_at").fetchall():
            if not self._exists("machine_cards", "card_id", card_id):
                self.report["cards_added"] += self._copy_rows("machine_cards", "WHERE card_id = ?", [card_id])

    def _copy_baselines(self) -> None:
        """A configuration's baseline comes along only where this history has none: a lab's own choice of
        baseline is never replaced by an import; a different one is reported."""
        for fingerprint, run_id, set_at in self.src.execute("SELECT fingerprint, run_id, set_at FROM baselines "
                                                            "ORDER BY set_at").fetchall():
            mine = self.dst.execute("SELECT run_id FROM baselines WHERE fingerprint = ?", [fingerprint]).fetchone()
            if mine is not None:
                if mine[0] != run_id:
                    self.report["baseline_conflicts"].append(
                        {"fingerprint": fingerprint, "kept_run_id": mine[0], "source_run_id": run_id,
                         "why": "this history already has a baseline for the configuration; kept it "
                                "(`labconsole baseline set` the other run to change it)"})
                continue
            if not self._exists("runs", "run_id", run_id):
                continue  # its run was not imported (in progress): nothing to point at
            self.dst.execute("INSERT INTO baselines (fingerprint, run_id, set_at) VALUES (?, ?, ?)",
                             [fingerprint, run_id, set_at])
            self.report["baselines_added"] += 1

    def _imported_before(self) -> str | None:
        """When this file was last imported (None: never), so a repeated import says so."""
        row = self.dst.execute("SELECT MAX(imported_at) FROM imports WHERE source = ?", [self.source_path]).fetchone()
        return row[0] if row else None

    def _record(self) -> str:
        import_id = uuid.uuid4().hex
        summary = {key: value for key, value in self.report.items() if key != "imported_before"}
        self.dst.execute("INSERT INTO imports (import_id, source, imported_at, report) VALUES (?, ?, ?, ?)",
                         [import_id, self.source_path, schema.utc_now(),
                          jsoncols.dumps(summary, "import report")])
        return import_id

    # -- rows
    def _copy_rows(self, table: str, where: str, params: list[Any]) -> int:
        """Copy the source rows of `table` matching `where`, by column name; returns how many."""
        columns = self._columns(table)
        names = ", ".join(columns)
        cursor = self.src.execute(f"SELECT {names} FROM {table} {where}", params)
        before = self.dst.total_changes
        self.dst.executemany(f"INSERT INTO {table} ({names}) VALUES ({', '.join('?' * len(columns))})", cursor)
        return self.dst.total_changes - before

    def _columns(self, table: str) -> list[str]:
        if table not in self.columns:
            mine = [row[1] for row in self.dst.execute(f"PRAGMA table_info({table})")]
            theirs = {row[1] for row in self.src.execute(f"PRAGMA table_info({table})")}
            self.columns[table] = [column for column in mine if column in theirs]
        return self.columns[table]

    def _exists(self, table: str, key: str, value: Any) -> bool:
        return self.dst.execute(f"SELECT 1 FROM {table} WHERE {key} = ?", [value]).fetchone() is not None

    def _select(self, sql: str, run_ids: set[str]) -> Iterator[tuple[Any, ...]]:
        """`sql` with its {} filled by a list of run ids, in slices SQLite's parameter limit allows."""
        ids = sorted(run_ids)
        for start in range(0, len(ids), 500):
            part = ids[start:start + 500]
            yield from self.src.execute(sql.format(", ".join("?" * len(part))), part).fetchall()


def _storable(text: str) -> str:
    """The source's path as SQLite can store it: a name that is not valid UTF-8 ('caf\\udce9', the byte 0xe9) is
    kept with its odd bytes written out ('caf\\xe9'), since SQLite text must be UTF-8."""
    return os.fsencode(text).decode("utf-8", "backslashreplace")


def check_source(path: Path, target: Path) -> None:
    """HistoryError unless `path` is a regular file holding an SQLite database other than `target`. Checked before
    the target is opened (import creates no target for a source it refuses); a FIFO or a device is refused by
    its type, never opened (reading a FIFO nobody writes would wait forever)."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        raise HistoryError(f"there is no file {path} to import", _IMPORT_FIX, path) from None
    except (OSError, ValueError) as exc:  # a name too long, a file as a folder, a NUL
        raise HistoryError(f"cannot read {path}: {getattr(exc, 'strerror', None) or exc}",
                           "check the path and its permissions.", path) from None
    if stat.S_ISDIR(mode):
        raise HistoryError(f"{path} is a directory, not a history file", f"give the file, e.g. {path / 'history.db'}.",
                           path)
    if not stat.S_ISREG(mode):
        kind = "a FIFO (named pipe)" if stat.S_ISFIFO(mode) else "a device or socket"
        raise HistoryError(f"{path} is {kind}, not a history file", _IMPORT_FIX, path)
    with contextlib.suppress(OSError):
        if os.path.samefile(path, target):
            raise HistoryError(f"{path} is this history itself; importing it into itself would change nothing",
                               "give the history file of another machine (or point --db at another target).", path)
    try:
        with open(path, "rb") as handle:
            head = handle.read(len(_SQLITE_MAGIC))
    except OSError as exc:
        raise HistoryError(f"cannot read {path}: {exc.strerror or exc}", "check the path and its permissions.",
                           path) from exc
    if head != _SQLITE_MAGIC:
        detail = "the file is empty" if not head else "it is not an SQLite database"
        raise HistoryError(f"{path} is not a Lab Console history ({detail}). It was left untouched", _IMPORT_FIX,
                           path)


def _connect(path: Path) -> sqlite3.Connection:
    """Read-only; immutable when no -wal file is beside it (a closed file: nothing is created next to it)."""
    in_use = Path(f"{path}-wal").exists()
    uri = path.resolve().as_uri() + ("?mode=ro" if in_use else "?mode=ro&immutable=1")
    try:
        return sqlite3.connect(uri, uri=True, timeout=5.0)
    except sqlite3.Error as exc:
        raise translate(exc, path, "opening the history to import") from exc


def _source_version(path: Path) -> int:
    conn = _connect(path)
    try:
        version = schema.read_version(conn)
        tables = schema.user_tables(conn) if version == 0 else []
    except schema.NotAHistory as exc:  # another tool's schema_version table
        raise HistoryError(f"{path} is an SQLite database but not a Lab Console history ({exc}). It was left "
                           "untouched", _IMPORT_FIX, path) from exc
    except sqlite3.Error as exc:
        raise translate(exc, path, "reading the history to import") from exc
    finally:
        conn.close()
    if version == 0:
        held = f"it holds tables {', '.join(tables[:8])}" if tables else "it holds no tables"
        raise HistoryError(f"{path} is an SQLite database but not a Lab Console history ({held}). It was left "
                           "untouched", _IMPORT_FIX, path)
    if version > schema.LATEST_VERSION:
        raise HistoryError(f"{path} was written by a newer Lab Console (history schema version {version}; this "
                           f"build reads up to {schema.LATEST_VERSION}). It was left untouched",
                           "upgrade Lab Console on this machine, then import it.", path)
    return version


@contextlib.contextmanager
def _readable_copy(path: Path, version: int) -> Iterator[tuple[sqlite3.Connection, bool]]:
    """A read-only connection to the source at the current schema: the file itself, or a migrated copy."""
    if version == schema.LATEST_VERSION:
        conn = _connect(path)
        try:
            yield conn, False
        finally:
            conn.close()
        return
    from console.history.store import HistoryStore

    with tempfile.TemporaryDirectory(prefix="labconsole-import-") as folder:
        copy = Path(folder) / "source.db"
        source = _connect(path)
        try:
            target = sqlite3.connect(copy)
            try:
                source.backup(target)
            finally:
                target.close()
        except sqlite3.Error as exc:
            raise translate(exc, path, "copying the history to import") from exc
        finally:
            source.close()
        try:
            HistoryStore(copy).close()  # migrates the copy, in one transaction
        except HistoryError as exc:
            raise HistoryError(f"{path} (schema version {version}) could not be upgraded for the import: "
                               f"{exc.problem}. It was left untouched", OTHER_FILE_FIX, path) from exc
        conn = sqlite3.connect(copy)
        try:
            yield conn, True
        finally:
            conn.close()


def _decoded(column: str, value: Any) -> Any:
    if column == "status" or value is None:
        return value
    try:
        return json.loads(value)
    except (TypeError, ValueError):
        return value


def _conflict_text(differs: list[str], mine: dict[str, Any], theirs: dict[str, Any]) -> str:
    parts = []
    for column in differs:
        if column == "status":
            parts.append(f"status is {mine['status']} here and {theirs['status']} in the imported file")
        else:
            parts.append(f"its {column} differs")
    return "; ".join(parts) + " — kept this history's record (the imported one was not copied)"


def _dicts(cursor: sqlite3.Cursor) -> list[dict[str, Any]]:
    names = [column[0] for column in cursor.description]
    return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]
