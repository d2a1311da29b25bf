"""The Scaling page: how data-parallel training scales — E(N) per rank count with its interval (one curve per knob
value of a sweep), the scaling waterfall of the chosen N (ideal → measured step, by part), the straggler it names
and the all-reduce time predicted from busbw against the one measured.

Everything it shows is read from the history (console.scaling.series) on a worker thread through the page's own
read-only connection; nothing here imports torch. While something measures (a run, a sweep …) the page does not
read or paint: it says so and catches up once the measurement has ended, so the window does not compete with the
ranks for the CPU.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from PySide6 import QtCore, QtWidgets

from console.scaling.texts import point_text, prediction_text, straggler_text
from console.ui.background import BackgroundCall
from console.ui.pages import PageContext
from widgets.scaling_curve import ScalingCurve
from widgets.scaling_waterfall import ScalingWaterfall

ENTRIES_SHOWN = 30  # newest scaling sweeps and runs offered in the picker
RUNS_READ = 400  # newest completed runs looked through for data-parallel ones
WAIT_MS = 2000  # how often a deferred read checks whether the measurement has ended
EMPTY_TEXT = ("No scaling run in the history yet. Make a scaling sweep: `labconsole sweep --mode training --ranks 1,2 "
              "--model mlp` (E(N) needs the same spec at 1 rank), or one run with `labconsole run --mode training "
              "--ranks 2` and the same with --ranks 1.")


# ---- Reads (on the worker thread; each opens and closes its own read-only store)
def list_entries(db_path: Any) -> list[dict[str, Any]]:
    """The newest sweeps with a `ranks` axis and the newest completed runs on 2 or more ranks outside a sweep, as
    picker entries {"kind": "sweep" | "run", "id", "label"} (sweeps first, newest first)."""
    from console.history import open_reader
    from console.scaling.efficiency import ranks_of, scaling_of

    store = open_reader(db_path)
    try:
        entries = []
        for sweep in store.list_sweeps(limit=200):
            ranks = (sweep.get("grid") or {}).get("ranks")
            if not ranks:
                continue
            others = ", ".join(f"{axis} {','.join(map(str, values))}" for axis, values in (sweep["grid"]).items()
                               if axis != "ranks" and isinstance(values, list) and len(values) > 1)
            label = (f"sweep {sweep['sweep_id'][:8]} · ranks {','.join(map(str, ranks))}"
                     f"{' × ' + others if others else ''} · {sweep.get('completed', 0)}/{sweep.get('runs', 0)} "
                     f"completed · {str(sweep.get('created_at') or '')[:16]}")
            entries.append({"kind": "sweep", "id": sweep["sweep_id"], "label": label})
            if len(entries) >= ENTRIES_SHOWN:
                break
        runs = [run for run in store.list_runs(limit=RUNS_READ, status="completed")  # a sweep's runs: by its entry
                if (ranks_of(run) or 0) >= 2 and not run.get("sweep_id")]
        for run in runs[:ENTRIES_SHOWN]:
            model = (run.get("spec") or {}).get("model", "?")
            entries.append({"kind": "run", "id": run["run_id"],
                            "label": f"run {run['run_id'][:8]} · {model} · {ranks_of(run)} ranks "
                                     f"{scaling_of(run)} · {str(run.get('started_at') or '')[:16]}"})
        return entries
    finally:
        store.close()


def read_series(db_path: Any, kind: str, ident: str, waterfall: Any = None) -> dict[str, Any]:
    """console.scaling.series of a sweep or a run, read through a read-only store (`waterfall`: see series)."""
    from console.history import open_reader
    from console.scaling import series

    store = open_reader(db_path)
    try:
        if kind == "sweep":
            return series(store, sweep_id=ident, waterfall=waterfall)
        return series(store, run_id=ident, waterfall=waterfall)
    finally:
        store.close()


class ScalingPage(QtWidgets.QWidget):
    sig_series_shown = QtCore.Signal(object)  # the series drawn (after a read finished)

    def __init__(self, context: PageContext,
                 entries_reader: Callable[[Any], list[dict[str, Any]]] = list_entries,
                 series_reader: Callable[[Any, str, str], dict[str, Any]] = read_series):
        super().__init__()
        self._workspace = context.workspace
        self._entries_reader, self._series_reader = entries_reader, series_reader
        self.entries: list[dict[str, Any]] = []
        self.series: dict[str, Any] | None = None
        self.point: dict[str, Any] | None = None
        self._pending: dict[str, Any] = {}  # what is being read: "entries" → True, "series" → (kind, id)
        self._shown_key: tuple[str, str] | None = None  # the entry whose series is drawn
        self._wait = QtCore.QTimer(self)
        self._wait.setInterval(WAIT_MS)
        self._wait.timeout.connect(self._retry)

        self.picker = QtWidgets.QListWidget()
        self.picker.setToolTip("newest scaling sweeps (a --ranks axis) and data-parallel runs")
        self.picker.setWordWrap(True)
        self.picker.currentRowChanged.connect(self.show_entry)
        self.refresh_button = QtWidgets.QPushButton("Refresh")
        self.refresh_button.setToolTip("read the history again")
        self.refresh_button.clicked.connect(self.reload)
        self.message = QtWidgets.QLabel("The history is read when this page is first shown.")
        self.message.setWordWrap(True)
        self.message.setTextInteractionFlags(QtCore.Qt.TextInteractionFlag.TextSelectableByMouse)
        self.figures = QtWidgets.QLabel("")
        self.figures.setWordWrap(True)
        self.figures.setTextInteractionFlags(QtCore.Qt.TextInteractionFlag.TextSelectableByMouse)
        left = QtWidgets.QVBoxLayout()
        head = QtWidgets.QHBoxLayout()
        head.addWidget(QtWidgets.QLabel("Series"), 1)
        head.addWidget(self.refresh_button)
        left.addLayout(head)
        left.addWidget(self.picker, 2)
        left.addWidget(self.message)
        left.addWidget(self.figures, 1)
        left_box = QtWidgets.QWidget()
        left_box.setLayout(left)
        left_box.setMinimumWidth(260)
        left_box.setMaximumWidth(380)

        self.curve = ScalingCurve()
        self.curve.sig_point_selected.connect(self._point_selected)
        self.levers = QtWidgets.QLabel("")
        self.levers.setWordWrap(True)
        self.waterfall = ScalingWaterfall()
        self.straggler = QtWidgets.QLabel("")
        self.straggler.setWordWrap(True)
        self.prediction = QtWidgets.QLabel("")
        self.prediction.setWordWrap(True)
        top = QtWidgets.QWidget()
        top_layout = QtWidgets.QVBoxLayout(top)
        top_layout.setContentsMargins(0, 0, 0, 0)
        top_layout.addWidget(self.curve, 1)
        top_layout.addWidget(self.levers)
        bottom = QtWidgets.QWidget()
        bottom_layout = QtWidgets.QVBoxLayout(bottom)
        bottom_layout.setContentsMargins(0, 0, 0, 0)
        bottom_layout.addWidget(self.waterfall, 1)
        bottom_layout.addWidget(self.straggler)
        bottom_layout.addWidget(self.prediction)
        charts = QtWidgets.QSplitter(QtCore.Qt.Orientation.Vertical)
        charts.addWidget(top)
        charts.addWidget(bottom)
        charts.setChildrenCollapsible(False)
        charts.setSizes([330, 370])
        split = QtWidgets.QSplitter(QtCore.Qt.Orientation.Horizontal)
        split.addWidget(left_box)
        split.addWidget(charts)
        split.setStretchFactor(1, 1)
        split.setChildrenCollapsible(False)
        split.setSizes([300, 1000])
        layout = QtWidgets.QVBoxLayout(self)
        layout.setContentsMargins(6, 6, 6, 6)
        layout.addWidget(split, 1)
        self.curve.clear("No scaling series shown.")
        self.waterfall.clear("Click a point of the curve for its waterfall.")
        if not self._workspace.usable:
            self.refresh_button.setEnabled(False)
            self.message.setText(f"The history cannot be opened: {self._workspace.startup_error}")

    # ---- Public API
    def reload(self) -> bool:
        """Read the picker's entries on a thread (and then the chosen series); False when that must wait (a
        measurement is under way: it is read when that ends) or a read is already under way."""
        if not self._workspace.usable or "entries" in self._pending:
            return False
        if self._workspace.measuring is not None:
            self.message.setText(f"A {self._workspace.measuring} is measuring: this page reads the history when it "
                                 "has ended, so the window does not compete with it for the CPU.")
            self._wait.start()
            return False
        self._wait.stop()
        self.message.setText("Reading the history…")
        self._pending["entries"] = True
        call = BackgroundCall(self)
        call.sig_done.connect(self._entries_read)
        call.sig_failed.connect(lambda text: self._read_failed("entries", text))
        call.start(self._entries_reader, self._workspace.db_path)
        return True

    @property
    def busy(self) -> bool:
        return bool(self._pending)

    def show_entry(self, index: int) -> None:
        """Read and draw the `index`-th entry's series (on a thread)."""
        if not 0 <= index < len(self.entries):
            return
        entry = self.entries[index]
        key = (entry["kind"], entry["id"])
        self._pending["series"] = key
        self.message.setText(f"Reading {entry['kind']} {entry['id'][:8]}…")
        call = BackgroundCall(self)
        call.sig_done.connect(lambda data, key=key: self._series_read(key, data))
        call.sig_failed.connect(lambda text, key=key: self._series_failed(key, text))
        call.start(self._series_reader, self._workspace.db_path, entry["kind"], entry["id"])

    def select_point(self, curve: str, ranks: int) -> bool:
        """Show the waterfall of `curve`'s point at `ranks` (what clicking it does)."""
        return self.curve.select(curve, ranks)

    # ---- Private API
    def showEvent(self, event) -> None:  # noqa: N802 — Qt's name
        """Read the history each time the page is shown (a sweep may have added points since), keeping the entry
        and the point chosen."""
        super().showEvent(event)
        self.reload()

    def _retry(self) -> None:
        if self._workspace.measuring is None:
            self.reload()

    def _entries_read(self, entries: list[dict[str, Any]]) -> None:
        self._pending.pop("entries", None)
        current = self.entries[self.picker.currentRow()]["id"] if 0 <= self.picker.currentRow() < len(
            self.entries) else None
        self.entries = list(entries)
        self.picker.blockSignals(True)
        self.picker.clear()
        self.picker.addItems([entry["label"] for entry in self.entries])
        self.picker.blockSignals(False)
        if not self.entries:
            self.message.setText(EMPTY_TEXT)
            self.series = None
            self.curve.clear(EMPTY_TEXT)
            self.waterfall.clear("No waterfall: no scaling run yet.")
            self.levers.setText("")
            self.straggler.setText("")
            self.prediction.setText("")
            self.figures.setText("")
            return
        self.message.setText(f"{len(self.entries)} scaling series in the history.")
        row = next((i for i, e in enumerate(self.entries) if e["id"] == current), 0)
        self.picker.blockSignals(True)
        self.picker.setCurrentRow(row)
        self.picker.blockSignals(False)
        self.show_entry(row)

    def _read_failed(self, what: str, text: str) -> None:
        self._pending.pop(what, None)
        self.message.setText(f"The history could not be read: {text}")

    def _series_failed(self, key: tuple[str, str], text: str) -> None:
        if self._pending.get("series") != key:
            return
        self._pending.pop("series", None)
        self.series = None
        self.curve.clear(f"This series cannot be shown: {text}")
        self.waterfall.clear("No waterfall.")
        self.message.setText(f"{key[0].capitalize()} {key[1][:8]} cannot be shown: {text}")

    def _series_read(self, key: tuple[str, str], data: dict[str, Any]) -> None:
        if self._pending.get("series") != key:
            return  # another entry was chosen meanwhile
        self._pending.pop("series", None)
        previous = (self._shown_key, self.point.get("curve"), self.point.get("ranks")) if self.point else None
        self._shown_key = key
        self.series = data
        self.message.setText(data.get("title") or "")
        self.curve.set_series(data)
        self.levers.setText(f"Levers: {(data.get('levers') or {}).get('text') or 'not available'}")
        notes = data.get("notes") or []
        self.figures.setText("<br>".join(f"note: {note}" for note in notes))
        self.point = None
        self.waterfall.clear("Click a point of the curve for its waterfall.")
        self.straggler.setText("")
        self.prediction.setText("")
        chosen = self._default_point(data)
        if previous and previous[0] == key and any(p.get("curve") == previous[1] and p.get("ranks") == previous[2]
                                                   and p.get("e") is not None for p in data.get("points") or []):
            chosen = {"curve": previous[1], "ranks": previous[2]}  # the same series read again: the same point
        if chosen is not None:
            self.curve.select(chosen["curve"], chosen["ranks"])
        self.sig_series_shown.emit(data)

    @staticmethod
    def _default_point(data: dict[str, Any]) -> dict[str, Any] | None:
        """The largest N of the first curve that has an E (where scaling loses most)."""
        for curve in data.get("curves") or []:
            points = [p for p in curve.get("points") or [] if p.get("e") is not None]
            if points:
                return max(points, key=lambda p: p["ranks"])
        return None

    def _point_selected(self, chosen: dict[str, Any]) -> None:
        point = next((p for p in (self.series or {}).get("points") or []
                      if p.get("curve") == chosen["curve"] and p.get("ranks") == chosen["ranks"]), None)
        if point is None:
            return
        self.point = point
        curves = (self.series or {}).get("curves") or []
        which = f" · {chosen['curve']}" if len(curves) > 1 else ""
        self.waterfall.set_waterfall(point.get("waterfall"),
                                     f"Scaling waterfall at N = {point['ranks']}{which}: ideal → measured step")
        self.straggler.setText(straggler_text(point))
        self.prediction.setText(prediction_text(point))
        notes = (self.series or {}).get("notes") or []
        self.figures.setText("<br>".join([f"<b>{point_text(point)}</b>", *(f"note: {n}" for n in notes)]))
