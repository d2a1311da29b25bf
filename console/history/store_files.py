"""Checks on a history's path and file before SQLite opens it, and the read-only connection readers use.

Apart from the store because they run before there is one (open_reader reads the file's version first) and
because their job is to refuse what must be left untouched: not a file, not SQLite, another tool's database, a
name the system cannot take, a directory that cannot be written.
"""

from __future__ import annotations

import errno
import os
import sqlite3
from pathlib import Path

from console.history import schema
from console.history.errors import (
    OTHER_FILE_FIX,
    WRITABLE_FIX,
    HistoryError,
    cannot_write,
    not_a_database,
    not_a_file,
    sqlite_code,
    translate,
)

SQLITE_MAGIC = b"SQLite format 3\x00"
BUSY_TIMEOUT_S = 5.0


def read_only_connection(path: Path) -> tuple[sqlite3.Connection, int]:
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
            return conn, version_or_refuse(conn, path)
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


def version_or_refuse(conn: sqlite3.Connection, path: Path) -> int:
    try:
        return schema.read_version(conn)
    except schema.NotAHistory as exc:
        raise foreign(path, str(exc)) from exc


def foreign(path: Path, detail: str) -> HistoryError:
    return HistoryError(f"{path} is an SQLite database but not a Lab Console history ({detail}). It was left "
                        "untouched", OTHER_FILE_FIX, path)


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


def check_file(path: Path) -> None:
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
