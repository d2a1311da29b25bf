"""HistoryError, and the one place that turns SQLite and OS failures into it.

A lab engineer who sees "disk I/O error" is left guessing; every HistoryError therefore carries the
problem *and* the fix, so the window, the CLI and the logs all show the same actionable sentence.
"""

from __future__ import annotations

import os
import sqlite3

DB_CHOICE = "--db PATH or the LABCONSOLE_DB environment variable"
WRITABLE_FIX = f"choose a writable path with {DB_CHOICE}."
OTHER_FILE_FIX = "move it aside, or point --db / LABCONSOLE_DB at another file."

# SQLite primary result codes (https://www.sqlite.org/rescode.html); extended codes keep them in the low byte.
_PERM, _BUSY, _LOCKED, _READONLY, _IOERR, _CORRUPT, _FULL, _CANTOPEN, _NOTADB = 3, 5, 6, 8, 10, 11, 13, 14, 26
_BY_MESSAGE = {  # Python 3.10 has no sqlite_errorcode; the messages are SQLite's fixed texts.
    "database or disk is full": _FULL,
    "disk i/o error": _IOERR,
    "attempt to write a readonly database": _READONLY,
    "unable to open database file": _CANTOPEN,
    "file is not a database": _NOTADB,
    "database disk image is malformed": _CORRUPT,
    "database is locked": _BUSY,
    "database table is locked": _LOCKED,
    "access permission denied": _PERM,
}
# Errors that may go away by themselves or by a user action (free space, close a program): worth retrying.
TRANSIENT_CODES = frozenset({_BUSY, _LOCKED, _READONLY, _IOERR, _FULL, _CANTOPEN, _PERM})


class HistoryError(Exception):
    """The history database cannot do what was asked. `problem` says what, `fix` says what to do."""

    def __init__(self, problem: str, fix: str, path: str | os.PathLike | None = None, code: int | None = None):
        self.problem = problem.rstrip().rstrip(".")
        self.fix = fix
        self.path = os.fspath(path) if path is not None else None
        self.code = code  # the SQLite primary result code when one caused this, else None
        super().__init__(f"{self.problem}. Fix: {fix}")

    @property
    def transient(self) -> bool:
        """True when retrying later may succeed (disk full, I/O error, locked), False for a bad request."""
        return self.code in TRANSIENT_CODES


class IdPrefixError(HistoryError):
    """A run or sweep id prefix that does not pick exactly one: shorter than the minimum, or matching several.

    A bad argument, not a broken history: the CLI exits 2 on it (console.cli.arguments), as for an unknown id."""


def sqlite_code(exc: BaseException) -> int | None:
    """The primary SQLite result code of an exception, or None when it does not come from SQLite."""
    code = getattr(exc, "sqlite_errorcode", None)
    if isinstance(code, int):
        return code & 0xFF
    if isinstance(exc, sqlite3.Error):
        return _BY_MESSAGE.get(str(exc).strip().lower())
    return None


def not_a_database(path: str | os.PathLike, detail: str = "file is not a database") -> HistoryError:
    return HistoryError(f"{os.fspath(path)} is not an SQLite database ({detail}). It was left untouched",
                        OTHER_FILE_FIX, path, _NOTADB)


def cannot_write(path: str | os.PathLike, reason: str, code: int | None = _CANTOPEN) -> HistoryError:
    return HistoryError(f"cannot write the history database at {os.fspath(path)}: {reason}", WRITABLE_FIX,
                        path, code)


def not_a_file(path: str | os.PathLike) -> HistoryError:
    """A device, pipe or socket (`--db /dev/null`): SQLite would create `<path>-journal` beside it."""
    return HistoryError(f"{os.fspath(path)} is not a regular file (a device, pipe or socket), so it cannot hold "
                        "a history. It was left untouched",
                        f"give the path of a file (an existing history or a new one) with {DB_CHOICE}.", path)


def translate(exc: BaseException, path: str | os.PathLike, doing: str) -> HistoryError:
    """Map an sqlite3/OS exception raised while `doing` something with `path` to a HistoryError."""
    if isinstance(exc, HistoryError):
        return exc
    where = os.fspath(path)
    message = str(exc) or type(exc).__name__
    if isinstance(exc, OSError) and not isinstance(exc, sqlite3.Error):
        return cannot_write(where, exc.strerror or message)
    code = sqlite_code(exc)
    if code == _FULL:
        return HistoryError(
            f"the disk holding {where} is full ({message}) while {doing}",
            f"free disk space on that drive (or raise its quota), or choose another path with {DB_CHOICE}; "
            "everything committed before this point is kept.", where, code)
    if code == _IOERR:
        return HistoryError(
            f"the disk reported an I/O error ({message}) while {doing} at {where}",
            "check that the drive is still mounted and healthy and has free space, then retry; "
            f"or choose another path with {DB_CHOICE}.", where, code)
    if code in (_READONLY, _CANTOPEN, _PERM):
        return cannot_write(where, message, code)
    if code == _NOTADB:
        return not_a_database(where, message)
    if code == _CORRUPT:
        return HistoryError(
            f"{where} is damaged ({message}) while {doing}",
            f"move it aside and start a new history; `sqlite3 {where} .recover` can often salvage its runs.",
            where, code)
    if code in (_BUSY, _LOCKED):
        return _locked(where, message, doing, code)
    return HistoryError(
        f"the history database {where} failed while {doing}: {type(exc).__name__}: {message}",
        f"retry; if it persists, report it with the file attached and meanwhile use another path with {DB_CHOICE}.",
        where, code)


def _locked(where: str, message: str, doing: str, code: int) -> HistoryError:
    """"Locked" names who holds the lock when we can tell: a Lab Console recording a run (its writer lock file
    is held) is not "another program", and the fix then is to wait for it, not to close something."""
    from console.history.lock import live_writer

    if live_writer(where):
        return HistoryError(
            f"{where} stayed locked for more than 5 s while {doing}: a Lab Console (this one or another) is "
            f"recording a run into it and did not let go ({message})",
            "retry in a moment (its writer commits every second, so a longer lock means its disk is stalling), or "
            f"let that run finish; reading the history never waits. Or choose another path with {DB_CHOICE}.",
            where, code)
    return HistoryError(
        f"{where} stayed locked by another program for more than 5 s ({message}) while {doing}",
        "close the other program writing to it (a sqlite3 shell, Datasette with write access, a script), or "
        f"choose another path with {DB_CHOICE}.", where, code)
