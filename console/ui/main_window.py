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
    from console.telemetry.hub import TelemetryHub
    from console.ui.run_controller import RunController

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
        self.hub = None
        self.settings = Settings()
        self.tabs = QtWidgets.QTabWidget()
        for name in ("Run", "History", "Sweeps"):
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
        self.sweep_page = None

    def attach(self, controller: RunController | None, store: HistoryStore | None, startup_error: str = "",
               discover_targets: bool = True, hub: TelemetryHub | None = None) -> None:
        """Build the pages and connect the runner; a broken history gives pages that say why."""
        from console.ui.background import BackgroundCall
        from console.ui.history_page import HistoryPage
        from console.ui.run_page import RunPage
        from console.ui.sweep_page import SweepPage
        from console.ui.system_page import SystemPage

        self.controller, self.store, self.startup_error, self.hub = controller, store, startup_error, hub
        self.run_page = RunPage()
        self.history_page = HistoryPage(store)
        self.system_page = SystemPage(hub)
        self.sweep_page = SweepPage(store, getattr(controller, "_writer", None), base_values=self._sweep_base,
                                    targets=lambda: self._targets, session_options=_session_options(controller),
                                    is_busy=lambda: bool(controller and controller.busy))
        for position, (page, name) in enumerate(((self.run_page, "Run"), (self.history_page, "History"),
                                                 (self.sweep_page, "Sweeps"))):
            placeholder = self.tabs.widget(position)
            self.tabs.removeTab(position)
            self.tabs.insertTab(position, page, name)
            placeholder.deleteLater()
        self.tabs.addTab(self.system_page, "System")
        self.tabs.setCurrentIndex(self.settings.tab_index())
        self._discovery = BackgroundCall(self)
        self._discovery.sig_done.connect(self._set_targets)
        self._discovery.sig_failed.connect(lambda text: self.status.showMessage(f"Target discovery failed: {text}"))
        self._inspection = BackgroundCall(self)
        self._inspection.sig_done.connect(self._show_model_inputs)
        self._inspection.sig_failed.connect(self._model_unreadable)
        self._targets: list[dict[str, Any]] = []
        self._model_files: list[str] = self.settings.model_files()
        self._updating_choices = False
        self.run_page.form.sig_choice_changed.connect(self._choice_changed)
        self.run_page.form.sig_open_model_requested.connect(self.open_model_dialog)
        self._fill_choices()
        saved = self.settings.form_values()
        self.run_page.form.set_values(saved)
        self._refresh_choices()
        self.run_page.form.set_values(saved)
        self.setAcceptDrops(True)
        self.status.showMessage(f"History: {self.db_path}  ·  host {platform.node()}  ·  Lab Console {__version__}")

        self.run_page.sig_run_requested.connect(self.start_run)
        self.run_page.sig_stop_requested.connect(self.stop_run)
        self.history_page.sig_error.connect(self._show_error)
        self.sweep_page.sig_error.connect(self._show_error)
        self.sweep_page.sig_sweep_finished.connect(lambda _record: self.history_page.reload())
        self.sweep_page.reload()
        if controller is not None:
            controller.sig_event.connect(self.run_page.handle)
            controller.sig_finished.connect(self._run_finished)
        self.history_page.reload()
        if startup_error:
            self.run_page.form.setEnabled(False)
            self.run_page.progress.finish("failed", startup_error)
            QtCore.QTimer.singleShot(0, lambda: self._show_error(startup_error, "History database problem"))
        if discover_targets:
            self.refresh_targets(refresh=False)
        self._inspect_current_model()

    def start_run(self, values: dict[str, Any] | None = None) -> str | None:
        """Validate the form and start a run; a bad field is named in a dialog, nothing is spawned."""
        if self.controller is None:
            return None
        if self.sweep_page is not None and self.sweep_page.running:
            self._show_error("A sweep is running on the Sweeps page: stop it first, so the two do not measure each "
                             "other.", "Sweep in progress")
            return None
        from engines.spec import RunSpec, SpecError, is_model_path

        values = dict(values or self.run_page.form.values())
        self.settings.save_form_values(values)
        inputs, input_values = self.run_page.inputs.values()
        missing = self.run_page.inputs.errors() if is_model_path(values.get("model") or "") else []
        if missing:
            self._show_error("The run was not started: " + "; ".join(missing) + ".", "Model inputs needed")
            return None
        try:
            spec = RunSpec.from_dict({
                "model": values["model"], "engine": values["engine"], "target": values["target"],
                "precision": values.get("precision") or "fp32", "mode": values.get("mode") or "inference",
                "batch": values["batch"], "threads": values.get("threads"), "duration_s": values["duration_s"],
                "iterations": values.get("iterations"), "name": values.get("name") or "",
                "inputs": inputs, "input_values": input_values})
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
        run_menu.addSeparator()
        self._action(run_menu, "&Open model file…", QtGui.QKeySequence.StandardKey.Open,
                     lambda: self.run_page and self.open_model_dialog())
        self._action(run_menu, "Re&fresh targets", None, lambda: self.run_page and self.refresh_targets(True))
        view = bar.addMenu("&View")
        self._action(view, "&Run page", "Ctrl+1", lambda: self.tabs.setCurrentIndex(0))
        self._action(view, "&History page", "Ctrl+2", lambda: self.tabs.setCurrentIndex(1))
        self._action(view, "S&weeps page", "Ctrl+3", lambda: self.tabs.setCurrentIndex(2))
        self._action(view, "&System page", "Ctrl+4", lambda: self.tabs.setCurrentIndex(self.tabs.count() - 1))
        self._action(view, "Re&load history", "F5", lambda: self.history_page and self.history_page.reload())
        help_menu = bar.addMenu("&Help")
        self._action(help_menu, "&About Lab Console", None, self._about)

    def _action(self, menu: QtWidgets.QMenu, text: str, shortcut, slot: Callable[[], Any]) -> QtGui.QAction:
        action = menu.addAction(text)
        if shortcut is not None:
            action.setShortcut(QtGui.QKeySequence(shortcut))
        action.triggered.connect(slot)
        return action

    def refresh_targets(self, refresh: bool = True) -> None:
        """Find targets in the background (cached per host unless `refresh`)."""
        from console.targets import discover_targets

        self.status.showMessage("Discovering targets…" if refresh else self.status.currentMessage())
        self._discovery.start(discover_targets, refresh)

    def open_model_dialog(self) -> None:
        path, _ = QtWidgets.QFileDialog.getOpenFileName(
            self, "Open model file", str(Path(self._model_files[0]).parent) if self._model_files else "",
            "Model files (*.onnx *.pt2 *.pt *.jit);;All files (*)")
        if path:
            self.add_model_file(path)

    def add_model_file(self, path: str) -> bool:
        """Offer a model file in the model list and select it; a file type we refuse is explained, not added."""
        from engines.spec import RunSpec, SpecError

        path = str(Path(path).resolve())
        engine = {".onnx": "onnxruntime"}.get(Path(path).suffix.lower(), "torch")
        try:
            RunSpec(model=path, engine=engine).validate()
        except SpecError as exc:
            if exc.field == "model":
                self._show_error(f"{exc}", "Cannot open this model file")
                return False
        self._model_files = [path] + [f for f in self._model_files if f != path][:9]
        self.settings.save_model_files(self._model_files)
        self._fill_choices()
        self.run_page.form.set_values({"model": path})
        self._refresh_choices()
        self._inspect_current_model()
        return True

    def dragEnterEvent(self, event: QtGui.QDragEnterEvent) -> None:  # noqa: N802 — Qt override
        if event.mimeData().hasUrls() and any(url.isLocalFile() for url in event.mimeData().urls()):
            event.acceptProposedAction()

    def dropEvent(self, event: QtGui.QDropEvent) -> None:  # noqa: N802 — Qt override
        files = [url.toLocalFile() for url in event.mimeData().urls() if url.isLocalFile()]
        if files and self.run_page is not None:
            event.acceptProposedAction()
            self.tabs.setCurrentIndex(0)
            self.add_model_file(files[0])

    def _fill_choices(self) -> None:
        from console.choices import model_choices
        from engines import catalog

        self.run_page.form.set_choices("model", model_choices(catalog.describe(), self._model_files))
        if not self._targets:
            self.run_page.form.set_choices("target", [("cpu", "cpu — host CPU", True, "discovering targets…")])

    def _set_targets(self, targets: list[dict[str, Any]]) -> None:
        from console.choices import target_choices

        self._targets = targets
        current = self.run_page.form.values().get("target")
        self.run_page.form.set_choices("target", target_choices(targets))
        self.run_page.form.set_values({"target": current})
        self._refresh_choices()
        cached = targets[0].get("cached_at") if targets else None
        self.status.showMessage(f"{sum(t['available'] for t in targets)} of {len(targets)} targets usable"
                                + (f" (cached {cached}; Run ▸ Refresh targets to rediscover)" if cached else ""))

    def _choice_changed(self, field: str, _value: str) -> None:
        if field in ("model", "engine", "target") and not self._updating_choices:
            self._refresh_choices()
        if field == "model":
            self._inspect_current_model()

    def _refresh_choices(self) -> None:
        """Offer only the engines, precisions and modes usable for this model on this target."""
        from console.choices import engine_choices, mode_choices, precision_choices
        from engines import backends

        form = self.run_page.form
        self._updating_choices = True
        try:
            values = form.values()
            target = next((t for t in self._targets if t["id"] == values["target"]), None)
            form.set_choices("engine", engine_choices(backends.names(), values["model"], target))
            engine = form.values()["engine"]
            form.set_choices("precision", precision_choices(engine, target))
            form.set_choices("mode", mode_choices(engine, values["model"]))
        finally:
            self._updating_choices = False

    def _inspect_current_model(self) -> None:
        from console.model_info import inspect_model
        from engines.spec import is_model_path

        model = self.run_page.form.values().get("model") or ""
        self.run_page.inputs.clear()
        if is_model_path(model) and Path(model).is_file():
            self.status.showMessage(f"Reading the inputs of {Path(model).name}…")
            self._inspection.start(inspect_model, model)

    def _show_model_inputs(self, info: dict[str, Any]) -> None:
        if info.get("path") != self.run_page.form.values().get("model"):
            return  # the user picked another model meanwhile
        self.run_page.inputs.set_inputs(info.get("inputs") or [])
        self.status.showMessage(f"{Path(info['path']).name}: {info.get('format', '')}, "
                                f"{len(info.get('inputs') or [])} inputs, sha256 {str(info.get('sha256', ''))[:12]}…")

    def _model_unreadable(self, message: str) -> None:
        self.run_page.inputs.clear()
        self._show_error(f"Cannot read the model file: {message}", "Model file problem")

    def _run_finished(self, record: dict[str, Any]) -> None:
        self.history_page.reload()
        summary = record.get("summary") or {}
        p50 = (summary.get("latency_ms") or {}).get("p50")
        text = f"Run {record['run_id'][:8]} {record['status']}"
        if p50 is not None:
            text += f": p50 {p50:.3g} ms, {summary['throughput_per_s']:.4g} samples/s"
        self.status.showMessage(text)

    def _sweep_base(self) -> dict[str, Any]:
        """What a sweep starts from: the Run page's current setup and model inputs."""
        inputs, input_values = self.run_page.inputs.values()
        return {**self.run_page.form.values(), "inputs": inputs, "input_values": input_values}

    def _show_error(self, message: str, title: str = "Lab Console") -> None:
        box = QtWidgets.QMessageBox(QtWidgets.QMessageBox.Icon.Warning, title, message,
                                    QtWidgets.QMessageBox.StandardButton.Ok, self)
        box.setObjectName("error_dialog")
        box.open()

    def _about(self) -> None:
        from console.about import version_text  # package metadata only: torch/onnxruntime are never imported

        QtWidgets.QMessageBox.about(self, "About Lab Console", f"{version_text()}\n\nHistory: {self.db_path}")

    def closeEvent(self, event: QtGui.QCloseEvent) -> None:  # noqa: N802 — Qt override
        if self.controller is not None and self.controller.busy:
            self.controller.stop()
            self.controller.wait(10.0)
        if self.sweep_page is not None:
            self.sweep_page.shutdown()
        self.settings.save_window(self)
        if self.run_page is not None:
            self.settings.save_tab_index(self.tabs.currentIndex())
            self.settings.save_form_values(self.run_page.form.values())
            self._discovery.stop()
            self._inspection.stop()
            self.system_page.close_feed()
        if self.hub is not None:
            self.hub.stop()
        super().closeEvent(event)


def _session_options(controller: RunController | None) -> dict[str, Any]:
    """A sweep's runs are measured like the Run page's: same worker entry, telemetry rate and shared hub."""
    if controller is None:
        return {}
    options: dict[str, Any] = {"worker_entry": controller.worker_entry,
                               "telemetry_hz": getattr(controller, "_telemetry_hz", 10.0)}
    if getattr(controller, "hub", None) is not None:
        options["hub"] = controller.hub
    return options
