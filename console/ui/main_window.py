"""The main window: the pages of console.ui.pages as tabs, menus, shortcuts, remembered settings."""

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
from console.ui.settings import Settings

if TYPE_CHECKING:
    from console.history import HistoryStore
    from console.ui.run_controller import RunController
    from console.ui.workspace import Workspace

WARM_AFTER_MS = 2000  # the first spare worker is made once start-up's own work (pages, discovery) is done
DOCTOR_AFTER_MS = 3000  # the machine's noise check (Machine page) after start-up's work and after each run


class MainWindow(ClusterWindow, QtWidgets.QMainWindow):
    """Owns the pages; a run goes form → RunController → RunSession → worker and back as events."""

    # ---- Public API
    def __init__(self, db_path: Path):
        """The light shell: menus, a placeholder tab per page and the status bar; it imports nothing heavy, so it
        paints at once.

        `attach()` then builds the pages (pyqtgraph, SQLite, the runner) — right away for tests and the
        self-test, or just after the first paint when the app starts (see console.ui.app).
        """
        super().__init__()
        self.setWindowTitle(f"Lab Console — {db_path.name}")
        self.db_path = db_path
        self.workspace: Workspace | None = None
        self.controller: RunController | None = None
        self.paint_budget = None  # console.ui.paint_budget.PaintBudget, made with the controller by attach()
        self.settings = Settings()
        self.page_infos: list[pages.PageInfo] = list(pages.PAGES)
        self.pages: dict[str, QtWidgets.QWidget] = {}
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

    # The pages the window itself works with; None until `attach()` built them.
    @property
    def run_page(self):
        return self.pages.get("run")

    @property
    def history_page(self):
        return self.pages.get("history")

    @property
    def sweep_page(self):
        return self.pages.get("sweeps")

    @property
    def system_page(self):
        return self.pages.get("system")

    @property
    def store(self) -> HistoryStore | None:
        return self.workspace.store if self.workspace else None

    @property
    def startup_error(self) -> str:
        return self.workspace.startup_error if self.workspace else ""

    def page(self, name: str) -> QtWidgets.QWidget | None:
        return self.pages.get(name)

    def show_page(self, name: str) -> None:
        """Bring the page called `name` to the front (its placeholder, before `attach()`)."""
        self.tabs.setCurrentIndex(self._position(name))

    def attach(self, workspace: Workspace, discover_targets: bool = True) -> None:
        """Build the pages and connect the runner; a broken history gives pages that say why."""
        from console.ui.background import BackgroundCall
        from console.ui.paint_budget import PaintBudget
        from console.ui.run_controller import RunController

        self.workspace = workspace
        for action, shortcut in self._pending_shortcuts:
            action.setShortcut(QtGui.QKeySequence(shortcut))
        self._pending_shortcuts.clear()
        if workspace.usable:
            self.controller = RunController(workspace, parent=self)
        context = pages.PageContext(workspace, base_values=self._sweep_base, targets=lambda: self._targets,
                                    cluster_address=lambda: self._cluster.address if self._cluster else "",
                                    is_code=lambda path: bool(self._code_files.get(path)),
                                    trusts_code=self._trusts_code)
        for position, info in enumerate(self.page_infos):
            page = info.build(context)
            placeholder = self.tabs.widget(position)
            self.tabs.removeTab(position)
            self.tabs.insertTab(position, page, info.title)
            placeholder.deleteLater()
            self.pages[info.name] = page
            if hasattr(page, "sig_error"):
                page.sig_error.connect(self._show_error)
        self.show_page(self.settings.page_name([info.name for info in self.page_infos]))
        self._discovery = BackgroundCall(self)
        self._discovery.sig_done.connect(self._set_targets)
        self._discovery.sig_failed.connect(lambda text: self.status.showMessage(f"Target discovery failed: {text}"))
        self._inspection = BackgroundCall(self)
        self._inspection.sig_done.connect(self._show_model_inputs)
        self._inspection.sig_failed.connect(self._model_unreadable)
        self._attach_cluster(auto=discover_targets)
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
        self.run_page.sig_analyze_requested.connect(self.analyze_run)
        self.run_page.machine_card = self._machine_card
        self.run_page.sig_stop_requested.connect(self.stop_run)
        self._attach_doctor(auto=discover_targets)
        self.sweep_page.sig_sweep_finished.connect(lambda _record: self.history_page.reload())
        if hasattr(self.pages.get("storage"), "sig_stored"):  # a stored storage benchmark is a run too
            self.pages["storage"].sig_stored.connect(lambda _run_id: self.history_page.reload())
        self.history_page.sig_sweep_activated.connect(self.open_sweep)
        self.history_page.sig_compare_requested.connect(self.compare_runs)
        self.history_page.sig_rerun_requested.connect(self.rerun)
        self.history_page.sig_report_requested.connect(self.report_runs)
        self.history_page.sig_runs_deleted.connect(self._runs_deleted)
        self.sweep_page.reload()
        if self.controller is not None:
            self.controller.sig_event.connect(self.run_page.handle)
            self.controller.sig_finished.connect(self._run_finished)
            # the quick noise floor measured before a run when none is stored (console.ui.run_controller)
            self.controller.sig_preparing.connect(lambda text: text and self.status.showMessage(text))
            # Paint less while a run measures; connected after the pages, so the catch-up sees their final state.
            self.paint_budget = PaintBudget(self.settings.paint_rates(), workspace.telemetry_hz, parent=self)
            self.controller.sig_event.connect(self.paint_budget.handle)
            self.sweep_page.sig_run_event.connect(self.paint_budget.handle, QtCore.Qt.ConnectionType.QueuedConnection)
        self._attach_confirm()
        self.history_page.reload()
        if workspace.startup_error:
            error = workspace.startup_error
            self.run_page.form.setEnabled(False)
            self.run_page.progress.finish("failed", error)
            QtCore.QTimer.singleShot(0, lambda: self._show_error(error, "History database problem"))
        if discover_targets:
            self.refresh_targets(refresh=False)
        self._inspect_current_model()
        if workspace.pool is not None:  # after start-up's own work: a spare for the engine the form has
            engine = self.run_page.form.values().get("engine") or "torch"
            QtCore.QTimer.singleShot(WARM_AFTER_MS, lambda: self.workspace.measuring is None
                                     and workspace.pool.prepare(engine))

    def start_run(self, values: dict[str, Any] | None = None) -> str | None:
        """Validate the form and start a run; a bad field is named in a dialog, nothing is spawned."""
        if not self._free_to_run():
            return None
        from console.specs import SpecError, build_spec, label_for, window_values
        from engines.spec import is_model_path

        values = dict(values or self.run_page.form.values())
        self.settings.save_form_values(values)
        values = window_values(values)  # Iterations set: the until-stable default gives way
        values, remote = self._remote_choice(values)  # a `node/target` choice runs on that lab node
        inputs, input_values = self.run_page.inputs.values()
        missing = self.run_page.inputs.errors() if is_model_path(values.get("model") or "") else []
        if missing:
            self._show_error("The run was not started: " + "; ".join(missing) + ".", "Model inputs needed")
            return None
        try:
            spec = build_spec({**values, "inputs": inputs, "input_values": input_values})
        except SpecError as exc:
            self._show_error(f"The run was not started: {label_for(exc.field)}: {exc.detail}", "Invalid run setup")
            return None
        refused = self._place_ranks(spec, remote)  # Ranks with a joined lab cluster: Ray places them
        if refused:
            self._show_error(f"The run was not started: {refused}.", "Invalid run setup")
            return None
        if not self._confirm_code(spec, spec.trust_code):
            return None
        return self._start_spec(spec, remote=remote)

    def _place_ranks(self, spec, remote) -> str:
        """A data-parallel run (Ranks > 1) with a lab cluster joined: Ray places its ranks on the cluster's nodes
        and the worker stays here (engine_options.torch.ranks_cluster, as `run --ranks N --cluster`); a lab
        node's target runs a whole run on that node, which a run over many nodes is not: refused, saying why."""
        import dataclasses

        options = spec.options_for("torch")
        if getattr(options, "ranks", None) is None:
            return ""
        if remote is not None:
            return ("a lab node's target runs a whole run on that node; with Ranks Ray places the ranks on the "
                    "joined cluster's nodes: pick a target of this machine")
        address = self._cluster.address if self._cluster is not None else ""
        if address and options.ranks > 1:
            spec.engine_options["torch"] = dataclasses.replace(options, ranks_cluster=address)
        return ""

    def _free_to_run(self) -> bool:
        """A run may start: the history is usable and nothing measures (else the reason is shown)."""
        if self.controller is None:
            return False
        from console.ui.workspace import RUN, Busy

        try:
            self.workspace.check_free(RUN)
        except Busy as exc:
            self._show_error(str(exc), exc.title)
            return False
        return True

    def _confirm_code(self, spec, is_code: bool) -> bool:
        """A model file that is code (its inspection said so, or `is_code`) runs only when the user says Yes now;
        `spec.trust_code` is then set for this run only — never taken from the form or a stored spec."""
        spec.trust_code = False
        if not (spec.is_file and (is_code or self._code_files.get(spec.model))):
            return True
        if not self._trusts_code(spec.model):
            self.status.showMessage(f"Not started: {Path(spec.model).name} is code and was not trusted")
            return False
        spec.trust_code = True
        return True

    def _trusts_code(self, path: str) -> bool:
        """Ask before running a model file that is code (TorchScript): why it is code, what the sandbox does."""
        from engines.sandbox import available

        abi, why = available()
        confined = (f"The worker that runs it is sandboxed here (Landlock ABI {abi}): it can write only in its own "
                    "temporary folder and cannot open TCP connections; it can still read your files."
                    if abi else f"This machine offers no sandbox ({why}): it would run with all your rights.")
        text = (f"{Path(path).name} is TorchScript, and TorchScript is code: its forward and __setstate__ run as "
                "whoever made the file wrote them, and can create and write files.\n\n"
                f"{confined}\n\nRun it only if you trust where it came from. Run it this time?")
        buttons = QtWidgets.QMessageBox.StandardButton
        answer = QtWidgets.QMessageBox.question(self, "This model file is code", text, buttons.Yes | buttons.No,
                                                buttons.No)
        return answer == buttons.Yes

    def rerun(self, spec_data: dict[str, Any]) -> str | None:
        """Run a stored spec again (the History page's Re-run): the same path as the Run page's runs, refused
        while anything measures."""
        if not self._free_to_run():
            return None
        from engines.spec import RunSpec, SpecError

        try:
            spec = RunSpec.from_dict(dict(spec_data)).validate()
        except (SpecError, TypeError, ValueError) as exc:
            self._show_error(f"The stored setup cannot be run again: {exc}", "Cannot re-run")
            return None
        # a stored run that trusted its file (perhaps a colleague's, imported) is asked about again
        if not self._confirm_code(spec, spec.trust_code):
            return None
        return self._start_spec(spec, "re-run")

    def _start_spec(self, spec, what: str = "started", remote=None) -> str | None:
        from console.analysis.rules_file import RulesError
        from console.specs import SpecError, label_for

        try:
            run_id = self.controller.start(spec, remote=remote)
        except SpecError as exc:
            self._show_error(f"The run was not started: {label_for(exc.field)}: {exc.detail}", "Invalid run setup")
            return None
        except RulesError as exc:  # the lab's rules.toml in the data folder cannot be used
            self._show_error(f"The run was not started: the validity rules file {exc}", "Validity rules")
            return None
        except RuntimeError as exc:
            self._show_error(str(exc), "Run in progress")
            return None
        self.show_page("run")
        self.status.showMessage(f"Run {run_id[:8]} {what}: {spec.label()}" + (f" on {self.run_page.form.values().get('target')}" if remote else ""))
        return run_id

    def compare_runs(self, run_ids: list[str]) -> None:
        """Open the Compare page on these runs (the History page's Compare)."""
        page = self.page("compare")
        if page is None:
            return
        self.show_page("compare")
        page.compare(run_ids)

    def analyze_run(self, values: dict[str, Any] | None = None) -> str | None:
        """Start a run that is profiled after its timed measurement: the op table appears on the Run page.

        As `labconsole analyze` does, this host's machine card for the target comes first — measured in the
        background when none is stored (console.ui.analyze_card), so the verdict stored with the run is judged
        against roofs. The run id, or None when nothing started yet (the run starts once the card is there)."""
        from console.analysis.profile_view import PROFILE_ITERATIONS
        from console.specs import SpecError, build_spec, window_values
        from console.ui.workspace import MACHINE

        if self.run_page is None or self.controller is None:
            return None
        # a card being measured on the Machine page is waited for; anything else measuring refuses, as for a run
        if self.workspace.measuring != MACHINE and not self._free_to_run():
            return None
        values = window_values(values or self.run_page.form.values())
        values.setdefault("profile_iterations", PROFILE_ITERATIONS)
        local, remote = self._remote_choice(values)
        try:
            build_spec(local)
            valid = True
        except SpecError:
            valid = False
        if remote or not valid:  # a bad field is named now, not after minutes of measuring; a lab node's card
            return self.start_run(values)  # is the node's (the session judges a remote run without one)
        if self._analyze_card is None:
            from console.ui.analyze_card import CardBeforeAnalyze

            self._analyze_card = CardBeforeAnalyze(self.workspace, self.db_path, self.run_page.progress,
                                                   self.run_page.form.set_running, self.status.showMessage,
                                                   parent=self)
        return self._analyze_card.then(str(local.get("target") or "cpu"), lambda: self.start_run(values))

    def _machine_card(self, target: str) -> dict[str, Any] | None:
        """This host's stored machine card for the target (roofs for the op table); None when none is stored."""
        from console.history import HistoryError
        from console.machine import newest_card

        try:
            return newest_card(self.store, target) if self.store is not None else None
        except HistoryError:
            return None

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
        if self.tabs.currentWidget() is self.sweep_page and (getattr(self.sweep_page, "record", None) or {}).get(
                "sweep_id"):
            return self.report_runs([], self.sweep_page.record["sweep_id"])
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

    def stop_run(self) -> None:
        if self._analyze_card is not None and self._analyze_card.cancel():  # Analyze still waits for its card
            self.status.showMessage("Analyze cancelled before its run started")
            return
        if self.confirm is not None and self.confirm.cancel():  # a verdict's confirmation rounds
            self.status.showMessage("Cancelling the confirmation… (the round measuring now is stopped)")
            return
        if self.controller is not None and self.controller.busy:
            self.controller.stop()
            self.status.showMessage("Stopping… (the worker stops between iterations)")

    def confirm_verdict(self) -> bool:
        """Run ▸ Confirm verdict: confirm the run the History page shows when it is in front, else the Run
        page's (console.ui.confirm_action); False when nothing started (the reason is in the status bar)."""
        if self.confirm is None:
            return False
        history = self.tabs.currentWidget() is self.history_page and self.history_page.opened_run_id
        return self.confirm.confirm("history" if history else "run")

    def _attach_confirm(self) -> None:
        """The Confirm action beside the verdict, on the Run page (the run just finished) and the History page
        (the run opened): the rounds run on the window's core partition, never beside a run or a sweep."""
        from console.ui.confirm_action import ConfirmAction

        self.confirm = ConfirmAction(self.workspace, card=self._machine_card, trusts_code=self._trusts_code,
                                     max_rounds=self.settings.confirm_rounds(), say=self.status.showMessage,
                                     parent=self)
        self.confirm.sig_rounds_changed.connect(self.settings.save_confirm_rounds)
        self.confirm.bind("run", self.run_page.confirm_panel)
        self.confirm.bind("history", self.history_page.confirm_panel)
        self.history_page.sig_run_opened.connect(lambda run: self.confirm.show("history", run))
        self.confirm.sig_stored.connect(lambda _run_id: self.history_page.reload())
        if self.controller is not None:
            self.controller.sig_event.connect(self._confirm_follows_run)

    def _confirm_follows_run(self, event: dict[str, Any]) -> None:
        """The Run page's panel belongs to the run it shows: hidden when a run starts, its verdict's once done."""
        kind = event.get("type")
        if kind == "started":
            self.confirm.show("run", None)
        elif kind == "finished":
            self.confirm.show("run", event)
        elif kind == "phase":
            self.confirm.refresh()

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
        self._action(view, "Re&load history", "F5", lambda: self.history_page and self.history_page.reload())
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

    def refresh_targets(self, refresh: bool = True) -> None:
        """Find targets in the background (cached per host unless `refresh`)."""
        from console.targets import discover_targets

        self.status.showMessage("Discovering targets…" if refresh else self.status.currentMessage())
        self._discovery.start(discover_targets, refresh)
        if refresh and self._cluster is not None and self._cluster.address:
            self._cluster.connect_to(self._cluster.address)  # the nodes' targets too

    def open_model_dialog(self) -> None:
        from engines import backends

        path, _ = QtWidgets.QFileDialog.getOpenFileName(
            self, "Open model file", str(Path(self._model_files[0]).parent) if self._model_files else "",
            f"Model files ({' '.join('*' + ext for ext in backends.file_engines())});;All files (*)")
        if path:
            self.add_model_file(path)

    def add_model_file(self, path: str) -> bool:
        """Offer a model file in the model list and select it; a file type we refuse is explained, not added."""
        from engines import backends
        from engines.spec import RunSpec, SpecError

        path = str(Path(path).resolve())
        # the backend that reads this file type (an unknown type is refused by validate, whatever the engine)
        engine = backends.file_engines().get(Path(path).suffix.lower(), backends.names()[0])
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
            self.show_page("run")
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
        self.run_page.form.set_choices("target", target_choices(self._all_targets()))
        self.run_page.form.set_values({"target": current})
        self._refresh_choices()
        cached = targets[0].get("cached_at") if targets else None
        self.status.showMessage(f"{sum(t['available'] for t in targets)} of {len(targets)} targets usable"
                                + (f" (cached {cached}; Run ▸ Refresh targets to rediscover)" if cached else ""))

    def _choice_changed(self, field: str, _value: str) -> None:
        if field in ("model", "engine", "target", "scenario") and not self._updating_choices:
            self._refresh_choices()
        if field == "model":
            self._inspect_current_model()

    def _refresh_choices(self) -> None:
        """Offer only the engines, precisions, modes and scenarios usable for this model on this target, and
        the options of the chosen scenario and engine (from their plug-ins)."""
        import dataclasses

        from console.choices import engine_choices, mode_choices, precision_choices, scenario_choices
        from console.specs import engine_fields, form_field, scenario_fields
        from engines import backends

        form = self.run_page.form
        self._updating_choices = True
        try:
            values = form.values()
            target = next((t for t in self._all_targets() if t["id"] == values["target"]), None)
            form.set_choices("engine", engine_choices(backends.names(), values["model"], target))
            engine = form.values()["engine"]
            form.set_choices("precision", precision_choices(engine, target))
            form.set_choices("mode", mode_choices(engine, values["model"]))
            form.set_choices("scenario", scenario_choices(values["model"]))
            scenario = form.values()["scenario"]
            form.set_option_fields(
                scenario=[form_field(f) for f in scenario_fields(scenario)] if scenario else [],
                engine=[dataclasses.asdict(f) for f in engine_fields(engine)] if engine else [])
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
        self._code_files[info["path"]] = bool(info.get("runs_code"))
        self.status.showMessage(f"{Path(info['path']).name}: {info.get('format', '')}, "
                                f"{len(info.get('inputs') or [])} inputs, sha256 {str(info.get('sha256', ''))[:12]}…")

    def _model_unreadable(self, message: str) -> None:
        self.run_page.inputs.clear()
        self._show_error(f"Cannot read the model file: {message}", "Model file problem")

    def open_sweep(self, sweep_id: str) -> None:
        """Show a past sweep on the Sweeps page (picked on the History page)."""
        self.show_page("sweeps")
        self.sweep_page.open_sweep(sweep_id)

    def _position(self, name: str) -> int:
        for position, info in enumerate(self.page_infos):
            if info.name == name:
                return position
        raise KeyError(f"no page called {name!r}; pages: {', '.join(i.name for i in self.page_infos)}")

    def _runs_deleted(self, _run_ids: list) -> None:
        """The pages that list stored runs read the history again, so none offers a run that is gone."""
        for name in ("sweeps", "storage", "scaling"):
            page = self.pages.get(name)
            if page is not None and hasattr(page, "reload"):
                page.reload()

    def _attach_doctor(self, auto: bool) -> None:
        """The Machine page's noise check (engines.doctor, on a thread) feeds the Run page's banner, which warns
        before a run when something is badly off; checked after start-up and after each run (`auto`; tests that
        build a window without background work leave it off)."""
        machine = self.pages.get("machine")
        if machine is None or not hasattr(machine, "sig_doctor_report"):
            return
        machine.sig_doctor_report.connect(self.run_page.noise_banner.set_report)
        self.run_page.noise_banner.sig_details_requested.connect(lambda: self.show_page("machine"))
        self._doctor_auto = auto
        self._check_machine_later()

    def _check_machine_later(self) -> None:
        machine = self.pages.get("machine")
        if getattr(self, "_doctor_auto", False) and machine is not None and self.workspace.usable:
            QtCore.QTimer.singleShot(DOCTOR_AFTER_MS, machine,
                                     lambda: self.workspace.measuring is None and machine.check_machine())

    def _run_finished(self, record: dict[str, Any]) -> None:
        self._check_machine_later()
        self.history_page.reload()
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
        if self.sweep_page is not None:
            self.sweep_page.shutdown()
        if self._analyze_card is not None:
            self._analyze_card.shutdown()
        if self.confirm is not None:
            self.confirm.shutdown()  # its round measuring now is cancelled; nothing is stored
        if hasattr(self.pages.get("machine"), "shutdown"):
            self.pages["machine"].shutdown()  # its card measurement or noise check still under way
        if hasattr(self.pages.get("topology"), "shutdown"):
            self.pages["topology"].shutdown()  # a collectives run is cancelled (its worker stopped), a discovery dropped
        self.settings.save_window(self)
        if self.run_page is not None:
            self.settings.save_page_name(self.page_infos[self.tabs.currentIndex()].name)
            self.settings.save_form_values(self.run_page.form.values())
            for background in (self._discovery, self._inspection, self._cluster):
                if background is not None:
                    background.stop()
            if self.system_page is not None:
                self.system_page.close_feed()
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
