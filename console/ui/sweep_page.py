"""The Sweeps page: set up a grid, run it point by point on a background thread, read the knee off two charts.

The model and the base setup (engine, target, precision, mode) come from the Run page's current values; the
fields here say which axes to sweep, comma-separated, and an empty field keeps the Run page's value. The sweep
runs on a plain thread (console.sweep.SweepRun drives RunSession, which is thread-safe); its events come back to
the GUI thread through a queued Qt signal. Past sweeps are read back from the history.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from PySide6 import QtCore, QtGui, QtWidgets

from console.history import HistoryError
from console.spec.build import SpecError, label_for
from console.sweep import (
    SweepError,
    SweepGrid,
    SweepRun,
    analyse,
    chart_data,
    impossible_lines,
    knee_text,
    record_from_history,
)
from console.ui.sweep_points import SweepPointsTable
from console.ui.workspace import SWEEP, Busy, Workspace
from widgets import theme
from widgets.sweep_chart import SweepChart

_FIELDS = (("batch", "Batch sizes", "1,2,4,8", "e.g. 1,2,4,8"),
           ("threads", "Threads", "", "engine default; e.g. 1,2,4"),
           ("precision", "Precisions", "", "Run page's; e.g. fp32,bf16"),
           ("engine", "Engines", "", "Run page's; e.g. torch,onnxruntime"),
           ("target", "Targets", "", "Run page's; e.g. cpu,cuda:0"),
           ("qps", "Request rates (queries/s)", "", "server scenario; e.g. 10,20,40"),
           ("on", "Lab nodes", "", "joined lab cluster; e.g. host=lab-a,host=lab-b"),
           ("ranks", "Ranks (DDP)", "", "training; e.g. 1,2,4 (a scaling curve)"),
           ("bucket_mb", "Gradient buckets (MB)", "", "with Ranks; e.g. 1,25,100"),
           ("grad_accum", "Gradient accumulation", "", "with Ranks; e.g. 1,2,4"),
           ("loader_workers", "Loader workers", "", "input-pipeline scenario; e.g. 0,2,4"))


class SweepPage(QtWidgets.QWidget):
    """Grid form, progress and past sweeps on the left; charts, knee and points table on the right."""

    sig_error = QtCore.Signal(str)
    sig_sweep_finished = QtCore.Signal(object)  # the sweep record
    sig_running = QtCore.Signal(bool)
    _relay = QtCore.Signal(object)  # emitted on the sweep's thread, delivered queued on the GUI thread
    # a point's phase and end events (emitted on the sweep's thread; connect queued): the window's paint budget
    # quiets the plots while a point measures, as it does for a run from the Run page
    sig_run_event = QtCore.Signal(object)

    # ---- Public API
    def __init__(self, workspace: Workspace | None = None, base_values: Callable[[], dict[str, Any]] | None = None,
                 targets: Callable[[], list[dict[str, Any]]] | None = None,
                 cluster_address: Callable[[], str] | None = None, parent: QtWidgets.QWidget | None = None, *,
                 is_code: Callable[[str], bool] | None = None, trusts_code: Callable[[str], bool] | None = None):
        """`workspace`: the history, how runs are measured, and the one measuring state shared with the Run page
        (None: a page that can only show sweeps it is given). `is_code(path)`: the model file is code (TorchScript,
        from its inspection); `trusts_code(path)`: the window's question, True when the user trusts it."""
        super().__init__(parent)
        self._workspace = workspace
        self._store = workspace.store if workspace else None
        self._writer = workspace.writer if workspace else None
        self._base_values = base_values or (lambda: {})
        self._targets = targets or (lambda: [])
        self._cluster_address = cluster_address or (lambda: "")  # a fleet sweep (the Lab nodes axis) needs one
        self._is_code = is_code or (lambda path: False)
        self._trusts_code = trusts_code or (lambda path: False)
        self._sweep: SweepRun | None = None
        self._thread: threading.Thread | None = None
        self._stop_clicks = 0
        self._points: list[dict[str, Any]] = []
        self._skipped: list[dict[str, Any]] = []
        self.record: dict[str, Any] | None = None
        self._relay.connect(self._deliver, QtCore.Qt.ConnectionType.QueuedConnection)
        self._build()
        self.set_running(False)

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def field(self, axis: str) -> QtWidgets.QLineEdit:
        return self._fields[axis]

    def set_fields(self, **texts: str) -> None:
        for axis, text in texts.items():
            self._fields[axis].setText(text)

    def start_sweep(self) -> bool:
        """Validate the grid (every point, before anything runs) and start it on a thread; False if refused."""
        if self.running:
            return False
        if self._writer is None:
            self._refuse("The history is not available, so a sweep cannot be recorded.")
            return False
        try:
            grid = SweepGrid.parse(**{axis: (edit.text().strip() or None) for axis, edit in self._fields.items()})
            base = self._base()
            remote_for = self._remote_for(grid, base)
            if isinstance(remote_for, str):
                self._refuse(remote_for)
                return False
            if not self._trusted(base):
                return False
            sweep = SweepRun(base, grid, self._writer, name=self.name_edit.text().strip(), on_point=self._relay.emit,
                             on_event=self._point_event,
                             targets=self._targets() or None, strict=False,
                             session_options=self._workspace.session_options(), remote_for=remote_for,
                             noise_floor=self._floor_provider())
        except SpecError as exc:
            self._refuse(f"The sweep was not started — {label_for(exc.field)}: {exc.detail}")
            return False
        except SweepError as exc:
            if exc.headline:
                self._refuse(f"{exc.headline}:\n" + "\n".join(impossible_lines(exc.impossible)))
            else:
                self._refuse(f"The sweep was not started — {exc}")
            return False
        try:
            self._workspace.claim(SWEEP)  # refused while a run measures: the two would measure each other
        except Busy as exc:
            self._refuse(str(exc))
            return False
        self._sweep, self._stop_clicks = sweep, 0
        self._error.hide()
        self._thread = threading.Thread(target=self._run, args=(sweep,), name="sweep", daemon=True)
        self.set_running(True)
        self._thread.start()
        return True

    def stop_sweep(self) -> None:
        """First Stop: after the current point. Second: the current run too (what it measured is kept)."""
        if self._sweep is None or not self.running:
            return
        self._stop_clicks += 1
        self._sweep.stop(now=self._stop_clicks > 1)
        self.stop_button.setText("Stop now")
        self.progress_label.setText(self.progress_label.text().split(" — stopping")[0] +
                                    (" — stopping now…" if self._stop_clicks > 1 else
                                     " — stopping after this point (Stop again: now)"))

    def shutdown(self, timeout: float = 15.0) -> None:
        """The window is closing: stop at once and wait for the current run to end and be stored."""
        if self.running and self._sweep is not None:
            self._sweep.stop(now=True)
            self._thread.join(timeout)

    def wait(self, timeout: float | None = None) -> bool:
        """Block until the sweep's thread ends (tests); True when it did."""
        if self._thread is not None:
            self._thread.join(timeout)
        return not self.running

    def set_running(self, running: bool) -> None:
        self.run_button.setEnabled(not running)
        self.stop_button.setEnabled(running)
        self.stop_button.setText("Stop")
        for edit in (*self._fields.values(), self.name_edit, self.duration):
            edit.setEnabled(not running)
        self.sweeps_list.setEnabled(not running)
        self.sig_running.emit(running)

    def reload(self) -> None:
        """Refill the list of past sweeps from the history and let go of what of the open sweep is gone (runs are
        deleted, and a sweep with its last one: the History page's Delete links here, console.ui.pages)."""
        self._refill_list()
        self._forget_deleted()

    def _refill_list(self) -> None:
        if self._store is None:
            return
        try:
            sweeps = self._store.list_sweeps(limit=200)
        except HistoryError as exc:
            self.sig_error.emit(str(exc))
            return
        self.sweeps_list.blockSignals(True)
        self.sweeps_list.clear()
        for sweep in sweeps:
            name = f" · {sweep['name']}" if sweep.get("name") else ""
            axes = "; ".join(f"{axis} {','.join('default' if v is None else str(v) for v in values)}"
                             for axis, values in (sweep.get("grid") or {}).items())
            model = (sweep.get("base") or {}).get("model", "")
            text = (f"{_local(sweep['created_at'])}{name}\n{sweep['status']} · {sweep['completed']}/{sweep['runs']} "
                    f"runs · {model}\n{axes}")
            item = QtWidgets.QListWidgetItem(text)
            item.setData(QtCore.Qt.ItemDataRole.UserRole, sweep["sweep_id"])
            item.setToolTip(f"sweep {sweep['sweep_id']}")
            item.setForeground(QtGui.QColor(theme.STATUS_COLORS.get(sweep["status"], theme.FOREGROUND)
                                            if sweep["status"] != "completed" else theme.FOREGROUND))
            self.sweeps_list.addItem(item)
        self.sweeps_list.blockSignals(False)

    def open_sweep(self, sweep_id: str) -> dict[str, Any] | None:
        """Read a past sweep back from the history and show it."""
        if self._store is None:
            return None
        try:
            sweep = self._store.get_sweep(sweep_id)  # a prefix of the id finds it too: its runs need the whole id
            runs = self._store.runs_of_sweep(sweep["sweep_id"]) if sweep else []
        except HistoryError as exc:
            self.sig_error.emit(str(exc))
            return None
        if sweep is None:
            self.sig_error.emit(f"sweep {sweep_id} is no longer in the history database")
            return None
        record = record_from_history(sweep, runs)
        self.show_record(record)
        return record

    def show_record(self, record: dict[str, Any]) -> None:
        """Show a sweep (finished, partial or read from history): table, charts, knee."""
        self.record = record
        self._points = list(record["points"])
        self.table.show_points(self._points, record.get("skipped", []))
        self.chart.set_data(chart_data(record))
        name = f" “{record['name']}”" if record.get("name") else ""
        self.knee_label.setText(f"Sweep {record['sweep_id'][:8]}{name} — {record['status']}. "
                                f"{knee_text(record.get('knee'), record.get('knee_axis'))[:1].upper()}"
                                f"{knee_text(record.get('knee'), record.get('knee_axis'))[1:]}.")
        self.knee_label.setToolTip(record.get("knee_rule", ""))

    # ---- Private API
    def _forget_deleted(self) -> None:
        """The open sweep read again when runs it showed were deleted (the rest shown), cleared when the sweep
        itself is gone; a sweep running now is left alone (its runs are being stored)."""
        if self._store is None or self.record is None or self.running:
            return
        sweep_id = self.record["sweep_id"]
        try:
            sweep = self._store.get_sweep(sweep_id)
            runs = self._store.runs_of_sweep(sweep_id) if sweep else []
        except HistoryError as exc:
            self.sig_error.emit(str(exc))
            return
        if sweep is None:
            self.record, self._points = None, []
            self.table.show_points([], [])
            self.chart.clear()
            self.knee_label.setText(f"Sweep {sweep_id[:8]} is no longer in the history: its runs were deleted.")
            self.knee_label.setToolTip("")
            return
        shown = {p.get("run_id") for p in self.record["points"] if p.get("run_id")}
        if shown - {run["run_id"] for run in runs}:  # some of the runs shown were deleted: show the rest
            self.show_record(record_from_history(sweep, runs))

    def _trusted(self, base: dict[str, Any]) -> bool:
        """A model file that is code runs only if the user says yes (the Run page's question): then every point
        of this sweep trusts it (`trust_code` in the base, this sweep only); No starts nothing."""
        from engines.spec import is_model_path

        model = base.get("model")
        if base.get("trust_code") or not is_model_path(model or "") or not self._is_code(model):
            return True
        if not self._trusts_code(model):
            self._refuse(f"The sweep was not started: {Path(model).name} is code (TorchScript) and was not "
                         "trusted. Run sweep again and answer Yes if you trust where it came from.")
            return False
        base["trust_code"] = True
        return True

    def _remote_for(self, grid: SweepGrid, base: dict[str, Any]) -> Any:
        """point → its node's RemoteRun factory for a fleet sweep (the Lab nodes axis); None for a sweep of this
        machine; a message when the axis is set but no lab cluster is joined (the grid checked the labels).
        Data-parallel points (Ranks) run here: with a lab cluster joined, Ray places their ranks on its nodes
        (`base` gets engine_options.torch.ranks_cluster), and Lab nodes, one node per point, is refused."""
        if grid.ranks or ((base.get("engine_options") or {}).get("torch") or {}).get("ranks") is not None:
            if grid.on:
                return ("The sweep was not started — Lab nodes runs each point on one node; with Ranks Ray "
                        "places the ranks on the joined cluster's nodes: clear Lab nodes")
            address = self._cluster_address()
            if address:
                engine_options = base.setdefault("engine_options", {})
                engine_options["torch"] = {**(engine_options.get("torch") or {}), "ranks_cluster": address}
            return None
        if not grid.on:
            return None
        address = self._cluster_address()
        if not address:
            return ("The sweep was not started — Lab nodes runs points on a lab cluster's nodes: connect to one "
                    "first (Run ▸ Connect to lab cluster…), or clear the field")
        import functools

        from console.cluster import parse_on
        from console.cluster.dispatch import RemoteRun

        return lambda point: functools.partial(RemoteRun, address=address, on=parse_on([point["on"]]))

    def _build(self) -> None:
        self.model_label = QtWidgets.QLabel()
        self.model_label.setWordWrap(True)
        self.model_label.setFont(theme.font(theme.BASE_PT))
        form = QtWidgets.QFormLayout()
        self._fields: dict[str, QtWidgets.QLineEdit] = {}
        for axis, label, default, hint in _FIELDS:
            edit = QtWidgets.QLineEdit(default)
            edit.setPlaceholderText(hint)
            edit.setObjectName(f"sweep_{axis}")
            edit.returnPressed.connect(self.start_sweep)
            self._fields[axis] = edit
            form.addRow(label, edit)
        self.duration = QtWidgets.QDoubleSpinBox()
        self.duration.setRange(0.1, 3600.0)
        self.duration.setDecimals(1)
        self.duration.setValue(2.0)
        self.duration.setSuffix(" s")
        form.addRow("Duration per point", self.duration)
        self.name_edit = QtWidgets.QLineEdit()
        self.name_edit.setPlaceholderText("optional")
        form.addRow("Name", self.name_edit)
        self.run_button = QtWidgets.QPushButton("Run sweep")
        self.stop_button = QtWidgets.QPushButton("Stop")
        self.run_button.clicked.connect(self.start_sweep)
        self.stop_button.clicked.connect(self.stop_sweep)
        buttons = QtWidgets.QHBoxLayout()
        buttons.addWidget(self.run_button)
        buttons.addWidget(self.stop_button)
        self._error = QtWidgets.QLabel()
        self._error.setWordWrap(True)
        self._error.setStyleSheet(f"color: {theme.STATUS_COLORS['failed']};")
        self._error.setTextInteractionFlags(QtCore.Qt.TextInteractionFlag.TextSelectableByMouse)
        self._error.hide()
        self.progress = QtWidgets.QProgressBar()
        self.progress.setFormat("point %v of %m")
        self.progress.setRange(0, 1)
        self.progress.setValue(0)
        self.progress.hide()  # until a sweep runs
        self.progress_label = QtWidgets.QLabel("No sweep running.")
        self.progress_label.setWordWrap(True)
        self.sweeps_list = QtWidgets.QListWidget()
        self.sweeps_list.setObjectName("past_sweeps")
        self.sweeps_list.setWordWrap(True)
        self.sweeps_list.setHorizontalScrollBarPolicy(QtCore.Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.sweeps_list.setAlternatingRowColors(True)
        self.sweeps_list.currentItemChanged.connect(self._picked)

        left = QtWidgets.QWidget()
        left_layout = QtWidgets.QVBoxLayout(left)
        title = QtWidgets.QLabel("Sweep")
        title.setFont(theme.font(theme.TITLE_PT, bold=True))
        left_layout.addWidget(title)
        left_layout.addWidget(self.model_label)
        left_layout.addLayout(form)
        left_layout.addLayout(buttons)
        left_layout.addWidget(self._error)
        left_layout.addWidget(self.progress)
        left_layout.addWidget(self.progress_label)
        past = QtWidgets.QLabel("Past sweeps")
        past.setFont(theme.font(theme.AXIS_LABEL_PT, bold=True))
        left_layout.addWidget(past)
        left_layout.addWidget(self.sweeps_list, 1)
        left.setMinimumWidth(340)
        left.setMaximumWidth(440)

        self.chart = SweepChart()
        self.knee_label = QtWidgets.QLabel("")
        self.knee_label.setWordWrap(True)
        self.knee_label.setFont(theme.font(theme.AXIS_LABEL_PT, bold=True))
        self.table = SweepPointsTable()
        lower = QtWidgets.QWidget()
        lower_layout = QtWidgets.QVBoxLayout(lower)
        lower_layout.setContentsMargins(0, 0, 0, 0)
        lower_layout.addWidget(self.knee_label)
        lower_layout.addWidget(self.table, 1)
        right = QtWidgets.QSplitter(QtCore.Qt.Orientation.Vertical)
        right.addWidget(self.chart)
        right.addWidget(lower)
        right.setStretchFactor(0, 3)
        right.setStretchFactor(1, 2)
        right.setSizes([520, 340])

        splitter = QtWidgets.QSplitter()
        splitter.addWidget(left)
        splitter.addWidget(right)
        splitter.setStretchFactor(1, 1)
        layout = QtWidgets.QHBoxLayout(self)
        layout.addWidget(splitter)
        self._show_base()

    def _floor_provider(self) -> Any:
        """The noise floor per target, asked on the sweep's thread before its first local point (the stored one,
        else a quick ~3-s measurement: console.machine.noise); None with a test's stand-in worker, which measures
        nothing real."""
        from console.machine.noise import noise_floor_for
        from engines.worker import worker_main

        if self._workspace is None or self._workspace.worker_entry is not worker_main:
            return None

        db = getattr(self._writer, "path", None)
        return lambda target: noise_floor_for(target, db)

    def _base(self) -> dict[str, Any]:
        """The Run page's whole setup (model inputs, scenario and engine options included), with this page's
        duration: what every point starts from, through the one spec builder."""
        from console.spec.build import spec_data

        values = {**(self._base_values() or {}), "duration_s": float(self.duration.value()), "warmup_s": 0.5,
                  "name": self.name_edit.text().strip() or None, "iterations": None}
        if self._fields["qps"].text().strip():
            values["scenario"] = "server"  # judged on its latency bound, not on stability: no until-stable
            values.pop("scenario_options.until_stable", None)
            values.pop("scenario_options.max_duration_s", None)
        return spec_data(values)

    def _show_base(self) -> None:
        values = self._base_values() or {}
        parts = [str(values.get(k)) for k in ("model", "engine", "target", "precision") if values.get(k)]
        self.model_label.setText("From the Run page: " + (" · ".join(parts) if parts else "mlp (default)") +
                                 ". Empty fields keep its values.")

    def showEvent(self, event: QtGui.QShowEvent) -> None:  # noqa: N802 — Qt override
        self._show_base()
        super().showEvent(event)

    def _refuse(self, message: str) -> None:
        self._error.setText(message)
        self._error.show()

    def _point_event(self, _index: int, event: dict[str, Any]) -> None:
        """On the sweep's thread: pass on only what the paint budget needs (never the latency batches)."""
        if event.get("type") in ("phase", "started", "finished"):
            self.sig_run_event.emit({"type": event["type"], "phase": event.get("phase")})

    def _run(self, sweep: SweepRun) -> None:
        try:
            sweep.run()
        except Exception as exc:  # noqa: BLE001 — reported on the page, never lost on a thread
            self._relay.emit({"type": "sweep_error", "message": f"{type(exc).__name__}: {exc}"})

    def _deliver(self, event: dict[str, Any]) -> None:
        kind = event["type"]
        if kind == "sweep_started":
            self._planned = event
            self._points = [{**p, "status": "queued", "run_id": None, "message": "", "throughput_per_s": None,
                             "latency_ms": {"p50": None, "p99": None}, "valid": False} for p in event["points"]]
            self.progress.setRange(0, event["total"])
            self.progress.setValue(0)
            self.progress.show()
            self.progress_label.setText(f"Sweep {event['sweep_id'][:8]}: {event['total']} points" +
                                        (f", {len(event['impossible'])} impossible ones skipped"
                                         if event["impossible"] else ""))
            self._skipped = [{**p, "status": "skipped"} for p in event["impossible"]]
            self.table.show_points(self._points, self._skipped)
            self.chart.clear()
            self.knee_label.setText("")
        elif kind == "point_started":
            self._points[event["index"]].update(status="running", run_id=event["run_id"])
            self.progress_label.setText(f"Point {event['index'] + 1} of {event['total']}: "
                                        f"{event['label'] or 'the point'}")
            self.table.show_points(self._points, self._skipped)
        elif kind == "point_finished":
            self._points[event["index"]] = event["result"]
            self.progress.setValue(event["index"] + 1)
            self.table.show_points(self._points, self._skipped)
            partial = {"points": self._points, "varying": self._sweep.grid.varying() if self._sweep else None,
                       "base": self._sweep.base if self._sweep else {}}
            partial.update(analyse(self._points, partial["varying"]))
            self.chart.set_data(chart_data(partial))
        elif kind == "sweep_finished":
            record = event["record"]
            self.progress.setValue(self.progress.maximum())
            self.progress_label.setText(f"Sweep {record['sweep_id'][:8]} {record['status']}.")
            self.show_record(record)
            self._finish()
            self._refill_list()  # the record just shown is this sweep's own: nothing of it was deleted
            self.sig_sweep_finished.emit(record)
        elif kind == "sweep_error":
            self._refuse(f"The sweep stopped: {event['message']}")
            self._finish()
            self._refill_list()

    def _finish(self) -> None:
        if self._thread is not None:
            self._thread.join(5.0)
        self._workspace.release(SWEEP)
        self.set_running(False)

    def _picked(self, item: QtWidgets.QListWidgetItem | None, _previous=None) -> None:
        if item is not None and not self.running:
            self.open_sweep(item.data(QtCore.Qt.ItemDataRole.UserRole))


def _local(iso: str) -> str:
    """Stored UTC → local 'YYYY-MM-DD HH:MM'."""
    from datetime import datetime

    try:
        return datetime.fromisoformat(iso.replace("Z", "+00:00")).astimezone().strftime("%Y-%m-%d %H:%M")
    except (AttributeError, ValueError):
        return str(iso)
