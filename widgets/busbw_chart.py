"""Collective bandwidth against message size: busbw (GB/s) per op, one line per op, algbw dashed on demand.

A pure view fed a collectives result (docs/topology.md "## Collectives"): result["ops"][op] is a list of points
{"size_bytes", "time_us", "algbw_gbs", "busbw_gbs", ...}. Why busbw: nccl-tests' bus bandwidth (algbw × 2(n−1)/n
for all-reduce, (n−1)/n for the gathers and all-to-all, 1 for broadcast and reduce) is comparable across rank
counts and with the link's speed; algbw (size ÷ time) is what a caller sees, drawn dashed in the op's colour when
asked for. The x axis is log2 of the size, ticked in B / KiB / MiB / GiB, since sizes sweep 8 B to 1 GiB by powers.
A point without a figure is left out, never drawn as 0.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import pyqtgraph as pg
from PySide6 import QtCore, QtWidgets

from widgets import chart_export, layouts, theme
from widgets.plot_style import style_plot

X_LABEL = "message size (log2 axis)"
Y_LABEL = "bus bandwidth (GB/s)"
TICK_PX = 55  # room one size label needs on the axis


def size_text(size_bytes: float) -> str:
    """8 → '8 B', 4096 → '4 KiB', 3 MiB → '3 MiB' (binary units, as the sizes are powers of two)."""
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if size_bytes >= scale:
            value = size_bytes / scale
            return f"{value:.0f} {unit}" if value == int(value) else f"{value:.1f} {unit}"
    return f"{size_bytes:.0f} B"


class Log2SizeAxis(pg.AxisItem):
    """Ticks at whole powers of two (every 2nd, 4th or 8th when the axis is short), labelled in binary units."""

    def tickValues(self, minVal: float, maxVal: float, size: float):  # noqa: N802,N803 — pyqtgraph's names
        if not (math.isfinite(minVal) and math.isfinite(maxVal)) or maxVal <= minVal:
            return []
        low, high = math.ceil(minVal), math.floor(maxVal)
        span = max(high - low, 1)
        step = next((s for s in (1, 2, 4, 8) if span / s * TICK_PX <= size), 8)  # labels never overlap
        major = [float(v) for v in range(low, high + 1) if v % step == 0]
        return [(float(step), major)]

    def tickStrings(self, values, scale, spacing):  # noqa: N802 — pyqtgraph's name
        return [size_text(2.0**v) for v in values]


def series_of(result: Mapping[str, Any], figure: str = "busbw_gbs") -> dict[str, tuple[list[float], list[float]]]:
    """op → (log2 sizes, figure values) from a result, points without a positive size or a number left out."""
    series: dict[str, tuple[list[float], list[float]]] = {}
    for op, points in (result.get("ops") or {}).items():
        xs, ys = [], []
        for point in points or []:
            size, value = point.get("size_bytes"), point.get(figure)
            if isinstance(size, (int, float)) and size > 0 and isinstance(value, (int, float)) and \
                    math.isfinite(value):
                xs.append(math.log2(size))
                ys.append(float(value))
        if xs:
            series[str(op)] = (xs, ys)
    return series


class BusbwChart(QtWidgets.QWidget):
    """`set_result(result)` draws one busbw line per op (and algbw dashed when `show_algbw`); `clear()` empties."""

    def __init__(self, parent: QtWidgets.QWidget | None = None):
        super().__init__(parent)
        self.plot_widget = pg.PlotWidget(background=theme.BACKGROUND, axisItems={"bottom": Log2SizeAxis("bottom")})
        self.plot = self.plot_widget.getPlotItem()
        style_plot(self.plot, X_LABEL, Y_LABEL)
        self.plot.setMenuEnabled(False)
        self.legend = self.plot.addLegend(offset=(10, 10), labelTextColor=theme.FOREGROUND,
                                          labelTextSize=f"{theme.BASE_PT}pt")
        self.title = theme.title_label("Collectives: bus bandwidth by message size")
        chart_export.set_title(self.plot, self.title)
        self.algbw_box = QtWidgets.QCheckBox("also algbw (dashed)")
        self.algbw_box.setToolTip("algorithm bandwidth = size ÷ time: what the caller sees; busbw = algbw × the "
                                  "op's factor, comparable with the link's speed")
        self.algbw_box.toggled.connect(lambda _on: self._redraw())
        self.caption = theme.caption_label()
        layouts.column(self, layouts.row((self.title, 1), self.algbw_box), (self.plot_widget, 1), self.caption)
        self.result: dict[str, Any] | None = None
        self.lines: dict[str, pg.PlotDataItem] = {}  # op → busbw line
        self.algbw_lines: dict[str, pg.PlotDataItem] = {}
        self.plot_widget.setMinimumHeight(220)

    @property
    def show_algbw(self) -> bool:
        return self.algbw_box.isChecked()

    def set_result(self, result: Mapping[str, Any] | None) -> None:
        self.result = dict(result) if result else None
        self._redraw()

    def clear(self) -> None:
        self.set_result(None)

    def _redraw(self) -> None:
        self.plot.clear()
        self.legend.clear()
        self.lines.clear()
        self.algbw_lines.clear()
        result = self.result
        if not result:
            self.caption.setText("No collectives result shown.")
            return
        palette = theme.PALETTE
        busbw = series_of(result, "busbw_gbs")
        algbw = series_of(result, "algbw_gbs") if self.show_algbw else {}
        for index, (op, (xs, ys)) in enumerate(busbw.items()):
            color = palette[index % len(palette)]
            line = self.plot.plot(xs, ys, pen=pg.mkPen(color, width=2.5), symbol="o", symbolSize=6,
                                  symbolBrush=color, symbolPen=color, name=f"{op} busbw")
            self.lines[op] = line
            if op in algbw:
                ax, ay = algbw[op]
                self.algbw_lines[op] = self.plot.plot(
                    ax, ay, pen=pg.mkPen(color, width=1.5, style=QtCore.Qt.PenStyle.DashLine), name=f"{op} algbw")
        self.plot.enableAutoRange()
        factors = result.get("busbw_factor") or {}
        where = f"{result.get('backend', '?')} · {result.get('ranks', '?')} ranks · {result.get('placement', '?')}" \
                f" · {result.get('dtype', '?')}"
        factor_text = ", ".join(f"{op} × {factor}" for op, factor in factors.items())
        missing = [op for op in (result.get("ops") or {}) if op not in busbw]
        text = f"{where}. busbw = algbw ({'size ÷ time'}) × the op's factor (nccl-tests): {factor_text or 'not given'}."
        if result.get("method"):
            text += f" Method: {result['method']}."
        if missing:
            text += f" No busbw figure for {', '.join(missing)} (nothing drawn, not 0)."
        self.caption.setText(text)
