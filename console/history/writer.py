"""HistoryWriter: the one thread that owns the history connection while runs are recorded.

Workers stream latencies every ~100 ms and telemetry at 10 Hz; committing each message would make the disk,
not the model, the bottleneck, and writing from several threads would need locking around SQLite. So callers
only enqueue (never block, never touch SQLite) and this thread drains the queue in batches, committing at
least every second, and at once for run creation, run end and flush(). A run killed mid-way therefore loses
at most about a second of data.

When a write fails for a reason that can go away (disk full, I/O error, database locked), the error goes to
`on_error` once, the uncommitted work is kept in a bounded backlog and retried every second, so freeing disk
space lets the run continue without a gap. A write refused for good (unknown run, bad data) is reported and
dropped. on_error is called on this thread: a GUI must marshal it to its own thread.

Whatever a run loses (rows dropped, rows still waiting when its session ends) is counted per run:
`unstored(run_id)` tells the session, which then reports the run `failed` with the cause and how much is
missing, instead of `completed`.
"""

from __future__ import annotations

import logging
import os
import queue
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from console.history import schema
from console.history.errors import HistoryError, translate
from console.history.store import HistoryStore
from console.history.store_values import check_storable, json_copy, sample_row

log = logging.getLogger(__name__)
ErrorHandler = Callable[[HistoryError], None]
_COMMITTING = frozenset({"create_run", "finish_run", "set_environment", "set_host", "create_sweep", "tag_run", "finish_sweep",
                         "add_machine_card", "add_ops", "add_artifact"})  # the store commits these itself
_DRAIN_MAX = 1000  # ops handled between two looks at the commit clock
_RUN_ARG = {"create_run": 1, "add_latencies": 0, "add_samples": 0, "finish_run": 0, "set_environment": 0,
            "set_host": 0, "tag_run": 0, "add_ops": 0, "add_artifact": 0}  # where an op names its run


@dataclass
class _Op:
    kind: str
    args: tuple = ()
    done: threading.Event | None = None
    result: list = field(default_factory=list)

    @property
    def rows(self) -> int:
        return len(self.args[1]) if self.kind in ("add_latencies", "add_samples") else 1

    @property
    def run_id(self) -> str | None:
        index = _RUN_ARG.get(self.kind)
        return None if index is None else str(self.args[index])

    def counts(self) -> dict[str, int]:
        """What this op would store, in unstored()'s words."""
        key = {"add_latencies": "iterations", "add_samples": "samples"}.get(self.kind, "writes")
        return {key: self.rows}


