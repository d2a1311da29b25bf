"""Scaling efficiency E(N) against the rank count: one curve per knob value, each point with its 95% interval as a
bar, the ideal E = 1 as a dashed line, and (on demand) the global samples/s on a right-hand axis.

A pure view fed plain data (console.scaling.series' result: {"curves": [{"name", "points": [{"ranks", "e",
"interval_95", "samples_per_s", "e_missing"}]}]}). The x axis is log2 of the rank count, ticked at the counts that
were measured (1, 2, 4, 8 …), since scaling is read by doublings. A point without E is left out (never drawn as 0)
and the caption says why. Clicking a point selects it (`sig_point_selected`): the page then shows its waterfall.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import pyqtgraph as pg
from PySide6 import QtCore, QtWidgets

from widgets import chart_export, layouts, theme
from widgets.plot_style import style_plot

X_LABEL = "ranks (log2 axis)"
Y_LABEL = "scaling efficiency E(N)"
RIGHT_LABEL = "global samples/s"
IDEAL = 1.0


class RanksAxis(pg.AxisItem):
    """Ticks at the measured rank counts (their log2), labelled as counts."""

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.ranks: list[int] = []

    def tickValues(self, minVal: float, maxVal: float, size: float):  # noqa: N802,N803 — pyqtgraph's names
        shown = [math.log2(n) for n in self.ranks if minVal - 1e-9 <= math.log2(n) <= maxVal + 1e-9]
        return [(1.0, shown)] if shown else super().tickValues(minVal, maxVal, size)

    def tickStrings(self, values, scale, spacing):  # noqa: N802 — pyqtgraph's name
        return [f"{2.0 ** v:.0f}" for v in values]


def points_of(curve: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The curve's points that have an E, by rank count."""
    return sorted((dict(p) for p in curve.get("points") or []
                   if isinstance(p.get("e"), (int, float)) and isinstance(p.get("ranks"), int) and p["ranks"] > 0),
                  key=lambda p: p["ranks"])


