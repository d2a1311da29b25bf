"""N runs overlaid: latency CDF, a box per run, and one telemetry metric on each run's own clock.

A view fed plain data::

    set_runs([{"letter": "A", "label": "mlp · torch · cpu · b1", "run_id": "8a0afd99…", "latency_ms": ndarray}, …])
    set_telemetry([{"metric": "cpu.util", "unit": "%"}, …], {"cpu.util": [(t_s, values) per run, …]})

One colour per run (the theme's palette, in order), the same on every chart and in the legend row above them.
- CDF: x latency (ms; a log axis on request, where tails of 10× the median read well), y the fraction of
  iterations at or below it. Drawn from at most 2,000 quantiles per run, so a million iterations cost what a thousand do.
- Box: pyqtgraph has no violin, and a kernel density would smooth away the bimodal shapes people look for, so
  each run is a box from p25 to p75 with its median as a thick line and whiskers from p5 to p95 (stated under
  the charts). Iterations outside p5–p95 are not drawn; the CDF shows them.
- Telemetry: seconds since each run started, so loading, warm-up and measuring line up across runs.
"""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pyqtgraph as pg
from PySide6 import QtCore, QtWidgets

from widgets import chart_export, theme
from widgets.formatting import format_number
from widgets.plot_style import style_plot

CDF_POINTS = 2000
BOX_PERCENTILES = (5, 25, 50, 75, 95)
LATENCY_LABEL = "latency (ms)"
FRACTION_LABEL = "cumulative fraction"
TIME_LABEL = "time since run start (s)"
_BOX_WIDTH = 0.5


def run_color(index: int) -> str:
    return theme.PALETTE[index % len(theme.PALETTE)]


def cdf_points(latency_ms: np.ndarray, points: int = CDF_POINTS) -> tuple[np.ndarray, np.ndarray]:
    """(latency, fraction ≤ latency) of the empirical CDF, at most `points` long (quantiles when longer)."""
    values = np.sort(np.asarray(latency_ms, dtype=np.float64))
    values = values[np.isfinite(values)]
    n = values.size
    if n == 0:
        return np.empty(0), np.empty(0)
    if n <= points:
        return values, np.arange(1, n + 1) / n
    fractions = np.linspace(1.0 / n, 1.0, points)
    return np.quantile(values, fractions, method="inverted_cdf"), fractions


def box_stats(latency_ms: np.ndarray) -> dict[int, float] | None:
    """{5: p5, 25: …, 95: p95} of the finite values, or None when there are none."""
    values = np.asarray(latency_ms, dtype=np.float64)
    values = values[np.isfinite(values)]
    if values.size == 0:
        return None
    return dict(zip(BOX_PERCENTILES, (float(v) for v in np.percentile(values, BOX_PERCENTILES)), strict=True))


