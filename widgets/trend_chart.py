"""One configuration's series over time: the median latency of each run, its baseline, its change points.

A view fed plain data::

    set_series(title, points=[{"run_id", "t" (epoch s), "median_ms", "valid", "letter" (compared run) | None}],
               baseline_run_id, change_points=[{"t", "ratio", "ci95", "p_value", "direction"}], note)

Runs are dots joined in time order (an invalid run hollow: it is shown, but change points are found on valid runs
only); the runs being compared wear their letter and colour; the baseline is a gold star; a change point is a
dashed vertical line between the last run before the step and the first after, labelled with its ratio
(red when slower, green when faster). Time runs along a date axis in local time.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pyqtgraph as pg
from PySide6 import QtCore, QtWidgets

from widgets import chart_export, theme
from widgets.formatting import format_number
from widgets.plot_style import style_plot

BASELINE_COLOR = "#f2b400"
Y_LABEL = "median (ms)"  # of each run's latencies; short, so a low chart still shows it whole
X_LABEL = "run started (local time)"


class TrendChart(QtWidgets.QWidget):
    """A title, the series plot, and a line saying what is marked (or why nothing is)."""

    # ---- Public API
    def __init__(self, parent: QtWidgets.QWidget | None = None):
        super().__init__(parent)
        self.title = QtWidgets.QLabel()
        self.title.setFont(theme.font(theme.BASE_PT, bold=True))
        self.title.setWordWrap(True)
        self.plot = pg.PlotWidget(background=theme.BACKGROUND, axisItems={"bottom": pg.DateAxisItem()})
        style_plot(self.plot.getPlotItem(), X_LABEL, Y_LABEL)
        chart_export.set_title(self.plot, lambda: f"Median latency over time — {self.title.text()}"
                               if self.title.text() else "Median latency over time")
        self.plot.getPlotItem().getAxis("left").setWidth(64)
        self.plot.getPlotItem().getViewBox().setDefaultPadding(0.1)  # room for the letters beside points
        self.plot.setMinimumHeight(170)
        self.note = theme.caption_label()
        layout = QtWidgets.QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(2)
        layout.addWidget(self.title)
        layout.addWidget(self.plot, 1)
        layout.addWidget(self.note)
        self.baseline_item: pg.PlotDataItem | None = None
        self.step_lines: list[pg.InfiniteLine] = []
        self._points: list[dict[str, Any]] = []

    def set_series(self, title: str, points: Sequence[Mapping[str, Any]], baseline_run_id: str | None = None,
                   change_points: Sequence[Mapping[str, Any]] = (), note: str = "",
                   colors: Mapping[str, str] | None = None) -> None:
        """Draw a series; `colors` maps a compared run's letter to its colour on the other charts."""
        item = self.plot.getPlotItem()
        item.clear()
        self.baseline_item, self.step_lines = None, []
        self._points = sorted((dict(p) for p in points), key=lambda p: p["t"])
        self.title.setText(title)
        t = np.array([p["t"] for p in self._points], dtype=np.float64)
        y = np.array([p["median_ms"] for p in self._points], dtype=np.float64)
        valid = np.array([bool(p.get("valid", True)) for p in self._points], dtype=bool)
        muted = theme.MUTED
        if t.size:
            item.plot(t, y, pen=pg.mkPen(theme.tint(muted, 0.6), width=1.5))
            if valid.any():
                item.plot(t[valid], y[valid], pen=None, symbol="o", symbolSize=8, symbolBrush=muted,
                          symbolPen=pg.mkPen(muted))
            if (~valid).any():
                item.plot(t[~valid], y[~valid], pen=None, symbol="o", symbolSize=8, symbolBrush=theme.BACKGROUND,
                          symbolPen=pg.mkPen(muted, width=1.5))
        for p in self._points:
            letter = p.get("letter")
            if not letter:
                continue
            color = (colors or {}).get(letter, theme.FOREGROUND)
            item.plot([p["t"]], [p["median_ms"]], pen=None, symbol="o", symbolSize=13, symbolBrush=color,
                      symbolPen=pg.mkPen(theme.FOREGROUND, width=1))
            label = pg.TextItem(letter, color=color, anchor=(-0.4, 0.5))  # right of its dot: never above the top
            label.setFont(theme.font(theme.BASE_PT, bold=True))
            label.setPos(p["t"], p["median_ms"])
            item.addItem(label)
        baseline = next((p for p in self._points if baseline_run_id and p["run_id"] == baseline_run_id), None)
        if baseline is not None:
            self.baseline_item = item.plot([baseline["t"]], [baseline["median_ms"]], pen=None, symbol="star",
                                           symbolSize=22, symbolBrush=BASELINE_COLOR,
                                           symbolPen=pg.mkPen("#222222", width=1))
            self.baseline_item.setZValue(10)
            tag = pg.TextItem("baseline", color=theme.FOREGROUND, anchor=(0.5, -0.6))
            tag.setPos(baseline["t"], baseline["median_ms"])
            item.addItem(tag)
        for step in change_points:
            if step.get("t") is None:
                continue
            slower = step.get("direction") in ("slower", "up")
            color = theme.BAD if slower else theme.GOOD
            ratio = float(step["ratio"])
            text = f"{'+' if ratio >= 1 else '−'}{abs(ratio - 1) * 100:.1f}%"
            if step.get("p_value") is not None:
                text += f" (p {format_number(step['p_value'], 2)})"
            line = pg.InfiniteLine(pos=step["t"], angle=90, pen=pg.mkPen(color, width=2,
                                                                        style=QtCore.Qt.PenStyle.DashLine),
                                   label=text, labelOpts={"position": 0.92, "color": color, "fill": theme.BACKGROUND})
            item.addItem(line)
            self.step_lines.append(line)
        if t.size == 1:  # one run: a day either side, or the date axis has no span to label
            item.setXRange(t[0] - 86400, t[0] + 86400)
        else:
            item.enableAutoRange()
        marks = [f"{len(self._points)} completed run{'s' if len(self._points) != 1 else ''}"]
        if baseline is not None:
            marks.append("★ baseline")
        elif baseline_run_id:
            marks.append("the baseline run has no median to draw")
        else:
            marks.append("no baseline (History ▸ Set as baseline)")
        if change_points:
            marks.append(f"{len(change_points)} change point{'s' if len(change_points) != 1 else ''} (dashed)")
        if (~valid).any():
            marks.append("hollow: invalid, left out of change points")
        self.note.setText(" · ".join(marks + ([note] if note else [])))

    def plotted(self) -> list[tuple[float, float]]:
        return [(p["t"], p["median_ms"]) for p in self._points]

    def axis_labels(self) -> tuple[str, str]:
        item = self.plot.getPlotItem()
        return item.getAxis("bottom").labelText, item.getAxis("left").labelText
