"""Starts the window: QApplication and its colour scheme, the workspace (history database, with a clear dialog if
it is unusable; telemetry), the pages.

The colour scheme follows the desktop: a dark window colour in the platform's palette gives the dark scheme.
`LABCONSOLE_THEME=light` or `=dark` pins one (and gives Qt's own widgets the matching palette); `auto` (the default)
follows the desktop.
"""

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
from widgets import theme

THEME_ENV = "LABCONSOLE_THEME"


def application() -> QtWidgets.QApplication:
    app = QtWidgets.QApplication.instance() or QtWidgets.QApplication(sys.argv[:1])
    app.setOrganizationName(ORGANIZATION)
    app.setApplicationName(APPLICATION)
    app.setApplicationVersion(__version__)
    icon = paths.asset_path("labconsole.svg")
    if icon.exists():
        app.setWindowIcon(QtGui.QIcon(str(icon)))
    choose_theme(app)
    return app


def choose_theme(app: QtWidgets.QApplication, mode: str | None = None) -> theme.Scheme:
    """The colour scheme for the window about to be built: `mode`, else $LABCONSOLE_THEME, else the desktop's."""
    mode = (mode or os.environ.get(THEME_ENV) or "auto").strip().lower()
    if mode not in theme.MODES:
        print(f"labconsole: {THEME_ENV}={mode!r} is not one of {', '.join(theme.MODES)}; following the desktop "
              f"(auto). Fix: set {THEME_ENV} to one of those, or unset it.", file=sys.stderr)
        mode = "auto"
    return theme.use_for(app, mode)


def build_main_window(db: str | Path | None = None, worker_entry: Callable[..., None] | None = None,
                      telemetry_hz: float | None = 10.0, discover_targets: bool = True,
                      warm_workers: bool = False) -> MainWindow:
    """The complete window, built at once (tests, self-test)."""
    window = MainWindow(paths.history_db(db))
    attach_workspace(window, worker_entry, telemetry_hz, discover_targets, warm_workers)
    return window


def attach_workspace(window: MainWindow, worker_entry: Callable[..., None] | None = None,
                     telemetry_hz: float | None = 10.0, discover_targets: bool = True,
                     warm_workers: bool = False) -> None:
    """Open the workspace (history, telemetry, warm workers for the app), then build the pages. A broken database
    gives a window that says why. The history is closed when the window is destroyed; telemetry stops when it
    closes."""
    from console.ui.workspace import Workspace

    workspace = Workspace.open(window.db_path, worker_entry=worker_entry, telemetry_hz=telemetry_hz,
                               warm_workers=warm_workers)
    window.attach(workspace, discover_targets=discover_targets)
    window.destroyed.connect(lambda *_: workspace.close())


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
    _AfterFirstPaint(window, lambda: attach_workspace(window, warm_workers=True))
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