class ScalingCurve(QtWidgets.QWidget):
    """`set_series(series)` draws it; `select(curve, ranks)` marks a point (as a click does); `clear()` empties."""

    sig_point_selected = QtCore.Signal(object)  # {"curve": name, "ranks": N}

    def __init__(self, parent: QtWidgets.QWidget | None = None):
        super().__init__(parent)
        self.axis = RanksAxis("bottom")
        self.plot_widget = pg.PlotWidget(background=theme.BACKGROUND, axisItems={"bottom": self.axis})
        self.plot = self.plot_widget.getPlotItem()
        style_plot(self.plot, X_LABEL, Y_LABEL)
        self.plot.setMenuEnabled(False)
        self.legend = self.plot.addLegend(offset=(-10, -10), labelTextColor=theme.FOREGROUND,
                                          labelTextSize=f"{theme.BASE_PT}pt")
        self.title = theme.title_label("Scaling efficiency E(N) = X(N) ÷ (N · X(1))")
        chart_export.set_title(self.plot, self.title)
        self.rate_box = QtWidgets.QCheckBox("also samples/s (right axis)")
        self.rate_box.setToolTip("global samples per measured second of each point, dashed, on the right axis")
        self.rate_box.toggled.connect(lambda _on: self._redraw())
        self.caption = theme.caption_label()
        layouts.column(self, layouts.row((self.title, 1), self.rate_box), (self.plot_widget, 1), self.caption)
        self.plot_widget.setMinimumHeight(180)
        self.rate_view = pg.ViewBox()
        self.rate_view.setMouseEnabled(x=False, y=False)
        self.plot.scene().addItem(self.rate_view)
        self.plot.getAxis("right").linkToView(self.rate_view)
        self.rate_view.setXLink(self.plot)
        self.plot.vb.sigResized.connect(self._sync_rate_view)
        self.series: dict[str, Any] | None = None
        self.selected: tuple[str, int] | None = None
        self.scatters: dict[str, pg.ScatterPlotItem] = {}  # curve name → its points
        self.error_bars: dict[str, pg.ErrorBarItem] = {}
        self.rate_lines: dict[str, pg.PlotDataItem] = {}
        self.marker: pg.ScatterPlotItem | None = None
        self.ideal_line: pg.InfiniteLine | None = None

    # ---- Public API
    @property
    def show_rate(self) -> bool:
        return self.rate_box.isChecked()

    def set_series(self, series: Mapping[str, Any] | None) -> None:
        self.series = dict(series) if series else None
        self.selected = None
        self._redraw()

    def clear(self, message: str = "No scaling series shown.") -> None:
        self.set_series(None)
        self.caption.setText(message)

    def select(self, curve: str, ranks: int) -> bool:
        """Mark the point of `curve` at `ranks` and say so (sig_point_selected); False when there is none."""
        if not any(p["ranks"] == ranks for c in self._curves() if c.get("name") == curve for p in points_of(c)):
            return False
        self.selected = (curve, ranks)
        self._draw_marker()
        self.sig_point_selected.emit({"curve": curve, "ranks": ranks})
        return True

    def point_position(self, curve: str, ranks: int) -> QtCore.QPoint:
        """Where the point is drawn, in the plot view's viewport coordinates (for a click)."""
        point = next(p for c in self._curves() if c.get("name") == curve for p in points_of(c) if p["ranks"] == ranks)
        scene = self.plot.vb.mapViewToScene(QtCore.QPointF(math.log2(ranks), point["e"]))
        return self.plot_widget.mapFromScene(scene)

    # ---- Private API
    def _curves(self) -> list[Mapping[str, Any]]:
        return [c for c in (self.series or {}).get("curves") or [] if isinstance(c, Mapping)]

    def _redraw(self) -> None:
        self.plot.clear()
        self.legend.clear()
        self.rate_view.clear()
        self.scatters.clear()
        self.error_bars.clear()
        self.rate_lines.clear()
        self.marker = None
        show_rate = self.show_rate and self.series is not None
        self.plot.showAxis("right", show_rate)
        if show_rate:
            right = self.plot.getAxis("right")
            right.setLabel(RIGHT_LABEL, **{"color": theme.FOREGROUND, "font-size": f"{theme.AXIS_LABEL_PT}pt"})
            right.setPen(pg.mkPen(theme.FOREGROUND))
            right.setTextPen(pg.mkPen(theme.FOREGROUND))
        if self.series is None:
            self.axis.ranks = []
            self.caption.setText("No scaling series shown.")
            return
        ranks = sorted({p["ranks"] for c in self._curves() for p in c.get("points") or []
                        if isinstance(p.get("ranks"), int) and p["ranks"] > 0})
        self.axis.ranks = ranks
        self.ideal_line = pg.InfiniteLine(pos=IDEAL, angle=0, movable=False,
                                          pen=pg.mkPen(theme.MUTED, width=1.5, style=QtCore.Qt.PenStyle.DashLine),
                                          label="ideal E = 1", labelOpts={"position": 0.05, "color": theme.MUTED})
        self.plot.addItem(self.ideal_line)
        palette = theme.PALETTE
        top = IDEAL
        for index, curve in enumerate(self._curves()):
            name = str(curve.get("name") or f"curve {index + 1}")
            points = points_of(curve)
            color = palette[index % len(palette)]
            if points:
                xs = [math.log2(p["ranks"]) for p in points]
                es = [float(p["e"]) for p in points]
                self.plot.plot(xs, es, pen=pg.mkPen(color, width=2.5), name=name)
                lows = [p["e"] - p["interval_95"][0] if _interval(p) else 0.0 for p in points]
                highs = [p["interval_95"][1] - p["e"] if _interval(p) else 0.0 for p in points]
                bars = pg.ErrorBarItem(x=_array(xs), y=_array(es), top=_array(highs), bottom=_array(lows),
                                       beam=0.08, pen=pg.mkPen(color, width=1.5))
                self.plot.addItem(bars)
                self.error_bars[name] = bars
                scatter = pg.ScatterPlotItem(x=xs, y=es, size=11, brush=pg.mkBrush(color), pen=pg.mkPen(color),
                                             data=[{"curve": name, "ranks": p["ranks"]} for p in points],
                                             hoverable=True,
                                             tip=lambda x, y, data: f"{data['curve']}: E({data['ranks']}) = {y:.3f}")
                scatter.sigClicked.connect(self._clicked)
                self.plot.addItem(scatter)
                self.scatters[name] = scatter
                top = max(top, *(p["e"] + h for p, h in zip(points, highs, strict=True)))
            if show_rate:
                rated = [p for p in curve.get("points") or [] if isinstance(p.get("samples_per_s"), (int, float))
                         and isinstance(p.get("ranks"), int) and p["ranks"] > 0]
                rated.sort(key=lambda p: p["ranks"])
                if rated:
                    line = pg.PlotDataItem([math.log2(p["ranks"]) for p in rated],
                                           [p["samples_per_s"] for p in rated], symbol="s", symbolSize=6,
                                           symbolBrush=color, symbolPen=color,
                                           pen=pg.mkPen(color, width=1.5, style=QtCore.Qt.PenStyle.DashLine))
                    self.rate_view.addItem(line)
                    self.rate_lines[name] = line
        if ranks:
            self.plot.setXRange(math.log2(ranks[0]) - 0.3, math.log2(ranks[-1]) + 0.3, padding=0)
        self.plot.setYRange(0.0, top * 1.08, padding=0)
        if show_rate:
            self.rate_view.enableAutoRange(axis=pg.ViewBox.YAxis)
            self._sync_rate_view()
        self.caption.setText(self._caption_text())
        if self.selected is not None:  # a redraw (the samples/s box) keeps the chosen point marked
            self._draw_marker()

    def _caption_text(self) -> str:
        series = self.series or {}
        text = (f"{series.get('scaling', 'strong')} scaling · X = global samples per measured second · bars: 95% "
                "bootstrap interval of the step times (a floor: consecutive steps are autocorrelated) · click a "
                "point for its waterfall.")
        missing = [f"{c.get('name')}: N={p.get('ranks')} — {p.get('e_missing')}" for c in self._curves()
                   for p in c.get("points") or [] if p.get("e") is None and p.get("e_missing")]
        if missing:
            text += " Not drawn (no E): " + "; ".join(missing[:3]) + (" …" if len(missing) > 3 else "") + "."
        return text

    def _clicked(self, scatter: pg.ScatterPlotItem, spots: Any, *_: Any) -> None:
        if len(spots):
            chosen = spots[0].data()
            self.select(chosen["curve"], chosen["ranks"])

    def _draw_marker(self) -> None:
        if self.marker is not None:
            self.plot.removeItem(self.marker)
            self.marker = None
        if self.selected is None:
            return
        curve, ranks = self.selected
        point = next(p for c in self._curves() if c.get("name") == curve for p in points_of(c) if p["ranks"] == ranks)
        self.marker = pg.ScatterPlotItem(x=[math.log2(ranks)], y=[point["e"]], size=22, brush=pg.mkBrush(None),
                                         pen=pg.mkPen(theme.FOREGROUND, width=2))
        self.plot.addItem(self.marker)

    def _sync_rate_view(self) -> None:
        self.rate_view.setGeometry(self.plot.vb.sceneBoundingRect())
        self.rate_view.linkedViewChanged(self.plot.vb, self.rate_view.XAxis)


def _interval(point: Mapping[str, Any]) -> bool:
    interval = point.get("interval_95")
    return isinstance(interval, (list, tuple)) and len(interval) == 2 and None not in interval


def _array(values: list[float]) -> Any:
    import numpy as np

    return np.asarray(values, dtype=float)
