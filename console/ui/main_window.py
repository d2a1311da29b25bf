"""The main window: Run and History pages, menus, shortcuts, remembered settings."""

from __future__ import annotations

import platform
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from PySide6 import QtCore, QtGui, QtWidgets

from console import __version__
from console.ui.settings import Settings

if TYPE_CHECKING:
    from console.history import HistoryStore
    from console.ui.run_controller import RunController

ENGINE_LABELS = {"torch": "PyTorch (eager)", "onnxruntime": "ONNX Runtime"}


class MainWindow(QtWidgets.QMainWindow):
    """Owns the pages; a run goes form → RunController → RunSession → worker and back as events."""

    # ---- Public API
    def __init__(self, db_path: Path):
        """The light shell: menus, tabs and status bar, imports nothing heavy, so it paints at once.

        `attach()` then builds the pages (pyqtgraph, SQLite, the runner) — right away for tests and the
        self-test, or just after the first paint when the app starts (see console.ui.app).
        """
        super().__init__()
        self.setWindowTitle(f"Lab Console — {db_path.name}")
        self.db_path = db_path
        self.controller: RunController | None = None
        self.store: HistoryStore | None = None
        self.startup_error = ""
        self.settings = Settings()
        self.tabs = QtWidgets.QTabWidget()
        for name in ("Run", "History"):
            placeholder = QtWidgets.QLabel("Loading…")
            placeholder.setAlignment(QtCore.Qt.AlignmentFlag.AlignCenter)
            self.tabs.addTab(placeholder, name)
        self.setCentralWidget(self.tabs)
        self._build_menus()
        self.settings.restore_window(self)
        self.status = self.statusBar()
        self.status.showMessage(f"Starting… · history {db_path}")
        self.run_page = None
        self.history_page = None

    def attach(self, controller: RunController | None, store: HistoryStore | None, startup_error: str = "",
               discover_targets: bool = True) -> None:
        """Build the pages and connect the runner; a broken history gives pages that say why."""
        from console.ui.history_page import HistoryPage
        from console.ui.run_page import RunPage
        from console.ui.target_discovery import TargetDiscovery

        self.controller, self.store, self.startup_error = controller, store, startup_error
        self.run_page = RunPage()
        self.history_page = HistoryPage(store)
        index = self.settings.tab_index()
        for position, (page, name) in enumerate(((self.run_page, "Run"), (self.history_page, "History"))):
            placeholder = self.tabs.widget(position)
            self.tabs.removeTab(position)
            self.tabs.insertTab(position, page, name)
            placeholder.deleteLater()
        self.tabs.setCurrentIndex(index)
        self._fill_choices()
        self.run_page.form.set_values(self.settings.form_values())
        self.status.showMessage(f"History: {self.db_path}  ·  host {platform.node()}  ·  Lab Console {__version__}")

        self.run_page.sig_run_requested.connect(self.start_run)
        self.run_page.sig_stop_requested.connect(self.stop_run)
        self.history_page.sig_error.connect(self._show_error)
        if controller is not None:
            controller.sig_event.connect(self.run_page.handle)
            controller.sig_finished.connect(self._run_finished)
        self.history_page.reload()
        if startup_error:
            self.run_page.form.setEnabled(False)
            self.run_page.progress.finish("failed", startup_error)
            QtCore.QTimer.singleShot(0, lambda: self._show_error(startup_error, "History database problem"))
        self._discovery = TargetDiscovery(self)
        self._discovery.sig_targets.connect(self._set_targets)
        if discover_targets:
            self._discovery.start()

    def start_run(self, values: dict[str, Any] | None = None) -> str | None:
        """Validate the form and start a run; a bad field is named in a dialog, nothing is spawned."""
        if self.controller is None:
            return None
        from engines.spec import RunSpec, SpecError

        values = dict(values or self.run_page.form.values())
        self.settings.save_form_values(values)
        try:
            spec = RunSpec(model=values["model"], engine=values["engine"], target=values["target"],
                           batch=values["batch"], duration_s=values["duration_s"],
                           iterations=values.get("iterations"), name=values.get("name", ""))
            run_id = self.controller.start(spec)
        except SpecError as exc:
            self._show_error(f"The run was not started: {exc}", "Invalid run setup")
            return None
        except RuntimeError as exc:
            self._show_error(str(exc), "Run in progress")
            return None
        self.tabs.setCurrentIndex(0)
        self.status.showMessage(f"Run {run_id[:8]} started: {spec.label()}")
        return run_id

    def stop_run(self) -> None:
        if self.controller is not None and self.controller.busy:
            self.controller.stop()
            self.status.showMessage("Stopping… (the worker stops between iterations)")

    # ---- Private API
    def _build_menus(self) -> None:
        bar = self.menuBar()
        file_menu = bar.addMenu("&File")
        self._action(file_menu, "&Quit", QtGui.QKeySequence.StandardKey.Quit, self.close)
        run_menu = bar.addMenu("&Run")
        self._action(run_menu, "&Start run", "Ctrl+R", lambda: self.start_run())
        self._action(run_menu, "S&top run", "Esc", self.stop_run)
        view = bar.addMenu("&View")
        self._action(view, "&Run page", "Ctrl+1", lambda: self.tabs.setCurrentIndex(0))
        self._action(view, "&History page", "Ctrl+2", lambda: self.tabs.setCurrentIndex(1))
        self._action(view, "Re&load history", "F5", lambda: self.history_page and self.history_page.reload())
        help_menu = bar.addMenu("&Help")
        self._action(help_menu, "&About Lab Console", None, self._about)

    def _action(self, menu: QtWidgets.QMenu, text: str, shortcut, slot: Callable[[], Any]) -> QtGui.QAction:
        action = menu.addAction(text)
        if shortcut is not None:
            action.setShortcut(QtGui.QKeySequence(shortcut))
        action.triggered.connect(slot)
        return action

    def _fill_choices(self) -> None:
        from engines import backends, catalog

        form = self.run_page.form
        form.set_choices("model", [(m["name"], f"{m['name']} — {m['description']}", True, f"input {m['input']}")
                                   for m in catalog.describe()])
        form.set_choices("engine", [(name, ENGINE_LABELS.get(name, name), True, "") for name in backends.names()])
        form.set_choices("target", [("cpu", "cpu — host CPU", True, "discovering other targets…")])

    def _set_targets(self, targets: list[dict[str, Any]]) -> None:
        items = [(t["id"], f"{t['id']} — {t['name']}", bool(t["available"]),
                  t.get("reason") or t.get("note", "")) for t in targets]
        current = self.run_page.form.values().get("target")
        self.run_page.form.set_choices("target", items)
        self.run_page.form.set_values({"target": current})

    def _run_finished(self, record: dict[str, Any]) -> None:
        self.history_page.reload()
        summary = record.get("summary") or {}
        p50 = (summary.get("latency_ms") or {}).get("p50")
        text = f"Run {record['run_id'][:8]} {record['status']}"
        if p50 is not None:
            text += f": p50 {p50:.3g} ms, {summary['throughput_per_s']:.4g} samples/s"
        self.status.showMessage(text)

    def _show_error(self, message: str, title: str = "Lab Console") -> None:
        box = QtWidgets.QMessageBox(QtWidgets.QMessageBox.Icon.Warning, title, message,
                                    QtWidgets.QMessageBox.StandardButton.Ok, self)
        box.setObjectName("error_dialog")
        box.open()

    def _about(self) -> None:
        QtWidgets.QMessageBox.about(self, "About Lab Console",
                                    f"Lab Console {__version__}\nQt {QtCore.qVersion()} · Python "
                                    f"{platform.python_version()}\nHistory: {self.db_path}")

    def closeEvent(self, event: QtGui.QCloseEvent) -> None:  # noqa: N802 — Qt override
        if self.controller is not None and self.controller.busy:
            self.controller.stop()
            self.controller.wait(10.0)
        self.settings.save_window(self)
        if self.run_page is not None:
            self.settings.save_tab_index(self.tabs.currentIndex())
            self.settings.save_form_values(self.run_page.form.values())
            self._discovery.stop()
        super().closeEvent(event)