class HistoryWriter(threading.Thread):
    """Start with `HistoryWriter.open(path)` (or `start()`); both raise HistoryError if the file cannot be used."""

    # ---- Public API
    def __init__(self, path: str | os.PathLike, on_error: ErrorHandler | None = None, *,
                 commit_interval_s: float = 1.0, max_backlog_rows: int = 5_000_000, open_timeout_s: float = 60.0):
        super().__init__(name="history-writer", daemon=True)
        self.path = Path(path).expanduser()
        self.host_id: str | None = None
        self.hostname: str | None = None
        self.last_error: HistoryError | None = None
        self._on_error = on_error
        self._interval = commit_interval_s
        self._max_backlog_rows = max_backlog_rows
        self._open_timeout = open_timeout_s
        self._queue: queue.Queue[_Op] = queue.Queue()
        self._opened = threading.Event()
        self._open_error: BaseException | None = None
        self._fatal: HistoryError | None = None
        self._closing = False
        self._store: HistoryStore | None = None
        self._uncommitted: list[_Op] = []  # applied since the last commit, replayed if a rollback loses them
        self._backlog: list[_Op] = []  # waiting for a transient failure to clear, in order
        self._failing: HistoryError | None = None
        self._last_commit = time.monotonic()
        self._ledger = threading.Lock()
        self._lost: dict[str, dict[str, int]] = {}  # per run: rows and writes dropped for good
        self._trouble: dict[str, HistoryError] = {}  # per run: the first error that dropped or held its data
        self._unrecorded: set[str] = set()  # runs whose creation was refused: their data has nowhere to go

    @classmethod
    def open(cls, path: str | os.PathLike, on_error: ErrorHandler | None = None, **options: Any) -> HistoryWriter:
        """Start a writer and wait until its store is open; raises the HistoryError if it could not open."""
        writer = cls(path, on_error, **options)
        writer.start()
        return writer

    def start(self) -> None:
        """Start the thread and wait for the store to open, so a bad path fails here, in the caller."""
        super().start()
        if not self._opened.wait(self._open_timeout):
            raise HistoryError(f"opening the history database at {self.path} took more than {self._open_timeout:.0f} s",
                               "check that the drive responds (a network share may hang), or choose a local path "
                               "with --db PATH or LABCONSOLE_DB.", self.path)
        if self._open_error is not None:
            raise self._open_error

    def create_run(self, spec: Mapping[str, Any] | Any, run_id: str | None = None) -> str:
        """Queue a new run and return its id (a fresh uuid4 hex when not given). A spec whose text cannot be
        stored (check_storable) raises HistoryError here, before anything is measured for it."""
        run_id = run_id or uuid.uuid4().hex
        copy = json_copy(spec, "spec")
        check_storable(copy, self.path)
        self._put(_Op("create_run", (copy, run_id)))
        return run_id

    def add_latencies(self, run_id: str, t_ns: Sequence[int] | np.ndarray, latency_ns: Sequence[int] | np.ndarray) -> None:
        starts, durations = np.array(t_ns, dtype=np.int64), np.array(latency_ns, dtype=np.int64)  # copies
        if starts.shape != durations.shape or starts.ndim != 1:
            raise ValueError(f"t_ns and latency_ns must be 1-D and equally long, got {starts.shape} and "
                             f"{durations.shape}")
        self._put(_Op("add_latencies", (run_id, starts, durations)))

    def add_samples(self, run_id: str, rows: Iterable[Sequence[Any]]) -> None:
        self._put(_Op("add_samples", (run_id, [sample_row(row) for row in rows])))

    def finish_run(self, run_id: str, status: str, summary: Mapping[str, Any] | None = None,
                   error: str | None = None, environment: Mapping[str, Any] | None = None) -> None:
        if status not in schema.FINAL_STATUSES:
            raise ValueError(f"status must be one of {', '.join(schema.FINAL_STATUSES)}, got {status!r}")
        self._put(_Op("finish_run", (run_id, status, json_copy(summary, "summary"), error,
                                     json_copy(environment, "environment"))))

    def set_environment(self, run_id: str, environment: Mapping[str, Any]) -> None:
        self._put(_Op("set_environment", (run_id, json_copy(environment, "environment"))))

    def set_host(self, run_id: str, host_row: Mapping[str, Any]) -> None:
        """Queue: the run ran on this host (a remote node's `console.history.host.describe()` row)."""
        self._put(_Op("set_host", (run_id, json_copy(host_row, "host"))))

    def create_sweep(self, name: str, grid: Mapping[str, Any], base: Mapping[str, Any] | None = None,
                     sweep_id: str | None = None) -> str:
        """Queue a new sweep and return its id (a fresh uuid4 hex when not given)."""
        sweep_id = sweep_id or uuid.uuid4().hex
        self._put(_Op("create_sweep", (name, json_copy(grid, "grid"), json_copy(base, "base"), sweep_id)))
        return sweep_id

    def tag_run(self, run_id: str, sweep_id: str, point: Mapping[str, Any]) -> None:
        """Queue: mark a run (created before, on this writer) as a point of a sweep."""
        self._put(_Op("tag_run", (run_id, sweep_id, json_copy(point, "sweep_point"))))

    def finish_sweep(self, sweep_id: str, status: str, summary: Mapping[str, Any] | None = None) -> None:
        if status not in schema.SWEEP_FINAL_STATUSES:
            raise ValueError(f"status must be one of {', '.join(schema.SWEEP_FINAL_STATUSES)}, got {status!r}")
        self._put(_Op("finish_sweep", (sweep_id, status, json_copy(summary, "summary"))))

    def add_machine_card(self, card: Mapping[str, Any], host_row: Mapping[str, Any] | None = None) -> str:
        """Queue a machine card (engines.machine) for this host, or for `host_row`'s (a lab node's); its id."""
        card_id = uuid.uuid4().hex
        self._put(_Op("add_machine_card", (json_copy(card, "card"), card_id,
                                           None if host_row is None else json_copy(host_row, "host"))))
        return card_id

    def add_ops(self, run_id: str, ops: Iterable[Mapping[str, Any]]) -> None:
        """Queue a run's per-op profile (see HistoryStore.add_ops)."""
        self._put(_Op("add_ops", (run_id, [json_copy(op, "op") for op in ops])))

    def add_artifact(self, run_id: str, kind: str, path: str, size: int | None = None) -> None:
        self._put(_Op("add_artifact", (run_id, kind, str(path), size)))

    def flush(self, timeout: float = 10) -> bool:
        """Block until everything queued before this call is committed; False on timeout or a pending failure.
        After close(): whether everything was committed."""
        if not self.is_alive():
            return self._fatal is None and not self._backlog
        op = _Op("flush", done=threading.Event())
        try:
            self._put(op)
        except HistoryError:
            return False
        return op.done.wait(timeout) and bool(op.result and op.result[0])  # type: ignore[union-attr]

    def close(self, timeout: float = 10) -> bool:
        """Flush, commit, close the connection and stop the thread; True when everything was committed."""
        if not self.is_alive():
            return self._fatal is None and not self._backlog
        op = _Op("close", done=threading.Event())
        self._closing = True  # first, so nothing can be queued behind the close and be lost unnoticed
        self._queue.put(op)
        finished = op.done.wait(timeout)  # type: ignore[union-attr]
        self.join(max(0.0, timeout) if finished else 0.1)
        return finished and bool(op.result and op.result[0])

    @property
    def backlog_rows(self) -> int:
        """Rows waiting for a failing disk to accept them (0 when all is well)."""
        return sum(op.rows for op in list(self._backlog))

    def unstored(self, run_id: str) -> dict[str, Any] | None:
        """What of this run is not in the file now: {"iterations", "samples", "writes" (other records such
        as the run's end), "error": the HistoryError that caused it}, counting rows dropped for good and rows
        still waiting for a failing disk; None when everything queued for it so far is stored or on its way.
        Call it after flush() for an exact answer."""
        run_id = str(run_id)
        missing = {"iterations": 0, "samples": 0, "writes": 0}
        with self._ledger:
            for key, count in self._lost.get(run_id, {}).items():
                missing[key] += count
            error = self._trouble.get(run_id)
        for op in list(self._backlog):
            if op.run_id == run_id:
                for key, count in op.counts().items():
                    missing[key] += count
        if not any(missing.values()):
            return None
        return {**missing, "error": error or self._failing or self.last_error}

    # ---- Private API: caller side
    def _put(self, op: _Op) -> None:
        if self._fatal is not None:
            raise self._fatal
        if self._closing:
            raise RuntimeError(f"the history writer for {self.path} is closed")
        self._queue.put(op)

    # ---- Private API: writer thread
    def run(self) -> None:
        try:
            self._store = HistoryStore(self.path)
        except BaseException as exc:  # noqa: BLE001 - handed to start() in the caller's thread
            self._open_error = exc
            self._opened.set()
            return
        self.host_id, self.hostname = self._store.host_id, self._store.hostname
        self._opened.set()
        try:
            self._loop()
        except BaseException as exc:  # noqa: BLE001 - a bug here must be seen, not end the thread silently
            log.exception("history writer stopped")
            self._fatal = HistoryError(f"the history writer for {self.path} stopped: {type(exc).__name__}: {exc}",
                                       "restart Lab Console; what was committed so far is kept. Please report "
                                       "this with the log.", self.path)
            self._report(self._fatal)
        finally:
            self._shutdown()

    def _loop(self) -> None:
        while True:
            wait = self._interval
            if self._uncommitted or self._backlog:
                wait = max(0.0, self._last_commit + self._interval - time.monotonic())
            ops = []
            try:
                ops.append(self._queue.get(timeout=wait))
                while len(ops) < _DRAIN_MAX:
                    ops.append(self._queue.get_nowait())
            except queue.Empty:
                pass
            for op in ops:
                if op.kind == "close":
                    op.result.append(self._commit())
                    op.done.set()  # type: ignore[union-attr]
                    return
                if op.kind == "flush":
                    op.result.append(self._commit())
                    op.done.set()  # type: ignore[union-attr]
                else:
                    self._apply(op)
            if time.monotonic() - self._last_commit >= self._interval:
                self._commit()

    def _apply(self, op: _Op) -> None:
        if op.run_id in self._unrecorded and op.kind != "create_run":
            self._lose(op, None)  # said once, when its creation was refused
            return
        if self._backlog:
            self._backlog.append(op)
            self._hold(op, self._failing)
            self._trim_backlog()
            return
        try:
            self._execute(op)
        except HistoryError as err:
            if err.transient:
                self._to_backlog(err, op)
            else:
                self._report(err)
                self._lose(op, err)
            return
        if op.kind in _COMMITTING:
            self._committed()
        else:
            self._uncommitted.append(op)

    def _execute(self, op: _Op) -> None:
        assert self._store is not None
        try:
            getattr(self._store, op.kind)(*op.args)
        except HistoryError:
            raise
        except Exception as exc:  # sqlite3/OS errors, and anything a store method lets through
            raise translate(exc, self.path, f"writing ({op.kind})") from exc

    def _commit(self) -> bool:
        """Commit, or first replay the backlog; True when nothing is left unwritten."""
        if self._backlog:
            return self._replay()
        if not self._uncommitted:
            self._last_commit = time.monotonic()
            return True
        try:
            self._store.commit()  # type: ignore[union-attr]
        except HistoryError as err:
            self._to_backlog(err, None)
            return False
        self._committed()
        return True

    def _replay(self) -> bool:
        """Retry the backlog in order; ops refused for good are reported and dropped."""
        self._last_commit = time.monotonic()
        done = 0  # backlog[:done] is committed
        for index, op in enumerate(list(self._backlog)):
            try:
                self._execute(op)
            except HistoryError as err:
                if err.transient:
                    self._rollback()
                    del self._backlog[:done]
                    return False
                self._report(err)
                self._lose(op, err)
                continue
            if op.kind in _COMMITTING:
                done = index + 1
        try:
            self._store.commit()  # type: ignore[union-attr]
        except HistoryError:
            self._rollback()
            del self._backlog[:done]
            return False
        log.info("history writer recovered: %d queued ops written to %s", len(self._backlog), self.path)
        self._backlog.clear()
        self._failing = None
        self._committed()
        return True

    def _to_backlog(self, err: HistoryError, op: _Op | None) -> None:
        self._rollback()
        self._backlog = self._uncommitted + ([op] if op is not None else []) + self._backlog
        self._uncommitted = []
        self._last_commit = time.monotonic()
        if self._failing is None:  # once per failure, not every second
            self._failing = err
            self._report(err)
        for held in self._backlog:
            self._hold(held, self._failing)
        self._trim_backlog()

    def _trim_backlog(self) -> None:
        rows = sum(op.rows for op in self._backlog)
        dropped = 0
        while rows > self._max_backlog_rows:
            index = next((i for i, op in enumerate(self._backlog) if op.kind in ("add_latencies", "add_samples")), None)
            if index is None:
                break
            rows -= self._backlog[index].rows
            lost = self._backlog.pop(index)
            dropped += lost.rows
            self._lose(lost, self._failing)
        if dropped:
            self._report(HistoryError(
                f"dropped the {dropped} oldest unwritten latency/telemetry rows: the history at {self.path} has "
                f"refused writes for too long ({self._failing})",
                "free disk space or fix the drive; later data is still kept in memory for a while.", self.path,
                self._failing.code if self._failing else None))

    def _rollback(self) -> None:
        try:
            self._store.rollback()  # type: ignore[union-attr]
        except HistoryError:
            pass  # the failure itself may have ended the transaction

    def _committed(self) -> None:
        self._uncommitted = []
        self._last_commit = time.monotonic()

    def _lose(self, op: _Op, err: HistoryError | None) -> None:
        """Count what `op` would have stored for its run as lost for good."""
        run_id = op.run_id
        if run_id is None:
            return
        if op.kind == "create_run":
            self._unrecorded.add(run_id)
        with self._ledger:
            lost = self._lost.setdefault(run_id, {})
            for key, count in op.counts().items():
                lost[key] = lost.get(key, 0) + count
            if err is not None:
                self._trouble.setdefault(run_id, err)

    def _hold(self, op: _Op, err: HistoryError | None) -> None:
        """`op` waits in the backlog: remember why, for unstored()."""
        if op.run_id is not None and err is not None:
            with self._ledger:
                self._trouble.setdefault(op.run_id, err)

    def _report(self, err: HistoryError) -> None:
        self.last_error = err
        log.warning("%s", err)
        if self._on_error is None:
            return
        try:
            self._on_error(err)
        except Exception:  # noqa: BLE001 - a faulty handler must not stop the recording
            log.exception("history on_error handler failed")

    def _shutdown(self) -> None:
        self._closing = True
        if self._backlog:
            self._report(HistoryError(
                f"{self.backlog_rows} rows could not be written to {self.path} before the writer closed "
                f"({self._failing})", "free disk space or fix the drive before the next run.", self.path))
        if self._store is not None:
            try:
                self._store.close()
            except HistoryError as err:
                self._report(err)
            self._store = None
        while True:  # wake anyone still waiting on a flush/close that will not happen
            try:
                op = self._queue.get_nowait()
            except queue.Empty:
                break
            if op.done is not None:
                op.result.append(False)
                op.done.set()
