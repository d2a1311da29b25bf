"""Bridges a RunSession (background threads) to the GUI thread with Qt signals."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from PySide6 import QtCore

from console.session import RunSession
from console.ui.workspace import RUN, Workspace
from engines.spec import RunSpec


class RunController(QtCore.QObject):
    """Starts runs and re-emits their events on the GUI thread. One run at a time, and none while a sweep
    measures: it claims the workspace's measuring state for each run."""

    sig_event = QtCore.Signal(object)  # every session event, on the GUI thread
    sig_finished = QtCore.Signal(object)  # the final record of a run
    sig_busy = QtCore.Signal(bool)

    # ---- Public API
    def __init__(self, workspace: Workspace, parent: QtCore.QObject | None = None):
        super().__init__(parent)
        self.workspace = workspace
        self._session: RunSession | None = None
        self._relay.connect(self._deliver, QtCore.Qt.ConnectionType.QueuedConnection)

    _relay = QtCore.Signal(object)  # emitted from session threads, delivered queued on the GUI thread

    @property
    def busy(self) -> bool:
        return self._session is not None and not self._session.finished

    @property
    def session(self) -> RunSession | None:
        """The current (or last) run's session: its run_id, spec and t0_ns (demo mode joins a run mid-way)."""
        return self._session

    def start(self, spec: RunSpec, remote: Callable[..., Any] | None = None) -> str:
        """Validate and start; raises SpecError for a bad spec and workspace.Busy (a RuntimeError) while a run or
        a sweep is measuring. `remote`: run on a lab node instead (RunSession's `remote=`, a RemoteRun factory)."""
        if self._session is not None and self._session.finished:
            self.workspace.release(RUN)  # the last run ended; its `finished` event may still be queued
        self.workspace.claim(RUN)
        try:
            self._session = RunSession(spec, self.workspace.writer, listener=self._relay.emit,
                                       **self.workspace.session_options(), remote=remote)
            run_id = self._session.start()
        except BaseException:
            self._session = None
            self.workspace.release(RUN)
            raise
        self.sig_busy.emit(True)
        return run_id

    def stop(self) -> None:
        if self.busy:
            self._session.cancel()

    def wait(self, timeout: float | None = None) -> dict[str, Any] | None:
        return self._session.wait(timeout) if self._session else None

    # ---- Private API
    def _deliver(self, event: dict[str, Any]) -> None:
        if event.get("type") == "finished":
            self.workspace.release(RUN)
        self.sig_event.emit(event)
        if event.get("type") == "finished":
            self.sig_busy.emit(False)
            self.sig_finished.emit(event)
