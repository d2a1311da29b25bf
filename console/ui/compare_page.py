"""The Compare page: N runs picked on the History page, overlaid, with their deltas, differences and trends.

Reading a run's latencies, telemetry and its configuration's series can take a while on a long history, and the
bootstrap interval of each comparison costs a fraction of a second, so `compare()` gathers everything on a
thread (console.ui.compare_data, its own read-only connection) and the page draws when it arrives; a newer
request makes an older result stale, and it is dropped.

Top: latency CDF, box per run, one shared telemetry metric on each run's own clock (widgets.compare_charts).
Middle: each metric of each run against the first (widgets.delta_table) beside what differs between them.
Bottom: one trend chart per configuration among the runs, its baseline and change points marked.
"""

from __future__ import annotations

from typing import Any

from PySide6 import QtCore, QtWidgets

from console.ui.background import BackgroundCall
from console.ui.compare_data import gather
from console.ui.pages import PageContext
from widgets import theme
from widgets.compare_charts import CompareCharts, run_color
from widgets.delta_table import DeltaTable, DifferencesTable
from widgets.trend_chart import TrendChart

EMPTY_TEXT = ("Nothing compared yet: on the History page (Ctrl+2) select two or more runs (Ctrl-click or "
              "Shift-click) and press Compare (Ctrl+Shift+C).")


class ComparePage(QtWidgets.QWidget):
    sig_error = QtCore.Signal(str)
    sig_loaded = QtCore.Signal(list)  # the run ids drawn (tests wait on it)

    # ---- Public API
    def __init__(self, context: PageContext, parent: QtWidgets.QWidget | None = None):
        super().__init__(parent)
        self._db_path = context.workspace.db_path
        self._usable = context.workspace.store is not None
        self.run_ids: list[str] = []
        self.data: dict[str, Any] | None = None
        self.header = QtWidgets.QLabel(EMPTY_TEXT)
        self.header.setObjectName("compare_header")
        self.header.setWordWrap(True)
        self.header.setFont(theme.font(theme.BASE_PT))
        self.refresh_button = QtWidgets.QPushButton("Refresh")
        self.refresh_button.setToolTip("Read the runs again (a baseline set or new runs of these configurations)")
        self.refresh_button.clicked.connect(lambda: self.compare(self.run_ids))
        self.charts = CompareCharts()
        self.deltas = DeltaTable()
        self.differences = DifferencesTable()
        self.trends: list[TrendChart] = []
        self._trend_box = QtWidgets.QWidget()
        self._trend_layout = QtWidgets.QHBoxLayout(self._trend_box)
        self._trend_layout.setContentsMargins(0, 0, 0, 0)
        self._trend_layout.setSpacing(12)

        top = QtWidgets.QHBoxLayout()
        top.addWidget(self.header, 1)
        top.addWidget(self.refresh_button)
        tables = QtWidgets.QSplitter(QtCore.Qt.Orientation.Horizontal)
        tables.addWidget(self._titled("Against A (the first run)", self.deltas))
        tables.addWidget(self._titled("What differs from A", self.differences))
        tables.setSizes([820, 500])
        splitter = QtWidgets.QSplitter(QtCore.Qt.Orientation.Vertical)
        splitter.addWidget(self.charts)
        splitter.addWidget(tables)
        splitter.addWidget(self._titled("Trend of each configuration", self._trend_box))
        splitter.setSizes([350, 170, 280])
        splitter.setChildrenCollapsible(False)
        layout = QtWidgets.QVBoxLayout(self)
        layout.addLayout(top)
        layout.addWidget(splitter, 1)
        self._loader = BackgroundCall(self)
        self._loader.sig_done.connect(self._loaded)
        self._loader.sig_failed.connect(self._failed)
        self._pending: tuple[str, ...] | None = None
        self.refresh_button.setEnabled(False)

    def compare(self, run_ids: list[str]) -> None:
        """Read these runs in the background (the first is the reference, A) and draw them when read."""
        ids = [str(run_id) for run_id in run_ids]
        if len(ids) < 2:
            self.header.setText(EMPTY_TEXT)
            return
        if not self._usable:
            self.header.setText("The history database could not be opened, so there is nothing to compare.")
            return
        self.run_ids = ids
        self._pending = tuple(ids)
        self.header.setText(f"Reading {len(ids)} runs from the history…")
        self.refresh_button.setEnabled(False)
        self._loader.start(_gather_for, str(self._db_path), ids)

    @property
    def busy(self) -> bool:
        return self._pending is not None

    # ---- Private API
    def _loaded(self, result: tuple[tuple[str, ...], dict[str, Any]]) -> None:
        ids, data = result
        if ids != self._pending:
            return  # a newer comparison was asked for meanwhile
        self._pending = None
        self.data = data
        self.refresh_button.setEnabled(True)
        runs = data["runs"]
        self.charts.set_runs(runs)
        self.charts.set_telemetry(data["telemetry"]["metrics"], data["telemetry"]["series"])
        self.deltas.set_rows(data["deltas"])
        self.differences.set_differences(data["differences"])
        self._show_trends(data["trends"], {run["letter"]: run_color(i) for i, run in enumerate(runs)})
        configurations = len(data["trends"])
        text = (f"<b>{len(runs)} runs compared</b> against A, the first selected · "
                f"{configurations} configuration{'s' if configurations != 1 else ''}")
        if configurations > 1:
            text += f" — <span style='color:{theme.BAD}'>not all the same measurement: see what differs</span>"
        if data.get("missing"):
            text += f" · no longer in the history: {', '.join(r[:8] for r in data['missing'])}"
        self.header.setText(text)
        self.sig_loaded.emit(list(ids))

    def _failed(self, message: str) -> None:
        self._pending = None
        self.refresh_button.setEnabled(bool(self.run_ids))
        self.header.setText(f"Cannot compare these runs: {message}")
        self.sig_error.emit(f"Cannot compare these runs: {message}")

    def _show_trends(self, trends: list[dict[str, Any]], colors: dict[str, str]) -> None:
        for chart in self.trends:
            self._trend_layout.removeWidget(chart)
            chart.deleteLater()
        self.trends = []
        for trend in trends:
            chart = TrendChart()
            chart.set_series(trend["title"], trend["points"], trend.get("baseline_run_id"),
                             trend.get("change_points") or [], trend.get("note") or "", colors)
            chart.setMinimumWidth(320)
            self._trend_layout.addWidget(chart, 1)
            self.trends.append(chart)

    @staticmethod
    def _titled(title: str, widget: QtWidgets.QWidget) -> QtWidgets.QWidget:
        box = QtWidgets.QWidget()
        layout = QtWidgets.QVBoxLayout(box)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(2)
        label = QtWidgets.QLabel(title)
        label.setFont(theme.font(theme.TITLE_PT, bold=True))
        layout.addWidget(label)
        layout.addWidget(widget, 1)
        return box


def _gather_for(db_path: str, run_ids: list[str]) -> tuple[tuple[str, ...], dict[str, Any]]:
    """gather(), tagged with the ids asked for (a stale result is recognised and dropped)."""
    return tuple(run_ids), gather(db_path, run_ids)
