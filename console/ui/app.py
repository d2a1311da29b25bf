"""Starts the window: QApplication, the history database (with a clear dialog if it is unusable), the pages."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

from PySide6 import QtCore, QtGui, QtWidgets

from console import __version__, paths
from console.history import HistoryError, HistoryStore, HistoryWriter
from console.ui.main_window import MainWindow
from console.ui.run_controller import RunController
from console.ui.settings import APPLICATION, ORGANIZATION
from engines.worker import worker_main


def application() -> QtWidgets.QApplication:
    app = QtWidgets.QApplication.instance() or QtWidgets.QApplication(sys.argv[:1])
    app.setOrganizationName(ORGANIZATION)
    app.setApplicationName(APPLICATION)
    app.setApplicationVersion(__version__)
    icon = Path(__file__).resolve().parents[2] / "assets" / "labconsole.svg"
    if icon.exists():
        app.setWindowIcon(QtGui.QIcon(str(icon)))
    return app


def build_main_window(db: str | Path | None = None, worker_entry: Callable[..., None] = worker_main,
                      telemetry_hz: float | None = 10.0, discover_targets: bool = True) -> MainWindow:
    """The window with its history and runner; a broken database gives a window that says why, not a crash."""
    db_path = paths.history_db(db)
    try:
        writer = HistoryWriter.open(db_path)
        store = HistoryStore(db_path)
    except HistoryError as exc:
        return MainWindow(db_path, None, None, startup_error=str(exc), discover_targets=discover_targets)
    controller = RunController(writer, worker_entry=worker_entry, telemetry_hz=telemetry_hz)
    window = MainWindow(db_path, controller, store, discover_targets=discover_targets)
    controller.setParent(window)
    window.destroyed.connect(lambda *_: (writer.close(), store.close()))
    return window


def run_app(db: str | None = None) -> int:
    app = application()
    window = build_main_window(db)
    window.show()
    code = app.exec()
    QtCore.QCoreApplication.processEvents()
    return code
