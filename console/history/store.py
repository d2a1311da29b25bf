"""HistoryStore: one connection to the run history, used from one thread.

The file is plain SQLite (WAL mode) so `sqlite-utils` and Datasette can open it next to a running console.
Opening validates before it writes: a file that is not SQLite, not a regular file, another tool's database or
one written by a newer Lab Console is refused and left byte-for-byte untouched, because a history is worth more
than the run being started. Readers (`open_reader`) get their own read-only connection and never write.
Bulk inserts (latencies, samples) are held in memory and written at commit in one short transaction, so a
live run holds the write lock for milliseconds a second and a second console never waits long.

The store's shape: this module opens, validates, migrates, recovers and closes; each job on the rows is a mixin
of its own — runs (store_runs), sweeps (store_sweeps), latencies and samples (store_series), machine cards, ops
and artifacts (store_cards), baselines, tags and notes (store_baselines), deleting runs (store_delete) — on a
StoreBase that holds the guarded connection they all share. Mixins rather than helper objects the store
delegates to: the parts share one connection, one transaction and the rows held until commit, callers (the
writer thread, the CLI, the window, tests that patch `HistoryStore.create_run`) keep one class with one API,
and each file still reads as one job.
"""

from __future__ import annotations

import contextlib
import os
import random
import sqlite3
import time
from pathlib import Path

from sqlite_utils import Database

from console.history import host, recovery, schema
from console.history.errors import OTHER_FILE_FIX, HistoryError, sqlite_code, translate
from console.history.lock import WriterLock
from console.history.recovery import INTERRUPTED_ERROR  # noqa: F401 - part of the store's public names
from console.history.store_baselines import BaselinesMixin
from console.history.store_cards import CardsMixin
from console.history.store_delete import DeleteMixin
from console.history.store_files import (
    BUSY_TIMEOUT_S,
    check_file,
    foreign,
    read_only_connection,
    version_or_refuse,
)
from console.history.store_runs import RunsMixin
from console.history.store_series import SeriesMixin
from console.history.store_sweeps import SweepsMixin


class HistoryStore(RunsMixin, SweepsMixin, SeriesMixin, CardsMixin, BaselinesMixin, DeleteMixin):
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
        self._conn = None  # the attributes' types and meanings: store_base.StoreBase
        self._lock = None
        self._pending = {}
        self._pending_samples = []
        self._known_runs = set()
        self._next_seq = {}
        self.skipped_damaged = {}
        if read_only:
            self._open_read_only()
            return
        check_file(self.path)
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
                version = version_or_refuse(conn, self.path)
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
            raise foreign(self.path, str(exc)) from exc

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

    def _open_read_only(self) -> None:
        self._conn, version = read_only_connection(self.path)
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
    conn, version = read_only_connection(path)
    conn.close()
    if version < schema.LATEST_VERSION:
        _upgrade(path)
    return HistoryStore(path, read_only=True)


# ---- Private helpers
def _upgrade(path: Path) -> None:
    """Migrate an older history so it can be read: validation, the WAL switch and the migration, nothing else
    (no host record, no recovery: reading must not change what the file says about runs)."""
    HistoryStore(path, upgrade_only=True).close()


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
