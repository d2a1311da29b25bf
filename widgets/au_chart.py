"""Accelerator utilization against the number of emulated accelerators, with the workload's pass threshold.

A pure view fed plain data (console.storage.charts.feed_chart)::

    {"series": [[1, 99.2], [2, 98.7], [4, 93.1], [8, 61.0]], "threshold": 90.0, "max_passing": 5,
     "per_accelerator": [[8, 60.2], [8, 61.9]], "workload": "unet3d", "note": "limited by: the device"}

Why this chart: the feed benchmark's answer is "the largest N whose AU stays at or above the threshold", and the
curve shows how sharply AU falls past it (a storage limit falls like 1/N; a reader limit earlier). Points at or
above the threshold are filled, those below hollow; the largest passing N is a gold star; the threshold is a
dashed line with its value. Per-accelerator AU (a fixed-N run) are small dots at their N, so a straggler shows.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pyqtgraph as pg
from PySide6 import QtCore, QtWidgets

from widgets import layouts, theme
from widgets.plot_style import style_plot

STAR_COLOR = "#f2b400"


class AuChart(QtWidgets.QWidget):
    """`set_data(data)` redraws; `clear()` empties (with a hint)."""

    # ---- Public API
    def __init__(self, parent: QtWidgets.QWidget | None = None):
        super().__init__(parent)
        self.title = theme.title_label("Accelerator utilization vs emulated accelerators")
        self.plot = pg.PlotWidget(background=theme.BACKGROUND)
        self.plot.setMinimumHeight(170)
        style_plot(self.plot.getPlotItem(), "emulated accelerators", "AU (%)")
        self.note = theme.caption_label()
        layouts.column(self, self.title, (self.plot, 1), self.note)
        self.threshold_line: pg.InfiniteLine | None = None
        self.star: pg.ScatterPlotItem | None = None
        self.data: dict[str, Any] = {}
        self.clear()

    def clear(self, hint: str = "No feed result yet: run one, or it appears here from the history.") -> None:
        self.plot.getPlotItem().clear()
        self.threshold_line, self.star, self.data = None, None, {}
        self.note.setText(hint)

    def set_data(self, data: Mapping[str, Any]) -> None:
        self.clear("")
        self.data = dict(data)
        item = self.plot.getPlotItem()
        series = [(float(n), float(au)) for n, au in data.get("series") or []]
        threshold = data.get("threshold")
        passing = [(n, au) for n, au in series if threshold is None or au >= threshold]
        failing = [(n, au) for n, au in series if threshold is not None and au < threshold]
        color = theme.PALETTE[0]
        if series:
            xs, ys = zip(*series, strict=True)
            item.plot(list(xs), list(ys), pen=pg.mkPen(color, width=2.5))
        if passing:
            item.addItem(pg.ScatterPlotItem([p[0] for p in passing], [p[1] for p in passing], size=11,
                                            brush=pg.mkBrush(color), pen=pg.mkPen(theme.BACKGROUND)))
        if failing:
            item.addItem(pg.ScatterPlotItem([p[0] for p in failing], [p[1] for p in failing], size=11,
                                            brush=pg.mkBrush(theme.BACKGROUND), pen=pg.mkPen(theme.BAD, width=2)))
        per = data.get("per_accelerator") or []
        if per:
            item.addItem(pg.ScatterPlotItem([float(n) for n, _ in per], [float(au) for _, au in per], size=6,
                                            brush=pg.mkBrush(theme.MUTED), pen=None))
        if threshold is not None:
            self.threshold_line = pg.InfiniteLine(
                pos=float(threshold), angle=0, pen=pg.mkPen(theme.BAD, width=2, style=QtCore.Qt.PenStyle.DashLine),
                label=f"threshold {threshold:g}%", labelOpts={"position": 0.12, "color": theme.BAD,
                                                              "anchors": [(0, 1), (0, 1)]})
            item.addItem(self.threshold_line)
        best = data.get("max_passing")
        at_best = [au for n, au in series if best is not None and n == float(best)]
        if best and at_best:
            self.star = pg.ScatterPlotItem([float(best)], [at_best[0]], symbol="star", size=22,
                                           brush=pg.mkBrush(STAR_COLOR), pen=pg.mkPen("#222222"))
            item.addItem(self.star)
        top = max([100.0, *(au for _, au in series), *(float(au) for _, au in per)])
        item.setYRange(0, top * 1.05, padding=0)
        if series:
            item.setXRange(0, max(n for n, _ in series) * 1.08 + 0.5, padding=0)
        self.note.setText(self._note(data, series, best))

    # ---- Private API
    def _note(self, data: Mapping[str, Any], series: list[tuple[float, float]], best: Any) -> str:
        parts = []
        if data.get("workload"):
            parts.append(f"workload {data['workload']}")
        if best is not None and len(series) > 1:
            parts.append(f"largest N at or above the threshold: {best} (★)")
        elif len(series) == 1:
            parts.append(f"{series[0][0]:g} accelerators measured (no search)")
        if not series:
            parts.append("no AU measured")
        parts.append("filled: at or above the threshold; hollow: below. AU excludes each accelerator's first step.")
        if data.get("note"):
            parts.append(str(data["note"]))
        return " · ".join(parts)
