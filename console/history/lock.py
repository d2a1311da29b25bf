"""Who is still writing runs: an advisory lock file next to the database.

A store that records runs holds a *shared* lock on `<db>-lock` for as long as it is open. A store that
opens later marks leftover `running` runs as `interrupted` only if it can take the *exclusive* lock, i.e.
no live writer exists. So `labconsole history` run while the window records a run does not mark that run
interrupted, yet a console that was killed (the kernel drops its lock) has its runs recovered at the next
start. Where flock is unavailable (Windows) every open recovers, as if only one console ran at a time.
"""

from __future__ import annotations

import os

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]


class WriterLock:
    def __init__(self, db_path: str | os.PathLike):
        self.path = f"{os.fspath(db_path)}-lock"
        self._fd: int | None = None
        self._shared = False
        if fcntl is not None:
            try:
                self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
            except OSError:
                self._fd = None  # cannot create it (odd filesystem): fall back to "always recover"

    # ---- Public API
    def no_live_writer(self) -> bool:
        """Take and release the exclusive lock: True when no other open store is recording runs."""
        if self._fd is None or fcntl is None:
            return True
        try:
            fcntl.flock(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            return False
        return True

    def release_exclusive(self) -> None:
        if self._fd is not None and fcntl is not None and not self._shared:
            fcntl.flock(self._fd, fcntl.LOCK_UN)

    def hold_shared(self) -> None:
        """Mark this store as a live writer until close (waits out a recovery in progress, which is brief)."""
        if self._fd is not None and fcntl is not None and not self._shared:
            fcntl.flock(self._fd, fcntl.LOCK_SH)
            self._shared = True

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)  # closing the descriptor drops the lock
            self._fd = None
            self._shared = False


def live_writer(db_path: str | os.PathLike) -> bool:
    """True when a store is recording runs into `db_path` right now (holds its lock file), this process
    included. Only looks: the lock file is opened read-only and never created."""
    if fcntl is None:
        return False
    try:
        fd = os.open(f"{os.fspath(db_path)}-lock", os.O_RDONLY)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return True
    finally:
        os.close(fd)  # drops the lock if we took it
    return False