class CompareCharts(QtWidgets.QWidget):
    """A legend row, then the CDF, the box plot and the telemetry chart side by side."""

    sig_metric_changed = QtCore.Signal(str)

    # ---- Public API
    def __init__(self, parent: QtWidgets.QWidget | None = None):
        super().__init__(parent)
        self.legend = QtWidgets.QLabel()
        self.legend.setObjectName("compare_legend")
        self.legend.setTextFormat(QtCore.Qt.TextFormat.RichText)
        self.legend.setWordWrap(True)
        self.legend.setFont(theme.font(theme.BASE_PT))
        self.log_scale = QtWidgets.QCheckBox("Log latency axis (CDF)")
        self.log_scale.setToolTip("The CDF's latency on a log axis: a tail of 10× the median stays readable")
        self.log_scale.toggled.connect(self._log_toggled)
        self.metric_box = QtWidgets.QComboBox()
        self.metric_box.setObjectName("compare_metric")
        self.metric_box.setSizeAdjustPolicy(QtWidgets.QComboBox.SizeAdjustPolicy.AdjustToContents)
        self.metric_box.currentIndexChanged.connect(self._metric_picked)
        self.cdf_plot = self._make_plot(LATENCY_LABEL, FRACTION_LABEL)
        self.box_plot = self._make_plot("run", LATENCY_LABEL)
        self.telemetry_plot = self._make_plot(TIME_LABEL, "value")
        self.cdf_plot.getPlotItem().setYRange(0, 1, padding=0.02)
        self.note = theme.caption_label()

        controls = QtWidgets.QHBoxLayout()
        controls.addWidget(self.legend, 1)
        controls.addWidget(self.log_scale)
        columns = QtWidgets.QHBoxLayout()
        columns.setSpacing(10)
        metric_row = QtWidgets.QHBoxLayout()
        metric_row.addWidget(self._title("Telemetry"))
        metric_row.addWidget(self.metric_box)
        metric_row.addStretch(1)
        for title, plot in ((self._title("Latency CDF"), self.cdf_plot), (self._title("Latency spread"), self.box_plot),
                            (metric_row, self.telemetry_plot)):
            column = QtWidgets.QVBoxLayout()
            column.setSpacing(2)
            if isinstance(title, QtWidgets.QLayout):
                column.addLayout(title)
                chart_export.set_title(plot, self._telemetry_title)
            else:
                column.addWidget(title)
                chart_export.set_title(plot, title)
            column.addWidget(plot, 1)
            columns.addLayout(column, 1)
        layout = QtWidgets.QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addLayout(controls)
        layout.addLayout(columns, 1)
        layout.addWidget(self.note)
        self._runs: list[dict[str, Any]] = []
        self._series: dict[str, list[tuple[np.ndarray, np.ndarray]]] = {}
        self._units: dict[str, str] = {}
        self.clear()

    def set_runs(self, runs: Sequence[Mapping[str, Any]]) -> None:
        """Draw the latency charts of these runs (the first is the reference, A)."""
        self._runs = [dict(run) for run in runs]
        entries = []
        for index, run in enumerate(self._runs):
            color = run_color(index)
            short = str(run.get("run_id") or "")[:8]
            text = html.escape(f"{short} · {run.get('label', '')}").replace(" ", "&nbsp;")  # entries wrap whole
            if run.get("valid") is False:
                text += f"&nbsp;<span style='color:{theme.BAD}'>(invalid&nbsp;run)</span>"
            entries.append(f"<span style='color:{color}; font-size:16pt'>■</span>&nbsp;<b>{run['letter']}</b>"
                           f"&nbsp;{text}")
        self.legend.setText("&nbsp;&nbsp;&nbsp; ".join(entries))
        self._draw_latency()
        self.note.setText("Box: p25 to p75, thick line at the median, whiskers from p5 to p95 (iterations beyond "
                          "them are in the CDF). Telemetry: seconds since each run started.")

    def set_telemetry(self, metrics: Sequence[Mapping[str, Any]],
                      series: Mapping[str, Sequence[tuple[np.ndarray, np.ndarray]]]) -> None:
        """The metrics every run has (offered in the combo box, first one drawn) and their series per run."""
        self._series = {name: list(values) for name, values in series.items()}
        self._units = {m["metric"]: str(m.get("unit") or "") for m in metrics}
        current = self.metric_box.currentData()
        self.metric_box.blockSignals(True)
        self.metric_box.clear()
        for m in metrics:
            unit = self._units[m["metric"]]
            self.metric_box.addItem(f"{m['metric']} ({unit})" if unit else m["metric"], m["metric"])
        self.metric_box.setCurrentIndex(max(self.metric_box.findData(current), 0))
        self.metric_box.blockSignals(False)
        self.metric_box.setEnabled(bool(metrics))
        self._draw_telemetry()

    def clear(self) -> None:
        self._runs, self._series, self._units = [], {}, {}
        for plot in (self.cdf_plot, self.box_plot, self.telemetry_plot):
            plot.getPlotItem().clear()
        self.metric_box.clear()
        self.legend.setText("")
        self.note.setText("Select two or more runs on the History page and press Compare.")

    def select_metric(self, metric: str) -> bool:
        index = self.metric_box.findData(metric)
        if index >= 0:
            self.metric_box.setCurrentIndex(index)
        return index >= 0

    def current_metric(self) -> str | None:
        return self.metric_box.currentData()

    def drawn(self) -> dict[str, int]:
        """How many data items each chart holds (tests and the self-check read it)."""
        def has_data(item: pg.PlotDataItem) -> bool:
            x = item.getData()[0]
            return x is not None and len(x) > 0

        return {name: len([i for i in plot.getPlotItem().listDataItems() if has_data(i)])
                for name, plot in (("cdf", self.cdf_plot), ("box", self.box_plot),
                                   ("telemetry", self.telemetry_plot))}

    def axis_labels(self) -> dict[str, tuple[str, str]]:
        def labels(plot: pg.PlotWidget) -> tuple[str, str]:
            item = plot.getPlotItem()
            return item.getAxis("bottom").labelText, item.getAxis("left").labelText

        return {"cdf": labels(self.cdf_plot), "box": labels(self.box_plot), "telemetry": labels(self.telemetry_plot)}

    # ---- Private API
    def _draw_latency(self) -> None:
        log = self.log_scale.isChecked()
        cdf, box = self.cdf_plot.getPlotItem(), self.box_plot.getPlotItem()
        cdf.clear()
        box.clear()
        cdf.setLogMode(x=log, y=False)
        for y, text in ((0.5, "p50"), (0.99, "p99")):
            guide = pg.InfiniteLine(pos=y, angle=0, pen=pg.mkPen(theme.MUTED, width=1,
                                                                 style=QtCore.Qt.PenStyle.DotLine),
                                    label=text, labelOpts={"position": 0.04, "color": theme.MUTED})
            cdf.addItem(guide, ignoreBounds=True)
        ticks = []
        for index, run in enumerate(self._runs):
            color = run_color(index)
            latency = np.asarray(run.get("latency_ms", ()), dtype=np.float64)
            x, y = cdf_points(latency[latency > 0] if log else latency)
            cdf.plot(x, y, pen=pg.mkPen(color, width=2.5), name=self._run_name(run), stepMode=None)
            stats = box_stats(latency)
            ticks.append((index, run["letter"]))
            if stats is not None:
                self._draw_box(box, index, stats, color)
        box.getAxis("bottom").setTicks([ticks])
        box.setXRange(-0.6, max(len(self._runs) - 0.4, 0.6) + 0.35, padding=0)  # room for the last median label
        cdf.setYRange(0, 1, padding=0.02)
        cdf.enableAutoRange(axis="x")
        box.enableAutoRange(axis="y")

    def _draw_box(self, plot: pg.PlotItem, x: float, stats: dict[int, float], color: str) -> None:
        half = _BOX_WIDTH / 2
        fill = theme.tint(color, 0.35)
        box = pg.BarGraphItem(x=[x], y0=[stats[25]], height=[stats[75] - stats[25]], width=_BOX_WIDTH,
                              brush=fill, pen=pg.mkPen(color, width=2))
        plot.addItem(box)
        pen = pg.mkPen(color, width=2)
        for low, high in ((stats[5], stats[25]), (stats[75], stats[95])):
            plot.plot([x, x], [low, high], pen=pen)
        for cap in (stats[5], stats[95]):
            plot.plot([x - half / 2, x + half / 2], [cap, cap], pen=pen)
        plot.plot([x - half, x + half], [stats[50], stats[50]], pen=pg.mkPen(theme.FOREGROUND, width=4))
        label = pg.TextItem(format_number(stats[50]) + " ms", color=theme.FOREGROUND, anchor=(0, 0.5))
        label.setPos(x + half + 0.02, stats[50])
        plot.addItem(label)

    def _draw_telemetry(self) -> None:
        plot = self.telemetry_plot.getPlotItem()
        plot.clear()
        metric = self.metric_box.currentData()
        if not metric:
            style_plot(plot, TIME_LABEL, "no metric shared by every run")
            return
        unit = self._units.get(metric, "")
        style_plot(plot, TIME_LABEL, f"{metric} ({unit})" if unit else metric)
        for index, (t, values) in enumerate(self._series.get(metric, [])):
            name = self._run_name(self._runs[index]) if index < len(self._runs) else None
            plot.plot(np.asarray(t, dtype=np.float64), np.asarray(values, dtype=np.float64),
                      pen=pg.mkPen(run_color(index), width=2), name=name)
        plot.enableAutoRange()

    def _metric_picked(self, _index: int) -> None:
        self._draw_telemetry()
        metric = self.metric_box.currentData()
        if metric:
            self.sig_metric_changed.emit(metric)

    def _log_toggled(self, _checked: bool) -> None:
        self._draw_latency()

    def _telemetry_title(self) -> str:
        """The telemetry chart's title in an export: the metric picked in the combo box beside it."""
        return f"Telemetry: {self.metric_box.currentText()}" if self.metric_box.currentText() else "Telemetry"

    @staticmethod
    def _run_name(run: Mapping[str, Any]) -> str:
        """A run's entry in an exported chart's legend: its letter and what it ran."""
        return " · ".join(str(part) for part in (run.get("letter"), run.get("label")) if part)

    @staticmethod
    def _title(text: str) -> QtWidgets.QLabel:
        label = theme.title_label(text)
        return label

    @staticmethod
    def _make_plot(x_label: str, y_label: str) -> pg.PlotWidget:
        widget = pg.PlotWidget(background=theme.BACKGROUND)
        style_plot(widget.getPlotItem(), x_label, y_label)
        widget.getPlotItem().getAxis("left").setWidth(64)
        widget.setMinimumSize(260, 190)
        return widget
