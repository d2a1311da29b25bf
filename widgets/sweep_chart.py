"""Sweep charts: latency against throughput, and throughput against the swept axis (batch), knee marked.

A pure view fed plain data (what ``console.sweep.chart_data`` returns)::

    {"x_label": "batch size (samples)", "x_axis": "batch",
     "series": [{"name": "2 threads", "points": [{"x": 4, "throughput": 7100.0, "p50": 0.54, "p99": 0.73,
                                                   "label": "b4 · 2 threads"}, ...]}, ...],
     "knee": {"series": "2 threads", "x": 4, "throughput": 7100.0, "p50": 0.54, "p99": 0.73,
              "label": "knee: b4 · 2 threads"} | None}

Why two charts: throughput against batch shows where adding work stops paying (the knee); latency against
throughput shows what each extra sample per second costs at p50 and p99. One colour per series on both, so a
series reads across. A percentile withheld for too few samples (None) is left out, never drawn as 0, and the
chart says how many were withheld. The knee is a large gold star with its label on both charts.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np
import pyqtgraph as pg
from PySide6 import QtCore, QtWidgets

from widgets import chart_export, theme
from widgets.formatting import format_number
from widgets.plot_style import style_plot

KNEE_COLOR = "#f2b400"
KNEE_EDGE = "#222222"
THROUGHPUT_LABEL = "throughput (samples/s)"
LATENCY_LABEL = "latency (ms)"
_LOG_SPAN = 8.0  # an x range spanning this factor or more (batch 1…64) is drawn on a log axis


class SweepChart(QtWidgets.QWidget):
    """Two plots side by side; `set_data(data)` redraws both, `clear()` empties them."""

    # ---- Public API
    def __init__(self, parent: QtWidgets.QWidget | None = None):
        super().__init__(parent)
        self.latency_plot = self._make_plot(THROUGHPUT_LABEL, LATENCY_LABEL)
        self.throughput_plot = self._make_plot("batch size (samples)", THROUGHPUT_LABEL)
        self._titles = []
        columns = QtWidgets.QHBoxLayout()
        columns.setSpacing(12)
        self.legends: list[QtWidgets.QLabel] = []
        for title, plot in (("Latency vs throughput", self.latency_plot),
                            ("Throughput vs batch", self.throughput_plot)):
            column = QtWidgets.QVBoxLayout()
            column.setSpacing(2)
            label = theme.title_label(title)
            label.setStyleSheet(f"color: {theme.FOREGROUND};")
            self._titles.append(label)
            chart_export.set_title(plot, label)
            # The legend is a row above the plot: inside, it would hide points (a knee sits in a corner too).
            legend = QtWidgets.QLabel()
            legend.setFont(theme.font(theme.BASE_PT))
            legend.setWordWrap(True)
            legend.setTextFormat(QtCore.Qt.TextFormat.RichText)
            self.legends.append(legend)
            column.addWidget(label)
            column.addWidget(legend)
            column.addWidget(plot, 1)
            columns.addLayout(column, 1)
        self.note = theme.caption_label()
        layout = QtWidgets.QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addLayout(columns, 1)
        layout.addWidget(self.note)
        self.setMinimumSize(560, 260)
        self._data: dict[str, Any] = {}
        self._curves: dict[str, dict[str, tuple[np.ndarray, np.ndarray]]] = {}
        self.knee_items: list[Any] = []  # the star markers and their labels (tests look at them)
        self.clear()

    def set_data(self, data: Mapping[str, Any]) -> None:
        self._reset()
        self._data = dict(data)
        x_label = data.get("x_label") or "batch size (samples)"
        self._titles[1].setText(f"Throughput vs {data.get('x_axis') or 'batch'}".replace("qps", "request rate"))
        style_plot(self.throughput_plot.getPlotItem(), x_label, THROUGHPUT_LABEL)
        xs = [p["x"] for s in data.get("series", []) for p in s["points"] if _finite(p.get("x"))]
        log_x = bool(xs) and min(xs) > 0 and max(xs) / min(xs) >= _LOG_SPAN
        self.throughput_plot.getPlotItem().setLogMode(x=log_x, y=False)
        self._log_x = log_x
        values = sorted(set(xs))
        bottom = self.throughput_plot.getPlotItem().getAxis("bottom")
        # Tick at each value swept (1, 4, 16, 64 read better than 10¹, 10²), unless there are too many to label.
        bottom.setTicks([[(math.log10(v) if log_x else v, format_number(v)) for v in values]]
                        if 0 < len(values) <= 12 else None)
        legend_entries: tuple[list[str], list[str]] = ([], [])
        withheld = 0
        for index, series in enumerate(data.get("series", [])):
            color = theme.PALETTE[index % len(theme.PALETTE)]
            name = series.get("name") or "all points"
            points = list(series["points"])
            x = _array([p.get("x") for p in points])
            throughput = _array([p.get("throughput") for p in points])
            p50 = _array([p.get("p50") for p in points])
            p99 = _array([p.get("p99") for p in points])
            withheld += int(np.isnan(p99).sum())
            self._curves[name] = {"throughput": (x, throughput), "p50": (throughput, p50), "p99": (throughput, p99)}
            pen = pg.mkPen(color, width=2.5)
            legend_entries[1].append(_swatch(color, "●", name))
            latency_entry = []
            self.throughput_plot.plot(x, throughput, pen=pen, symbol="o", symbolSize=9, symbolBrush=color,
                                      symbolPen=pg.mkPen(theme.BACKGROUND), name=name, connect="finite")
            if np.isfinite(p50).any():  # a curve of withheld values only would be an empty legend entry
                latency_entry.append(_swatch(color, "●", f"{name} p50"))
                self.latency_plot.plot(throughput, p50, pen=pen, symbol="o", symbolSize=9, symbolBrush=color,
                                       symbolPen=pg.mkPen(theme.BACKGROUND), name=f"{name} p50", connect="finite")
            if np.isfinite(p99).any():
                latency_entry.append(_swatch(color, "▽", "p99" if latency_entry else f"{name} p99", dashed=True))
                self.latency_plot.plot(throughput, p99, pen=pg.mkPen(color, width=2,
                                                                     style=QtCore.Qt.PenStyle.DashLine),
                                       symbol="t", symbolSize=10, symbolBrush=theme.BACKGROUND,
                                       symbolPen=pg.mkPen(color, width=2), name=f"{name} p99", connect="finite")
            if latency_entry:
                legend_entries[0].append("".join(latency_entry))
        self._mark_knee(data.get("knee"))
        if data.get("knee"):
            for entries in legend_entries:
                entries.append(_swatch(KNEE_COLOR, "★", "knee"))
        for legend, entries in zip(self.legends, legend_entries, strict=True):
            legend.setText("&nbsp;&nbsp;&nbsp;".join(entries))
        for plot in (self.latency_plot, self.throughput_plot):
            plot.getPlotItem().enableAutoRange()
        notes = []
        if withheld:
            notes.append(f"p99 withheld at {withheld} point{'s' if withheld != 1 else ''}: too few samples back it "
                         "(a longer duration per point gives more).")
        if log_x:
            notes.append(f"{x_label.split(' (')[0]} on a log scale.")
        if not data.get("series"):
            notes.append("No completed point to draw yet.")
        self.note.setText("  ".join(notes + ["p50 solid, p99 dashed; the gold star marks the knee."]))

    def clear(self) -> None:
        self._reset()
        self._data = {}
        self.note.setText("Run a sweep, or pick a past one, to see its charts.")

    def plotted(self) -> dict[str, dict[str, tuple[list[float], list[float]]]]:
        """What is drawn, per series: {"throughput": (x, y), "p50": (throughput, ms), "p99": (throughput, ms)}."""
        return {name: {key: (x.tolist(), y.tolist()) for key, (x, y) in curves.items()}
                for name, curves in self._curves.items()}

    def knee_position(self) -> dict[str, tuple[float, float]] | None:
        """Where the knee star sits on each chart, in data units: {"throughput": (x, y), "latency": (x, y)}."""
        knee = self._data.get("knee")
        if not knee:
            return None
        position = {"throughput": (float(knee["x"]), float(knee["throughput"]))}
        latency = knee.get("p99") if knee.get("p99") is not None else knee.get("p50")
        if latency is not None:
            position["latency"] = (float(knee["throughput"]), float(latency))
        return position

    def axis_labels(self) -> dict[str, tuple[str, str]]:
        """(x, y) axis labels of each chart: every one names its unit."""
        def labels(plot: pg.PlotWidget) -> tuple[str, str]:
            item = plot.getPlotItem()
            return item.getAxis("bottom").labelText, item.getAxis("left").labelText

        return {"latency": labels(self.latency_plot), "throughput": labels(self.throughput_plot)}

    # ---- Private API
    def _make_plot(self, x_label: str, y_label: str) -> pg.PlotWidget:
        widget = pg.PlotWidget(background=theme.BACKGROUND)
        style_plot(widget.getPlotItem(), x_label, y_label)
        widget.getPlotItem().getViewBox().setDefaultPadding(0.08)  # room for the knee star at a chart's edge
        widget.setMinimumSize(260, 220)
        return widget

    def _reset(self) -> None:
        for plot in (self.latency_plot, self.throughput_plot):
            plot.getPlotItem().clear()
        for legend in getattr(self, "legends", []):
            legend.setText("")
        self._curves = {}
        self.knee_items = []
        self._log_x = False

    def _mark_knee(self, knee: Mapping[str, Any] | None) -> None:
        if not knee or not _finite(knee.get("throughput")):
            return
        star = {"symbol": "star", "symbolSize": 24, "symbolBrush": KNEE_COLOR,
                "symbolPen": pg.mkPen(KNEE_EDGE, width=1.5), "pen": None}
        series = self._data.get("series", [])
        label = f"{knee.get('label') or 'knee'}\n{format_number(knee['throughput'])} samples/s"
        if _finite(knee.get("x")):
            item = self.throughput_plot.plot([knee["x"]], [knee["throughput"]], name="knee", **star)
            item.setZValue(20)
            x_at = math.log10(knee["x"]) if self._log_x and knee["x"] > 0 else knee["x"]
            xs = [p["x"] for s in series for p in s["points"] if _finite(p.get("x"))]
            ys = [p["throughput"] for s in series for p in s["points"] if _finite(p.get("throughput"))]
            self.knee_items += [item, self._label(self.throughput_plot, x_at, knee["throughput"], label,
                                                  _in_lower_half(knee["x"], xs, self._log_x),
                                                  _in_lower_half(knee["throughput"], ys, False))]
        latency = knee.get("p99") if knee.get("p99") is not None else knee.get("p50")
        if _finite(latency):
            which = "p99" if knee.get("p99") is not None else "p50"
            item = self.latency_plot.plot([knee["throughput"]], [latency], name="knee", **star)
            item.setZValue(20)
            text = f"{knee.get('label') or 'knee'}\n{which} {format_number(latency)} ms"
            xs = [p["throughput"] for s in series for p in s["points"] if _finite(p.get("throughput"))]
            ys = [p[key] for s in series for p in s["points"] for key in ("p50", "p99") if _finite(p.get(key))]
            self.knee_items += [item, self._label(self.latency_plot, knee["throughput"], latency, text,
                                                  _in_lower_half(knee["throughput"], xs, False),
                                                  _in_lower_half(latency, ys, False))]

    def _label(self, plot: pg.PlotWidget, x: float, y: float, text: str, right_of: bool,
               above: bool) -> pg.TextItem:
        """The knee's label beside its star, towards the middle of the chart, where there is room."""
        anchor = (-0.08 if right_of else 1.08, 1.1 if above else -0.1)
        item = pg.TextItem(text, color=theme.FOREGROUND, anchor=anchor,
                           fill=pg.mkBrush(theme.qcolor(KNEE_COLOR, 70)), border=pg.mkPen(KNEE_COLOR))
        item.setFont(theme.font(theme.SMALL_PT, bold=True))
        item.setPos(x, y)
        item.setZValue(21)
        plot.addItem(item)
        return item


def _finite(value: Any) -> bool:
    try:
        return value is not None and not isinstance(value, bool) and math.isfinite(float(value))
    except (TypeError, ValueError):
        return False


def _swatch(color: str, symbol: str, text: str, dashed: bool = False) -> str:
    line = "╌" if dashed else "━"
    # non-breaking spaces inside an entry: a narrow chart wraps the legend between entries, never inside one
    return (f"<span style='color:{color}; font-weight:bold'>{line}{symbol}{line}</span>"
            f"<span style='color:{theme.FOREGROUND}'>&nbsp;{_html(text).replace(' ', '&nbsp;')}</span>&nbsp;")


def _html(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _in_lower_half(x: float, xs: list[float], log: bool) -> bool:
    """True when x sits in the lower (left, or bottom) half of the range of xs."""
    if not xs:
        return True
    low, high = min(xs), max(xs)
    if log and low > 0:
        x, low, high = math.log10(x), math.log10(low), math.log10(high)
    return high == low or (x - low) / (high - low) < 0.5


def _array(values: list[Any]) -> np.ndarray:
    return np.array([float(v) if _finite(v) else np.nan for v in values], dtype=float)
