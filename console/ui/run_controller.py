"""Bridges a RunSession (background threads) to the GUI thread with Qt signals."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from PySide6 import QtCore

from console.history import HistoryWriter
from console.session import RunSession
from console.telemetry.hub import TelemetryHub
from engines.spec import RunSpec
from engines.worker import worker_main


class RunController(QtCore.QObject):
    """Starts runs and re-emits their events on the GUI thread. One run at a time."""

    sig_event = QtCore.Signal(object)  # every session event, on the GUI thread
    sig_finished = QtCore.Signal(object)  # the final record of a run
    sig_busy = QtCore.Signal(bool)

    # ---- Public API
    def __init__(self, writer: HistoryWriter, parent: QtCore.QObject | None = None,
                 worker_entry: Callable[..., None] = worker_main, telemetry_hz: float | None = 10.0,
                 hub: TelemetryHub | None = None):
        super().__init__(parent)
        self._writer = writer
        self.worker_entry = worker_entry
        self._telemetry_hz = telemetry_hz
        self.hub = hub
        self._session: RunSession | None = None
        self._relay.connect(self._deliver, QtCore.Qt.ConnectionType.QueuedConnection)

    _relay = QtCore.Signal(object)  # emitted from session threads, delivered queued on the GUI thread

    @property
    def busy(self) -> bool:
        return self._session is not None and not self._session.finished

    def start(self, spec: RunSpec) -> str:
        """Validate and start; raises SpecError for a bad spec and RuntimeError while a run is active."""
        if self.busy:
            raise RuntimeError("a run is already in progress: stop it first (Esc)")
        self._session = RunSession(spec, self._writer, listener=self._relay.emit,
                                   telemetry_hz=self._telemetry_hz, worker_entry=self.worker_entry,
                                   hub=self.hub)
        run_id = self._session.start()
        self.sig_busy.emit(True)
        return run_id

    def stop(self) -> None:
        if self.busy:
            self._session.cancel()

    def wait(self, timeout: float | None = None) -> dict[str, Any] | None:
        return self._session.wait(timeout) if self._session else None

    # ---- Private API
    def _deliver(self, event: dict[str, Any]) -> None:
        self.sig_event.emit(event)
        if event.get("type") == "finished":
            self.sig_busy.emit(False)
            self.sig_finished.emit(event)
