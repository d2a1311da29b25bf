"""The Storage page: a tab per storage benchmark kind (feed, I/O sweep, checkpoint, cold start), each with its
form (the CLI's own flags: console.ui.storage_form), Run and Stop, a progress bar with the kind's progress text,
the kind's summary, and its chart. On open each tab shows the newest stored result of its kind.

A benchmark runs in a spawned worker (console.storage.launch), so torch and onnxruntime never enter the window's
process, and is stored through the window's history writer as a run (console.storage.runs) that the History page,
Compare and reports read like any other. It claims the workspace's one "measuring" state, so a model run, a sweep
or a machine card never measures at the same time as a storage benchmark. While it runs, the window's storage
telemetry (console/telemetry/diskstats, sampled by the window's hub) is kept and stored with the run.
"""

from __future__ import annotations

import contextlib
import importlib
import threading
import time
from typing import Any

from PySide6 import QtCore, QtGui, QtWidgets

from console.ui.pages import PageContext
from console.ui.storage_form import FormError, StorageForm
from console.ui.workspace import STORAGE
from widgets import theme

KINDS = ("feed", "sweep", "checkpoint", "coldstart")
TITLES = {"feed": "Feed accelerators", "sweep": "I/O sweep", "checkpoint": "Checkpoint", "coldstart": "Cold start"}
INTROS = {
    "feed": "How many emulated accelerators this storage path keeps busy for a training workload: AU = compute "
            "time / wall time (first step excluded), passing at the workload's threshold (MLPerf Storage).",
    "sweep": "Block size × queue depth × readers, sequential and random: MB/s, IOPS and latency per point; the "
             "knee is where more requests in flight stop paying.",
    "checkpoint": "Save (to fsync) and cold restore of a state dict per format; the slowest rank's time, the "
                  "lowest GB/s, and what a checkpoint costs a training job (Young's interval).",
    "coldstart": "Where a model file's cold start goes: read (mmap, buffered, O_DIRECT), deserialize, copy to "
                 "the device, first inference.",
}
STORED_SHOWN = 12  # stored results of a kind offered in its tab's "Show stored" list
RUN_SHORTCUT = "Ctrl+Return"  # on this page: run the open tab's benchmark (Esc stops it)


