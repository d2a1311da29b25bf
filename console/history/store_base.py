"""StoreBase: what every part of HistoryStore relies on — the guarded connection, a commit that writes what is
held, the checks that a run exists, and the few row helpers several parts share.

HistoryStore is assembled from one mixin per job (store.py says why); each mixin subclasses StoreBase, so the state
they share is declared here once and a reader of any part finds its helpers in one place.
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import numpy as np
from sqlite_utils import Database

from console.history import jsoncols, schema, v4_upgrade
from console.history.errors import HistoryError, translate
from console.history.lock import WriterLock
from console.history.store_queries import decode_run
from console.history.store_values import text_or_none


class StoreBase:
    """The connection and state every part of HistoryStore shares; HistoryStore.__init__ sets them."""

    path: Path
    read_only: bool
    host_id: str | None
    hostname: str | None
    _db: Database
    _conn: sqlite3.Connection | None
    _lock: WriterLock | None
    _pending: dict[str, list[tuple[np.ndarray, np.ndarray]]]  # latencies held until the next commit
    _pending_samples: list[tuple]  # telemetry rows held until the next commit
    _known_runs: set[str]  # runs seen to exist: their samples are not looked up again
    _next_seq: dict[str, int]  # the next latency chunk's seq, per run
    # damaged runs (console.history.damage) that listings left out: run_id → [{field, reason}], for a note
    skipped_damaged: dict[str, list[dict[str, str]]]

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

    def _commit_pending(self) -> None:
        """Every commit writes what is held too: rows left pending past a commit could later be dropped by a
        rollback that the writer, which replays only what it applied since its last commit, would not see."""
        self._flush_latencies()
        self._connection.commit()

    def _flush_latencies(self) -> None:
        """Write what is held (store_series.SeriesMixin does)."""
        raise NotImplementedError

    def _require_run(self, cursor: sqlite3.Cursor, run_id: str) -> None:
        if cursor.rowcount == 0:
            raise HistoryError(f"there is no run {run_id} in {self.path}",
                               "create it with create_run() first (check the run id).", self.path)

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

    def _upsert_host(self, host_row: Mapping[str, Any]) -> str:
        """Add or refresh another machine's hosts row (a node's `console.history.host.describe()`); its host_id.
        Does not commit: the caller's transaction does."""
        row = {key: text_or_none(host_row.get(key)) for key in ("host_id", "hostname", "os", "machine", "cpu",
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

    def _set_summary_columns(self, run_id: str, summary: Mapping[str, Any]) -> None:
        plain = v4_upgrade.summary_columns(jsoncols.finite(dict(summary)))
        self._connection.execute(f"UPDATE run_facts SET {', '.join(f'{column} = ?' for column in plain)} "
                                 "WHERE run_id = ?", [*plain.values(), run_id])

    def _usable(self, rows: list[dict[str, Any]], include_damaged: bool) -> list[dict[str, Any]]:
        """Decoded runs; a damaged one kept (include_damaged) or left out and remembered in skipped_damaged."""
        runs = []
        for run in map(decode_run, rows):
            if run.get("damaged") and not include_damaged:
                self.skipped_damaged[run["run_id"]] = run["damaged"]
            else:
                runs.append(run)
        return runs
