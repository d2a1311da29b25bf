"""What the window's pages share: the history, the telemetry hub, how runs are measured, and who is measuring now.

One object instead of pages reaching into each other: the RunController and the Sweeps page both take the
workspace, start their runs with `session_options()`, and `claim()` the one "measuring" state before they start,
so a run and a sweep never measure each other. Plain Python (no Qt): the state is claimed and released on the GUI
thread, and a lock keeps it right if a sweep's thread ever asks.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from console.history import HistoryStore, HistoryWriter
    from console.telemetry.hub import TelemetryHub

RUN, SWEEP, MACHINE, CONFIRM, STORAGE = "run", "sweep", "machine card", "confirmation", "storage benchmark"
COLLECTIVES = "collectives benchmark"  # the Topology page's collectives run: its ranks use every core
_KINDS = (RUN, SWEEP, MACHINE, CONFIRM, STORAGE, COLLECTIVES)
_STOP = {RUN: "let it finish (or stop it, Esc)", SWEEP: "stop it first (Stop on the Sweeps page)",
         MACHINE: "let the machine card's measurement finish (Machine page)",
         CONFIRM: "let it finish (or Cancel it beside the verdict, Esc)",
         STORAGE: "let it finish (or Stop it on the Storage page)",
         COLLECTIVES: "let it finish (or Cancel it on the Topology page)"}
# (what is asked for, what is measuring) → (dialog title, why and what to do); the machine card's pairs follow.
_REFUSALS = {
    (RUN, RUN): ("Run in progress", "A run is already in progress: stop it first (Esc)."),
    (RUN, SWEEP): ("Sweep in progress", "A sweep is running on the Sweeps page: stop it first, so the two do not "
                                        "measure each other."),
    (SWEEP, RUN): ("Run in progress", "A run is in progress on the Run page: let it finish (or stop it) first, so "
                                      "the two do not measure each other."),
    (SWEEP, SWEEP): ("Sweep in progress", "A sweep is already running: stop it first (Stop on the Sweeps page)."),
    **{(kind, busy): (f"{busy.capitalize()} in progress", f"A {busy} is measuring: {_STOP[busy]}, so the two do "
                                                          "not disturb each other's figures.")
       for kind in _KINDS for busy in _KINDS if MACHINE in (kind, busy)},
    # a verdict's confirmation rounds (console.ui.confirm_action) use the run's cores, so nothing else measures
    **{(kind, busy): (f"{busy.capitalize()} in progress", f"A {busy} is measuring: {_STOP[busy]}, so the two do "
                                                          "not disturb each other's figures.")
       for kind in _KINDS for busy in _KINDS if CONFIRM in (kind, busy) and MACHINE not in (kind, busy)},
    # a storage benchmark reads and writes the disks a run's model and history live on, and uses the CPUs
    **{(kind, busy): (f"{busy.capitalize()} in progress", f"A {busy} is measuring: {_STOP[busy]}, so the two do "
                                                          "not disturb each other's figures.")
       for kind in _KINDS for busy in _KINDS
       if STORAGE in (kind, busy) and MACHINE not in (kind, busy) and CONFIRM not in (kind, busy)},
    # collectives ranks load every core (and the GPUs with nccl)
    **{(kind, busy): (f"{busy.capitalize()} in progress", f"A {busy} is measuring: {_STOP[busy]}, so the two do "
                                                          "not disturb each other's figures.")
       for kind in _KINDS for busy in _KINDS if COLLECTIVES in (kind, busy)},
}


class Busy(RuntimeError):
    """Something else is measuring; `title` heads the dialog, the message says what and what to do."""

    def __init__(self, title: str, message: str):
        super().__init__(message)
        self.title = title


class Workspace:
    """The history writer and reader, the shared telemetry hub, the worker entry and sampling rate of every run,
    and the one "something is measuring" state (a run, a sweep, or nothing)."""

    # ---- Public API
    def __init__(self, db_path: Path, writer: HistoryWriter | None = None, store: HistoryStore | None = None,
                 hub: TelemetryHub | None = None, worker_entry: Callable[..., None] | None = None,
                 telemetry_hz: float | None = 10.0, startup_error: str = "", pool: Any = None,
                 partition: Any = None):
        if worker_entry is None:
            from engines.worker import worker_main

            worker_entry = worker_main
        self.db_path = Path(db_path)
        self.writer, self.store, self.hub = writer, store, hub
        self.worker_entry = worker_entry
        self.telemetry_hz = telemetry_hz
        self.startup_error = startup_error
        self.pool = pool  # console.run.worker_pool.WorkerPool: warm workers for this window's runs (None: all cold)
        # console.run.partition.Partition: the console's reserved cores while a local worker measures (None: shared)
        self.partition = partition
        self._measuring: str | None = None
        self._lock = threading.Lock()

    @classmethod
    def open(cls, db_path: Path, worker_entry: Callable[..., None] | None = None,
             telemetry_hz: float | None = 10.0, warm_workers: bool = False) -> Workspace:
        """Start idle telemetry and open the history; an unusable database gives a workspace that says why
        (`startup_error`) and has no writer, so nothing can be measured without being recorded. `warm_workers`:
        keep a spare worker ready (the app; tests and the self-test start every worker cold)."""
        from console.history import HistoryError, HistoryStore, HistoryWriter
        from console.run import partition as console_partition
        from console.telemetry.hub import TelemetryHub

        count, problem = console_partition.window_count()
        partition = console_partition.plan(count)  # one reserved core unless $LABCONSOLE_CONSOLE_CORES says
        if problem:
            import sys

            print(f"labconsole: {problem}", file=sys.stderr)
        hub = None
        if telemetry_hz:  # idle telemetry from launch, shared by every run of this window
            hub = TelemetryHub(rate_hz=telemetry_hz)
            hub.start()
        try:
            writer = HistoryWriter.open(db_path)
            store = HistoryStore(db_path)
        except HistoryError as exc:
            return cls(db_path, hub=hub, worker_entry=worker_entry, telemetry_hz=telemetry_hz,
                       startup_error=str(exc), partition=partition)
        pool = None
        if warm_workers and worker_entry is None:
            from console.run.worker_pool import WorkerPool

            pool = WorkerPool(partition)
        return cls(db_path, writer, store, hub, worker_entry, telemetry_hz, pool=pool, partition=partition)

    @property
    def usable(self) -> bool:
        """Runs can be started: the history is open to record them."""
        return self.writer is not None

    def session_options(self) -> dict[str, Any]:
        """RunSession keywords, so a sweep's runs are measured like the Run page's: same worker entry, sampling
        rate and shared hub."""
        options: dict[str, Any] = {"worker_entry": self.worker_entry, "telemetry_hz": self.telemetry_hz}
        if self.hub is not None:
            options["hub"] = self.hub
        if self.pool is not None:
            options["pool"] = self.pool
        if self.partition is not None:
            options["partition"] = self.partition
        return options

    @property
    def measuring(self) -> str | None:
        """"run", "sweep", "machine card", "confirmation", or None when nothing is measuring."""
        return self._measuring

    def check_free(self, kind: str) -> None:
        """Raise Busy when something is measuring, so `kind` ("run" or "sweep") must not start now."""
        with self._lock:
            self._refuse_if_busy(kind)

    def claim(self, kind: str) -> None:
        """Mark `kind` as measuring; Busy (naming what measures and what to do) if something already is."""
        if kind not in _KINDS:
            raise ValueError(f"measuring kind must be one of {', '.join(map(repr, _KINDS))}, got {kind!r}")
        with self._lock:
            self._refuse_if_busy(kind)
            self._measuring = kind

    def claim_or_say(self, kind: str, say: Callable[[str], None]) -> bool:
        """claim(kind), or False after handing Busy's reason to `say` (where the page shows why it did not start)."""
        try:
            self.claim(kind)
        except Busy as exc:
            say(str(exc))
            return False
        return True

    def release(self, kind: str) -> None:
        """`kind` stopped measuring (a no-op if it did not hold the state)."""
        with self._lock:
            if self._measuring == kind:
                self._measuring = None

    def stop_telemetry(self) -> None:
        if self.hub is not None:
            self.hub.stop()

    def close(self) -> None:
        """Close the history and let the spare workers go (the window is gone); telemetry is stopped separately,
        when the window closes."""
        if self.pool is not None:
            self.pool.close()
        for handle in (self.writer, self.store):
            if handle is not None:
                handle.close()

    # ---- Private API
    def _refuse_if_busy(self, kind: str) -> None:
        if self._measuring is not None:
            title, message = _REFUSALS[(kind, self._measuring)]
            raise Busy(title, message)
