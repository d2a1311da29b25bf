"""Starts the window: QApplication, the history database (with a clear dialog if it is unusable), the pages."""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable
from pathlib import Path

from PySide6 import QtCore, QtGui, QtWidgets

from console import __version__, paths
from console.ui.main_window import MainWindow
from console.ui.settings import APPLICATION, ORGANIZATION


def application() -> QtWidgets.QApplication:
    app = QtWidgets.QApplication.instance() or QtWidgets.QApplication(sys.argv[:1])
    app.setOrganizationName(ORGANIZATION)
    app.setApplicationName(APPLICATION)
    app.setApplicationVersion(__version__)
    icon = paths.asset_path("labconsole.svg")
    if icon.exists():
        app.setWindowIcon(QtGui.QIcon(str(icon)))
    return app


def build_main_window(db: str | Path | None = None, worker_entry: Callable[..., None] | None = None,
                      telemetry_hz: float | None = 10.0, discover_targets: bool = True) -> MainWindow:
    """The complete window, built at once (tests, self-test)."""
    window = MainWindow(paths.history_db(db))
    attach_workspace(window, worker_entry, telemetry_hz, discover_targets)
    return window


def attach_workspace(window: MainWindow, worker_entry: Callable[..., None] | None = None,
                     telemetry_hz: float | None = 10.0, discover_targets: bool = True) -> None:
    """Open the history and the runner, then build the pages. A broken database gives a window that says why."""
    from console.history import HistoryError, HistoryStore, HistoryWriter
    from console.telemetry.hub import TelemetryHub
    from console.ui.run_controller import RunController
    from engines.worker import worker_main

    hub = None
    if telemetry_hz:  # idle telemetry from launch, shared by every run of this window
        hub = TelemetryHub(rate_hz=telemetry_hz)
        hub.start()
    try:
        writer = HistoryWriter.open(window.db_path)
        store = HistoryStore(window.db_path)
    except HistoryError as exc:
        window.attach(None, None, startup_error=str(exc), discover_targets=discover_targets, hub=hub)
        return
    controller = RunController(writer, worker_entry=worker_entry or worker_main, telemetry_hz=telemetry_hz,
                               hub=hub)
    controller.setParent(window)
    window.attach(controller, store, discover_targets=discover_targets, hub=hub)
    window.destroyed.connect(lambda *_: (writer.close(), store.close()))


class _AfterFirstPaint(QtCore.QObject):
    """Runs a callback once, just after the window's first paint: the shell shows at once, pages follow."""

    def __init__(self, window: QtWidgets.QWidget, callback: Callable[[], None]):
        super().__init__(window)
        self._callback = callback
        window.installEventFilter(self)

    def eventFilter(self, obj, event) -> bool:  # noqa: N802 — Qt override
        if event.type() == QtCore.QEvent.Type.Paint and self._callback is not None:
            callback, self._callback = self._callback, None
            obj.removeEventFilter(self)
            QtCore.QTimer.singleShot(0, callback)
        return False


def launch(db: str | None = None) -> MainWindow:
    """Show the shell now; open the history and build the pages right after its first paint."""
    application()
    window = MainWindow(paths.history_db(db))
    _AfterFirstPaint(window, lambda: attach_workspace(window))
    window.show()
    return window


def run_app(db: str | None = None) -> int:
    app = application()
    window = launch(db)  # noqa: F841 — kept alive for the event loop
    if os.environ.get(EXIT_AFTER_PAINT_ENV) == "1":
        _AfterFirstPaint(window, lambda: _exit_after_paint(app))
    return app.exec()


# Start-up measurement (packaging/measure_startup.py, for the frozen bundle that cannot run a probe script):
# with LABCONSOLE_EXIT_AFTER_PAINT=1 the window prints "painted <seconds since process start>" to stderr at
# its first paint and quits.
EXIT_AFTER_PAINT_ENV = "LABCONSOLE_EXIT_AFTER_PAINT"


def _exit_after_paint(app: QtWidgets.QApplication) -> None:
    print(f"painted {_seconds_since_process_start():.3f}", file=sys.stderr, flush=True)
    app.quit()


def _seconds_since_process_start() -> float:
    try:  # Linux: the process's start and CLOCK_BOOTTIME both count from boot (to the kernel tick, 10 ms)
        ticks = int(Path("/proc/self/stat").read_text().rsplit(")", 1)[1].split()[19])
        return time.clock_gettime(time.CLOCK_BOOTTIME) - ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, AttributeError, ValueError, IndexError):
        import psutil

        return time.time() - psutil.Process().create_time()
