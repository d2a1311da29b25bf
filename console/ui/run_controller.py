"""Bridges a RunSession (background threads) to the GUI thread with Qt signals.

Before a local run with no usable noise floor (no machine card's floor, no quick one under 10 minutes old:
console.machine.noise) the controller measures a quick one (~3 s, in a spawned process) on a background thread, then starts
the session it already made: the GUI stays live, nothing of the run competes with the measurement (its worker is
not started yet), and the run is judged by — and, measuring until stable, aims for — the allowance the floor gives.
The run id is returned at once, as for any run; "started" arrives when the run really starts.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from PySide6 import QtCore

from console.run.session import RunSession
from console.ui.background import BackgroundCall
from console.ui.workspace import RUN, Workspace
from engines.spec import RunSpec


class RunController(QtCore.QObject):
    """Starts runs and re-emits their events on the GUI thread. One run at a time, and none while a sweep
    measures: it claims the workspace's measuring state for each run."""

    sig_event = QtCore.Signal(object)  # every session event, on the GUI thread
    sig_finished = QtCore.Signal(object)  # the final record of a run
    sig_busy = QtCore.Signal(bool)
    sig_preparing = QtCore.Signal(str)  # "measuring this machine's noise floor …" before a run starts

    # ---- Public API
    def __init__(self, workspace: Workspace, parent: QtCore.QObject | None = None):
        super().__init__(parent)
        self.workspace = workspace
        self._session: RunSession | None = None
        self._floor_call: BackgroundCall | None = None  # the quick noise floor measured before the session starts
        self._relay.connect(self._deliver, QtCore.Qt.ConnectionType.QueuedConnection)

    _relay = QtCore.Signal(object)  # emitted from session threads, delivered queued on the GUI thread

    @property
    def busy(self) -> bool:
        return self._session is not None and not self._session.finished

    @property
    def session(self) -> RunSession | None:
        """The current (or last) run's session: its run_id, spec and t0_ns (demo mode joins a run mid-way); None
        while the next run's noise floor is measured (it has no t0_ns until it starts: its `started` event follows)."""
        return None if self._floor_call is not None else self._session

    def start(self, spec: RunSpec, remote: Callable[..., Any] | None = None) -> str:
        """Validate and start; raises SpecError for a bad spec and workspace.Busy (a RuntimeError) while a run or
        a sweep is measuring. `remote`: run on a lab node instead (RunSession's `remote=`, a RemoteRun factory)."""
        if self._session is not None and self._session.finished:
            self.workspace.release(RUN)  # the last run ended; its `finished` event may still be queued
        self.workspace.claim(RUN)
        try:
            self._session = RunSession(spec, self.workspace.writer, listener=self._relay.emit,
                                       **self.workspace.session_options(), remote=remote)
            if self._needs_floor(remote):
                self._measure_floor_then_start(self._session)
                self.sig_busy.emit(True)
                return self._session.run_id
            run_id = self._session.start()
        except BaseException:
            self._session = None
            self.workspace.release(RUN)
            raise
        self.sig_busy.emit(True)
        return run_id

    @property
    def preparing(self) -> bool:
        """The quick noise floor is being measured; the run starts after it."""
        return self._floor_call is not None

    def stop(self) -> None:
        if self._floor_call is not None:  # not started yet: nothing to store, the run is simply not started
            self._floor_call.stop()
            self._floor_call, self._session = None, None
            self.workspace.release(RUN)
            self.sig_preparing.emit("")
            self.sig_busy.emit(False)
            return
        if self.busy:
            self._session.cancel()

    def wait(self, timeout: float | None = None) -> dict[str, Any] | None:
        return self._session.wait(timeout) if self._session else None

    # ---- Private API
    def _needs_floor(self, remote: Any) -> bool:
        """A local run with real workers (a test's stand-in worker measures nothing real) and no usable floor."""
        from engines.worker import worker_main

        return remote is None and self.workspace.worker_entry is worker_main and self._session.noise_floor is None \
            and getattr(self.workspace.writer, "path", None) is not None

    def _measure_floor_then_start(self, session: RunSession) -> None:
        from console.machine.noise import noise_floor_for

        text = ("Measuring this machine's noise floor before the run (about 3 s; kept for 10 minutes; a machine "
                "card's floor is kept for good)")
        QtCore.QTimer.singleShot(0, lambda: self.sig_preparing.emit(text) if self._floor_call is not None else None)
        call = self._floor_call = BackgroundCall(self)
        call.sig_done.connect(lambda floor: self._floor_ready(call, session, floor))
        call.sig_failed.connect(lambda _text: self._floor_ready(call, session, None))
        call.start(noise_floor_for, session.spec.target, self.workspace.writer.path)

    def _floor_ready(self, call: BackgroundCall, session: RunSession, floor: dict[str, Any] | None) -> None:
        if call is not self._floor_call:  # stopped meanwhile: the run is not started
            return
        self._floor_call = None
        self.sig_preparing.emit("")
        session.use_noise_floor(floor)  # None (it failed): judged by the plain tolerance, and says so
        try:
            session.start()
        except BaseException as exc:  # noqa: BLE001 — on the GUI thread: reported as a finished, failed run
            self._session = None
            self.workspace.release(RUN)
            self.sig_busy.emit(False)
            self.sig_preparing.emit(f"The run was not started: {type(exc).__name__}: {exc}")

    def _deliver(self, event: dict[str, Any]) -> None:
        if event.get("type") == "finished":
            self.workspace.release(RUN)
        self.sig_event.emit(event)
        if event.get("type") == "finished":
            self.sig_busy.emit(False)
            self.sig_finished.emit(event)