class KindTab(QtWidgets.QWidget):
    """One kind: form, Run/Stop, progress, summary text and chart."""

    sig_run = QtCore.Signal(str)
    sig_stop = QtCore.Signal(str)

    def __init__(self, kind: str, module: Any | None, problem: str | None, parent: QtWidgets.QWidget | None = None):
        super().__init__(parent)
        self.kind = kind
        self.form: StorageForm | None = None
        intro = QtWidgets.QLabel(INTROS.get(kind, ""))
        intro.setWordWrap(True)
        intro.setStyleSheet(f"color: {theme.MUTED};")
        left = QtWidgets.QVBoxLayout()
        left.addWidget(intro)
        if module is not None:
            try:
                self.form = StorageForm(kind, module)
            except Exception as exc:  # another kind's flags must not take the page down
                problem = f"its form could not be built ({type(exc).__name__}: {exc})"
        if self.form is not None:
            scroll = QtWidgets.QScrollArea()
            scroll.setWidgetResizable(True)
            scroll.setWidget(self.form)
            scroll.setFrameShape(QtWidgets.QFrame.Shape.NoFrame)
            left.addWidget(scroll, 1)
        else:
            missing = QtWidgets.QLabel(f"{TITLES.get(kind, kind)} is not available in this build: {problem}.")
            missing.setWordWrap(True)
            left.addWidget(missing, 1)
        self.run_button = QtWidgets.QPushButton("Run")
        self.run_button.setToolTip(f"run this benchmark in a worker and keep it in the history ({RUN_SHORTCUT})")
        self.run_button.setEnabled(self.form is not None)
        self.stop_button = QtWidgets.QPushButton("Stop")
        self.stop_button.setToolTip("stop the benchmark (Esc); it is stored as cancelled")
        self.stop_button.setEnabled(False)
        self.run_button.clicked.connect(lambda: self.sig_run.emit(kind))
        self.stop_button.clicked.connect(lambda: self.sig_stop.emit(kind))
        buttons = QtWidgets.QHBoxLayout()
        buttons.addWidget(self.run_button)
        buttons.addWidget(self.stop_button)
        buttons.addStretch(1)
        left.addLayout(buttons)
        self.progress = QtWidgets.QProgressBar()
        self.progress.setRange(0, 1000)
        self.progress.setValue(0)
        self.progress.setTextVisible(False)
        self.progress_text = QtWidgets.QLabel("")
        self.progress_text.setWordWrap(True)
        left.addWidget(self.progress)
        left.addWidget(self.progress_text)
        left.addStretch(0)
        self.stored = QtWidgets.QComboBox()
        self.stored.setToolTip("a stored result of this kind to show (newest first; completed runs)")
        self.stored.setSizeAdjustPolicy(QtWidgets.QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
        self.stored.setMinimumContentsLength(20)
        self.stored_runs: list[dict[str, Any]] = []
        shown = QtWidgets.QHBoxLayout()
        shown.addWidget(QtWidgets.QLabel("Show stored"))
        shown.addWidget(self.stored, 1)
        left.addLayout(shown)
        self.source = QtWidgets.QLabel("")
        self.source.setWordWrap(True)
        self.source.setStyleSheet(f"color: {theme.MUTED};")
        left.addWidget(self.source)
        self.summary = QtWidgets.QPlainTextEdit()
        self.summary.setReadOnly(True)
        self.summary.setLineWrapMode(QtWidgets.QPlainTextEdit.LineWrapMode.NoWrap)  # the kinds print tables
        self.summary.setFont(QtGui.QFontDatabase.systemFont(QtGui.QFontDatabase.SystemFont.FixedFont))
        self.summary.setPlaceholderText("The benchmark's summary appears here.")
        self.summary.setMinimumHeight(110)
        self.chart = _chart_for(kind)
        right = QtWidgets.QSplitter(QtCore.Qt.Orientation.Vertical)
        right.addWidget(self.chart)
        right.addWidget(self.summary)
        self.telemetry = _telemetry_plot()
        if self.telemetry is not None:
            right.addWidget(self.telemetry)
            self.telemetry.setVisible(False)  # shown once storage telemetry arrives (none in a bare VM's hub)
        right.setStretchFactor(0, 3)
        right.setStretchFactor(1, 2)
        right.setStretchFactor(2, 2)
        right.setChildrenCollapsible(False)
        left_box = QtWidgets.QWidget()
        left_box.setLayout(left)
        left_box.setMinimumWidth(380)
        left_box.setMaximumWidth(520)
        split = QtWidgets.QSplitter(QtCore.Qt.Orientation.Horizontal)
        split.addWidget(left_box)
        split.addWidget(right)
        split.setStretchFactor(0, 0)
        split.setStretchFactor(1, 1)
        split.setChildrenCollapsible(False)
        layout = QtWidgets.QVBoxLayout(self)
        layout.setContentsMargins(6, 6, 6, 6)
        layout.addWidget(split)

    def add_telemetry(self, rows: list[tuple], t0_ns: int, sources: list[dict[str, Any]] | None = None) -> None:
        """Storage telemetry rows onto the strip (shown once it has some); `sources`: the sampler's descriptions,
        whose storage source says why NVMe temperature is not available here (as the Run page does)."""
        if self.telemetry is None or not rows:
            return
        self.telemetry.add_rows(rows, t0_ns)
        if self.telemetry.has_data() and not self.telemetry.isVisible():
            self.telemetry.setVisible(True)
            storage = next((s for s in sources or [] if s.get("name") == "storage"), None)
            missing = (storage or {}).get("unavailable_metrics") or {}
            why = next((w for m, w in missing.items() if str(m).endswith(".temperature")), None)
            shown = any(str(row[2]).endswith(".temperature") for row in rows)
            if why and not shown:
                self.telemetry.set_unavailable({"temperature": why})

    def clear_telemetry(self) -> None:
        if self.telemetry is not None:
            self.telemetry.clear()
            self.telemetry.setVisible(False)

    def set_running(self, running: bool) -> None:
        self.run_button.setEnabled(not running and self.form is not None)
        self.stop_button.setEnabled(running)
        if self.form is not None:
            self.form.setEnabled(not running)

    def show_progress(self, update: dict[str, Any], elapsed_s: float) -> None:
        fraction = update.get("fraction")
        if isinstance(fraction, (int, float)) and 0 <= fraction <= 1:
            self.progress.setRange(0, 1000)
            self.progress.setValue(int(fraction * 1000))
        else:
            self.progress.setRange(0, 0)  # busy, no fraction known
        self.progress_text.setText(f"{update.get('text') or 'running'} ({elapsed_s:.0f} s)")

    def show_result(self, result: dict[str, Any] | None, lines: list[str], source: str) -> None:
        from console.storage.charts import chart_data

        self.summary.setPlainText("\n".join(lines))
        self.source.setText(source)
        data = chart_data(self.kind, result)
        if data is not None:
            self.chart.set_data(data)
        else:
            self.chart.clear()


class StoragePage(QtWidgets.QWidget):
    """The page; `run_kind(kind)` starts the open or named tab's benchmark (tests call it)."""

    sig_progress = QtCore.Signal(str, object)  # kind, progress update: from the worker's relay thread
    sig_finished = QtCore.Signal(str, object)  # kind, {"run_id", "status", "cause", "result", "options"}
    sig_stored = QtCore.Signal(str)  # run_id, once the run is in the history (the History page reloads)
    sig_error = QtCore.Signal(str, str)  # message, title: the window shows it
    sig_samples = QtCore.Signal(object)  # storage telemetry rows from the hub's thread, drawn on the GUI thread

    # ---- Public API
    def __init__(self, context: PageContext, run_kind: Any = None, kinds: dict[str, str] | None = None):
        super().__init__()
        from console.cli.storage_cmd import kind_module
        from console.ui.settings import Settings

        self._workspace = context.workspace
        self._launch = run_kind  # tests pass their own; None: console.storage.launch.run_kind
        self._kinds = kinds  # tests register their own kind table; None: engines.storage.KINDS
        self._settings = Settings()
        self._cancel: threading.Event | None = None
        self._running: str | None = None
        self._started = 0.0
        self._t0_ns = 0
        self.modules: dict[str, Any] = {}
        self.tabs = QtWidgets.QTabWidget()
        self.kind_tabs: dict[str, KindTab] = {}
        for kind in KINDS:
            module, problem = kind_module(kind)
            self.modules[kind] = module
            tab = KindTab(kind, module, problem)
            tab.sig_run.connect(self.run_kind)
            tab.sig_stop.connect(lambda _kind: self.stop())
            tab.stored.currentIndexChanged.connect(lambda index, kind=kind: self.show_stored(kind, index))
            self.kind_tabs[kind] = tab
            self.tabs.addTab(tab, TITLES[kind])
            if tab.form is not None:
                tab.form.set_values(self._settings.storage_form(kind))
        self.status = QtWidgets.QLabel("")
        self.status.setWordWrap(True)
        layout = QtWidgets.QVBoxLayout(self)
        layout.addWidget(self.tabs, 1)
        layout.addWidget(self.status)
        remembered = self._settings.storage_kind()
        if remembered in KINDS:
            self.tabs.setCurrentIndex(KINDS.index(remembered))
        self.tabs.currentChanged.connect(lambda index: self._settings.save_storage_kind(KINDS[index]))
        run = QtGui.QShortcut(QtGui.QKeySequence(RUN_SHORTCUT), self)
        run.setContext(QtCore.Qt.ShortcutContext.WidgetWithChildrenShortcut)
        run.activated.connect(lambda: self.run_kind(self.current_kind()))
        stop = QtGui.QShortcut(QtGui.QKeySequence("Esc"), self)
        stop.setContext(QtCore.Qt.ShortcutContext.WidgetWithChildrenShortcut)
        stop.activated.connect(self.stop)
        self.sig_progress.connect(self._progress)
        self.sig_finished.connect(self._finished)
        self.sig_samples.connect(self._draw_samples)
        if not self._workspace.usable:
            for tab in self.kind_tabs.values():
                tab.run_button.setEnabled(False)
            self.status.setText(f"The history cannot be opened, so nothing can be measured: "
                                f"{self._workspace.startup_error}")
        self.reload()

    def current_kind(self) -> str:
        return KINDS[self.tabs.currentIndex()]

    @property
    def running(self) -> str | None:
        """The kind running now, or None."""
        return self._running

    def reload(self) -> None:
        """List each kind's stored results (newest first) and show the newest; read on this thread (one query)."""
        from console.storage.runs import latest_results

        store = self._workspace.store
        if store is None:
            return
        try:
            found = latest_results(store, list(KINDS), per_kind=STORED_SHOWN)
        except Exception as exc:  # a history that cannot be read: say so, keep the page
            self.status.setText(f"Stored storage results could not be read: {exc}")
            return
        for kind, runs in found.items():
            tab = self.kind_tabs[kind]
            if self._running == kind:
                continue
            tab.stored_runs = runs
            tab.stored.blockSignals(True)
            tab.stored.clear()
            tab.stored.addItems([f"{run['run_id'][:8]} · {str(run['started_at'])[:16].replace('T', ' ')} · "
                                 f"{run['label']}" for run in runs])
            tab.stored.blockSignals(False)
            tab.stored.setEnabled(bool(runs))
            if runs:
                self.show_stored(kind, 0)
            else:
                tab.source.setText("No stored result of this kind yet.")

    def show_stored(self, kind: str, index: int) -> None:
        """Show the `index`-th stored result of `kind` (0: the newest)."""
        tab = self.kind_tabs[kind]
        if not 0 <= index < len(tab.stored_runs) or self._running == kind:
            return
        run = tab.stored_runs[index]
        if tab.stored.currentIndex() != index:
            tab.stored.setCurrentIndex(index)
        age = "Newest stored" if index == 0 else "Stored"
        tab.show_result(run["result"], self._lines(kind, run["result"]),
                        f"{age}: run {run['run_id'][:8]} · {run['label']} · started "
                        f"{str(run['started_at'])[:19].replace('T', ' ')} UTC")
        if self._workspace.store is not None:
            self._show_stored_telemetry(tab, self._workspace.store, run["run_id"])

    def _show_stored_telemetry(self, tab: KindTab, store: Any, run_id: str) -> None:
        """The storage telemetry stored with a run, on its own clock (nothing when none was kept)."""
        tab.clear_telemetry()
        if tab.telemetry is None:
            return
        rows = [(row["t_ns"], row["source"], row["metric"], row["value"], row["unit"], row["method"])
                for row in store.samples(run_id) if row.get("source") == "storage" and row.get("value") is not None]
        if rows:
            tab.add_telemetry(rows, min(row[0] for row in rows), self._hub_sources())

    def _hub_sources(self) -> list[dict[str, Any]]:
        hub = self._workspace.hub
        return list(getattr(hub, "sources", None) or []) if hub is not None else []

    def run_kind(self, kind: str | None = None) -> bool:
        """Start `kind`'s benchmark (default: the open tab's); False, with the reason shown, when it cannot."""
        kind = kind or self.current_kind()
        tab = self.kind_tabs[kind]
        if self._running is not None or tab.form is None or not self._workspace.usable:
            return False
        try:
            options = tab.form.options()
        except FormError as exc:
            tab.progress_text.setText(f"Not started: {exc}")
            return False
        if not self._workspace.claim_or_say(STORAGE, tab.progress_text.setText):
            return False
        self._settings.save_storage_form(kind, tab.form.values())
        self._running, self._started, self._t0_ns = kind, time.monotonic(), time.monotonic_ns()
        tab.clear_telemetry()
        self._cancel = threading.Event()
        tab.set_running(True)
        tab.summary.clear()
        tab.source.setText("Running: the chart shows the newest stored result until this run ends.")
        tab.show_progress({"text": "starting a worker", "fraction": None}, 0.0)
        self.status.setText(f"{TITLES[kind]}: running in a worker; the window stays responsive.")
        threading.Thread(target=self._work, args=(kind, options, self._cancel), name=f"storage-{kind}",
                         daemon=True).start()
        return True

    def stop(self) -> None:
        """Ask the running benchmark to stop (it is stored as cancelled)."""
        if self._cancel is not None:
            self._cancel.set()
            if self._running:
                self.kind_tabs[self._running].progress_text.setText("stopping…")

    def shutdown(self) -> None:
        """The window is closing: stop the benchmark (its worker and readers end with it)."""
        self.stop()

    # ---- Private API
    def _work(self, kind: str, options: dict[str, Any], cancel: threading.Event) -> None:
        """On a thread: run the kind in its worker, then store it through the window's writer."""
        from console.storage.launch import run_kind
        from console.storage.runs import store_outcome
        from console.storage.telemetry import StorageTelemetry

        launch = self._launch or run_kind
        extra = {"kinds": self._kinds} if self._kinds is not None else {}
        hub = self._workspace.hub
        watch = StorageTelemetry(hub, on_rows=self.sig_samples.emit) if hub is not None else None
        try:
            with watch if watch is not None else contextlib.nullcontext():
                outcome = launch(kind, options, on_progress=lambda update: self.sig_progress.emit(kind, update),
                                 cancel=cancel, **extra)
        except Exception as exc:  # the page must always hear back, or it would stay "running" for good
            from console.storage.launch import Outcome

            outcome = Outcome(kind, "failed", cause=f"the benchmark could not be run ({type(exc).__name__}: {exc})",
                              error_kind="raised")
        samples = watch.take() if watch is not None else []
        note = ({"dropped": watch.dropped} if watch is not None
                else {"problem": "the window samples no telemetry (its hub is off)"})
        record: dict[str, Any] = {"options": options, "outcome": outcome, "result": outcome.result}
        try:
            run_id, status, cause = store_outcome(self._workspace.writer, kind, options, outcome, samples=samples,
                                                  telemetry=note)
            record.update(run_id=run_id, status=status, cause=cause)
        except Exception as exc:  # the history refused it: the page says so, the result is still shown
            record.update(run_id=None, status="failed", cause=f"it could not be stored: {exc}")
        self.sig_finished.emit(kind, record)

    def _draw_samples(self, rows: list[tuple]) -> None:
        tab = self.kind_tabs.get(self._running or "")
        if tab is not None:
            tab.add_telemetry(rows, self._t0_ns, self._hub_sources())

    def _progress(self, kind: str, update: dict[str, Any]) -> None:
        if self._running == kind:
            self.kind_tabs[kind].show_progress(update, time.monotonic() - self._started)

    def _finished(self, kind: str, record: dict[str, Any]) -> None:
        self._workspace.release(STORAGE)
        self._running, self._cancel = None, None
        tab = self.kind_tabs[kind]
        tab.set_running(False)
        outcome = record["outcome"]
        status, run_id = record.get("status"), record.get("run_id")
        tab.progress.setRange(0, 1000)
        tab.progress.setValue(1000 if status == "completed" else tab.progress.value())
        took = f"{outcome.wall_s:.1f} s"
        where = f"run {run_id[:8]}" if run_id else "not stored"
        if status == "completed":
            tab.progress_text.setText(f"Completed in {took} · {where} in the history")
        else:
            tab.progress_text.setText(f"{str(status).capitalize()} after {took} · {where}: {record.get('cause')}")
        lines = self._lines(kind, record.get("result")) if record.get("result") else []
        if outcome.traceback and status != "completed":
            lines += ["", "Worker traceback (last lines):", *outcome.traceback.strip().splitlines()[-6:]]
        tab.show_result(record.get("result"), lines, f"This run: {where} · {status}")
        self.status.setText("")
        if status == "completed":  # the new run heads the stored list (its writer flushed before this signal)
            self.reload()
            tab.source.setText(f"This run: {where} · {status} (newest stored)")
        if run_id:
            self.sig_stored.emit(run_id)

    def _lines(self, kind: str, result: dict[str, Any] | None) -> list[str]:
        from console.cli.storage_cmd import text_lines_of

        module = self.modules.get(kind)
        if not result:
            return []
        if module is None:
            return [f"{name}: {value}" for name, value in (result.get("figures") or {}).items()]
        lines = text_lines_of(module, result)
        if result.get("method"):
            lines += ["", f"Method: {result['method']}"]
        return lines


def _chart_for(kind: str) -> QtWidgets.QWidget:
    if kind == "feed":
        from widgets.au_chart import AuChart

        return AuChart()
    if kind == "sweep":
        from widgets.io_heatmap import IoHeatmap

        return IoHeatmap()
    from widgets.stacked_stages import StackedStages

    return StackedStages("Cold start by read mode" if kind == "coldstart" else "Checkpoint save and restore")


def _telemetry_plot() -> QtWidgets.QWidget | None:
    """Engineer D's storage telemetry plot (widgets/storage_telemetry_plot.py) when this build has it."""
    try:
        module = importlib.import_module("widgets.storage_telemetry_plot")
    except ImportError:
        return None
    cls = getattr(module, "StorageTelemetryPlot", None)
    try:
        return cls() if cls is not None else None
    except Exception:  # a view that cannot be built here leaves the page without it
        return None
