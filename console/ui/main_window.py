"""The main window: the pages of console.ui.pages as tabs (each built when first shown or asked for, and connected to
the other pages by console.ui.page_links), menus, shortcuts, remembered settings."""

from __future__ import annotations

import platform
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from PySide6 import QtCore, QtGui, QtWidgets

from console import __version__
from console.ui import pages
from console.ui.cluster_link import ClusterWindow
from console.ui.page_links import PageLinks
from console.ui.run_actions import RunActionsWindow
from console.ui.run_setup import RunSetupWindow
from console.ui.settings import Settings

if TYPE_CHECKING:
    from console.history import HistoryStore
    from console.ui.run_controller import RunController
    from console.ui.workspace import Workspace

WARM_AFTER_MS = 2000  # the first spare worker is made once start-up's own work (pages, discovery) is done
DOCTOR_AFTER_MS = 3000  # the machine's noise check (Machine page) after start-up's work and after each run


class MainWindow(RunActionsWindow, RunSetupWindow, ClusterWindow, QtWidgets.QMainWindow):
    """Owns the pages; a run goes form → RunController → RunSession → worker and back as events."""

    # ---- Public API
    def __init__(self, db_path: Path):
        """The light shell: menus, a placeholder tab per page and the status bar; it imports nothing heavy, so it
        paints at once.

        `attach()` then opens the runner and builds the Run page and the page in front — right away for tests and
        the self-test, or just after the first paint when the app starts (see console.ui.app); the Run page's plots
        (pyqtgraph) follow its own first paint (`RunPage.build_plots`); every other page is built when first shown
        or asked for (`page()`).
        """
        super().__init__()
        self.setWindowTitle(f"Lab Console — {db_path.name}")
        self.db_path = db_path
        self.workspace: Workspace | None = None
        self.controller: RunController | None = None
        self.paint_budget = None  # console.ui.paint_budget.PaintBudget, made with the controller by attach()
        self.settings = Settings()
        self.page_infos: list[pages.PageInfo] = list(pages.PAGES)
        self.pages: dict[str, QtWidgets.QWidget] = {}  # the pages built so far (on first show, or when asked for)
        self._links = PageLinks(self, pages.links(self.page_infos))
        self._context: pages.PageContext | None = None  # what a page is built with; set by `attach()`
        # Set before `attach()` builds the pages: swapping a shown shell's placeholders for pages shows some of them
        # (their showEvent may ask for the targets), and a window closed mid-build must close cleanly.
        self._targets: list[dict[str, Any]] = []
        self._discovery = self._inspection = self._cluster = None
        self._code_files: dict[str, bool] = {}  # model file → it is code (TorchScript), from its inspection
        self._analyze_card = None  # console.ui.analyze_card.CardBeforeAnalyze, made by the first Analyze
        self.confirm = None  # console.ui.confirm_action.ConfirmAction: the verdict's Confirm (Run and History pages)
        self._pending_shortcuts: list[tuple[QtGui.QAction, Any]] = []  # set by attach(), see _action
        self.tabs = QtWidgets.QTabWidget()
        for info in self.page_infos:
            placeholder = QtWidgets.QLabel("Loading…")
            # Centred by style sheet, not setAlignment(Qt.AlignmentFlag…): the first touch of any QtCore.Qt enum
            # makes PySide build all ~100 of the Qt namespace's Python enums (20–30 ms), which can wait until the
            # shell has painted.
            placeholder.setStyleSheet("qproperty-alignment: AlignCenter;")
            self.tabs.addTab(placeholder, info.title)
        self.setCentralWidget(self.tabs)
        self._build_menus()
        self.settings.restore_window(self)
        self.status = self.statusBar()
        self.status.showMessage(f"Starting… · history {db_path}")

    # The pages the window itself works with, built when asked for; None before `attach()`.
    @property
    def run_page(self):
        return self.page("run")

    @property
    def history_page(self):
        return self.page("history")

    @property
    def sweep_page(self):
        return self.page("sweeps")

    @property
    def system_page(self):
        return self.page("system")

    @property
    def store(self) -> HistoryStore | None:
        return self.workspace.store if self.workspace else None

    @property
    def startup_error(self) -> str:
        return self.workspace.startup_error if self.workspace else ""

    def page(self, name: str) -> QtWidgets.QWidget | None:
        """The page called `name`, built now when it was not yet; None before `attach()` or when there is none."""
        page = self.pages.get(name)
        if page is not None or self._context is None or name not in (info.name for info in self.page_infos):
            return page
        position = self._position(name)
        info = self.page_infos[position]
        page = self.pages[name] = info.build(self._context)
        current, blocked = self.tabs.currentIndex(), self.tabs.blockSignals(True)  # swapping tabs shows no other
        placeholder = self.tabs.widget(position)
        self.tabs.removeTab(position)
        self.tabs.insertTab(position, page, info.title)
        self.tabs.setCurrentIndex(current)
        self.tabs.blockSignals(blocked)
        placeholder.deleteLater()
        if hasattr(page, "sig_error"):
            page.sig_error.connect(self._show_error)
        self._links.built(name, page)  # the links to the pages built before it, and the window's own wiring
        return page

    def show_page(self, name: str) -> None:
        """Bring the page called `name` to the front, built when first shown (its placeholder, before `attach()`)."""
        self.tabs.setCurrentIndex(self._position(name))
        self.page(name)  # already in front: no tab change to build it

    def attach(self, workspace: Workspace, discover_targets: bool = True) -> None:
        """Build the Run page and the page in front and connect the runner; the other pages are built when first
        shown or asked for (`page()`). A broken history gives pages that say why."""
        from console.ui.paint_budget import PaintBudget
        from console.ui.run_controller import RunController

        self.workspace = workspace
        for action, shortcut in self._pending_shortcuts:
            action.setShortcut(QtGui.QKeySequence(shortcut))
        self._pending_shortcuts.clear()
        if workspace.usable:
            self.controller = RunController(workspace, parent=self)
            # Paint less while a run measures (connected after the Run page's own handler, so the catch-up sees its
            # final state); a sweep's runs too, once the Sweeps page is built.
            self.paint_budget = PaintBudget(self.settings.paint_rates(), workspace.telemetry_hz, parent=self)
        self._context = pages.PageContext(workspace, base_values=self._sweep_base, targets=lambda: self._targets,
                                          cluster_address=lambda: self._cluster.address if self._cluster else "",
                                          is_code=lambda path: bool(self._code_files.get(path)),
                                          trusts_code=self._trusts_code)
        self._links.when_built("run", self._wire_run_page)
        self._links.when_built("history", self._wire_history_page)
        if self.paint_budget is not None:
            self._links.when_built("sweeps", lambda page: page.sig_run_event.connect(
                self.paint_budget.handle, QtCore.Qt.ConnectionType.QueuedConnection))
        run_page = self.page("run")
        self._attach_confirm()  # binds the Run and History pages' panels as they are built
        self._attach_cluster(auto=discover_targets)
        self._attach_run_setup()
        self.status.showMessage(f"History: {self.db_path}  ·  host {platform.node()}  ·  Lab Console {__version__}")
        if workspace.startup_error:
            error = workspace.startup_error
            run_page.form.setEnabled(False)
            run_page.progress.finish("failed", error)
            QtCore.QTimer.singleShot(0, lambda: self._show_error(error, "History database problem"))
        self.tabs.currentChanged.connect(lambda position: self.page(self.page_infos[position].name))
        self.show_page(self.settings.page_name([info.name for info in self.page_infos]))
        if discover_targets:
            self.refresh_targets(refresh=False)
        self._inspect_current_model()
        self._doctor_auto = discover_targets  # tests that build a window without background work leave it off
        self._check_machine_later()
        if workspace.pool is not None:  # after start-up's own work: a spare for the engine the form has
            engine = run_page.form.values().get("engine") or "torch"
            QtCore.QTimer.singleShot(WARM_AFTER_MS, lambda: self.workspace.measuring is None
                                     and workspace.pool.prepare(engine))

    def _wire_run_page(self, run_page) -> None:
        """The Run page's requests go to the window; the runner's events to the page."""
        run_page.sig_run_requested.connect(self.start_run)
        run_page.sig_analyze_requested.connect(self.analyze_run)
        run_page.sig_stop_requested.connect(self.stop_run)
        run_page.machine_card = self._machine_card
        if self.controller is not None:
            self.controller.sig_event.connect(run_page.handle)
            self.controller.sig_event.connect(self.paint_budget.handle)
            self.controller.sig_finished.connect(self._run_finished)
            # the quick noise floor measured before a run when none is stored (console.ui.run_controller)
            self.controller.sig_preparing.connect(lambda text: text and self.status.showMessage(text))

    def _wire_history_page(self, history_page) -> None:
        """The History page's Re-run and Report are the window's (the pages it talks to are in its links)."""
        history_page.sig_rerun_requested.connect(self.rerun)
        history_page.sig_report_requested.connect(self.report_runs)

    def compare_runs(self, run_ids: list[str]) -> None:
        """Open the Compare page on these runs (the History page's Compare)."""
        page = self.page("compare")
        if page is None:
            return
        self.show_page("compare")
        page.compare(run_ids)

    def report_runs(self, run_ids: list[str], sweep_id: str | None = None):
        """Ask where, then write the report of these runs (or of a sweep) on a worker thread: the status bar shows
        its progress, then what it found. Returns the ReportJob (None when cancelled)."""
        from console.ui.report_dialog import ask_and_write

        return ask_and_write(self, self.db_path, run_ids, sweep_id, status_bar=self.status)

    def report(self):
        """File ▸ Report…: the sweep shown on the Sweeps page when it is open, else the History page's selection,
        else the run last shown there."""
        if self.history_page is None:
            return None
        sweeps = self.pages.get("sweeps")
        if sweeps is not None and self.tabs.currentWidget() is sweeps and (getattr(sweeps, "record", None) or {}).get(
                "sweep_id"):
            return self.report_runs([], sweeps.record["sweep_id"])
        selected = self.history_page.table.selected_run_ids() or (
            [self.history_page.opened_run_id] if self.history_page.opened_run_id else [])
        if not selected:
            self.show_page("history")
            self.history_page.report_selected()  # says what to select
            return None
        return self.report_runs(selected)

    def enter_demo_mode(self, playlist=None, theme_mode: str | None = None, full_screen: bool = True,
                        ask: bool = False):
        """Demo mode (F11): the live run, or a playlist (`ask`: pick its file), full screen; Esc comes back."""
        from console.ui.demo import open_demo

        return open_demo(self, playlist, theme_mode=theme_mode, full_screen=full_screen, ask=ask)

    # ---- Private API
    def _build_menus(self) -> None:
        bar = self.menuBar()
        file_menu = bar.addMenu("&File")
        self._action(file_menu, "&Report…", None, self.report)  # Ctrl+Shift+P is the History page's
        file_menu.addSeparator()
        self._action(file_menu, "&Quit", QtGui.QKeySequence.StandardKey.Quit, self.close)
        run_menu = bar.addMenu("&Run")
        self._action(run_menu, "&Start run", "Ctrl+R", lambda: self.start_run())
        self._action(run_menu, "&Analyze run (profile apart)", "Ctrl+Shift+R", lambda: self.analyze_run())
        self._action(run_menu, "S&top run", "Esc", self.stop_run)
        self._action(run_menu, "Con&firm verdict (run its experiments)", "Ctrl+Shift+K", self.confirm_verdict)
        run_menu.addSeparator()
        self._action(run_menu, "&Open model file…", QtGui.QKeySequence.StandardKey.Open,
                     lambda: self.run_page and self.open_model_dialog())
        self._action(run_menu, "Re&fresh targets", None, lambda: self.run_page and self.refresh_targets(True))
        run_menu.addSeparator()
        self._action(run_menu, self.CONNECT_TEXT, None, lambda: self.run_page and self.connect_cluster())
        self._action(run_menu, "&Leave lab cluster", None, lambda: self.run_page and self.disconnect_cluster())
        view = bar.addMenu("&View")
        taken = {"l"}  # Re&load history
        for position, info in enumerate(self.page_infos):
            self._action(view, _with_mnemonic(f"{info.title} page", taken), pages.shortcut(position),
                         partial(self.show_page, info.name))
        self._action(view, "Re&load history", "F5", lambda: self.pages.get("history") and self.history_page.reload())
        view.addSeparator()
        self._action(view, "&Demo mode (full screen)", "F11", lambda: self.enter_demo_mode())
        self._action(view, "Demo &playlist…", "Shift+F11", lambda: self.enter_demo_mode(ask=True))
        help_menu = bar.addMenu("&Help")
        self._action(help_menu, "&About Lab Console", None, self._about)

    def _action(self, menu: QtWidgets.QMenu, text: str, shortcut, slot: Callable[[], Any]) -> QtGui.QAction:
        """A menu entry; its shortcut is set by `attach()` (what it acts on exists from then on): making the first
        QKeySequence makes PySide build the Qt namespace's Python enums (20–30 ms), after the shell's first paint."""
        action = menu.addAction(text)
        if shortcut is not None and self.workspace is not None:
            action.setShortcut(QtGui.QKeySequence(shortcut))
        elif shortcut is not None:
            self._pending_shortcuts.append((action, shortcut))
        action.triggered.connect(slot)
        return action

    def open_sweep(self, sweep_id: str) -> None:
        """Show a past sweep on the Sweeps page (picked on the History page)."""
        self.show_page("sweeps")
        self.page("sweeps").open_sweep(sweep_id)

    def _position(self, name: str) -> int:
        for position, info in enumerate(self.page_infos):
            if info.name == name:
                return position
        raise KeyError(f"no page called {name!r}; pages: {', '.join(i.name for i in self.page_infos)}")

    def _check_machine_later(self) -> None:
        """The Machine page's noise check (engines.doctor, on a thread; its report feeds the Run page's banner, by
        their link) after start-up's work and after each run; the page is built for it if it was not shown yet."""
        if getattr(self, "_doctor_auto", False) and self.workspace.usable:
            QtCore.QTimer.singleShot(DOCTOR_AFTER_MS, self, self._check_machine)

    def _check_machine(self) -> None:
        if self.workspace.measuring is None and any(info.name == "machine" for info in self.page_infos):
            machine = self.page("machine")
            if hasattr(machine, "check_machine"):
                machine.check_machine()

    def _run_finished(self, record: dict[str, Any]) -> None:
        self._check_machine_later()
        if self.pages.get("history") is not None:  # a History page built later reads the run itself
            self.pages["history"].reload()
        summary = record.get("summary") or {}
        p50 = (summary.get("latency_ms") or {}).get("p50")
        text = f"Run {record['run_id'][:8]} {record['status']}"
        if p50 is not None:
            text += f": p50 {p50:.3g} ms"
            if summary.get("throughput_per_s") is not None:  # none when the worker was killed (a remote cancel)
                text += f", {summary['throughput_per_s']:.4g} samples/s"
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
        if self.paint_budget is not None:
            self.paint_budget.release()
        if self.pages.get("sweeps") is not None:
            self.pages["sweeps"].shutdown()
        if self._analyze_card is not None:
            self._analyze_card.shutdown()
        if self.confirm is not None:
            self.confirm.shutdown()  # its round measuring now is cancelled; nothing is stored
        if hasattr(self.pages.get("machine"), "shutdown"):
            self.pages["machine"].shutdown()  # its card measurement or noise check still under way
        if hasattr(self.pages.get("topology"), "shutdown"):
            self.pages["topology"].shutdown()  # a collectives run is cancelled (its worker stopped), a discovery dropped
        self.settings.save_window(self)
        if self.pages.get("run") is not None:
            self.settings.save_page_name(self.page_infos[self.tabs.currentIndex()].name)
            self.settings.save_form_values(self.run_page.form.values())
            for background in (self._discovery, self._inspection, self._cluster):
                if background is not None:
                    background.stop()
            if self.pages.get("system") is not None:
                self.pages["system"].close_feed()
        if self.workspace is not None:
            self.workspace.stop_telemetry()
            if self.workspace.pool is not None:
                self.workspace.pool.close()  # the spare workers go with the window
        super().closeEvent(event)


def _with_mnemonic(text: str, taken: set[str]) -> str:
    """`text` with an Alt-key mnemonic on its first letter no other entry of the menu uses yet."""
    for index, char in enumerate(text):
        if char.isalpha() and char.lower() not in taken:
            taken.add(char.lower())
            return f"{text[:index]}&{text[index:]}"
    return text
