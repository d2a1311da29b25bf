"""The roofline view: measured roofs, one dot per op sized by its share of time, the whole run's dot.

A pure view fed plain data (what ``console.analysis.roofline.chart_data`` returns)::

    {"precision": "fp32", "roofs": [{"name": "fp32", "peak_flops": 1e11, "selected": True}, ...],
     "bandwidth_bytes_s": 1e10, "ridge": 10.0,
     "dots": [{"op": "aten::addmm", "intensity": 62.0, "achieved_flops_s": 5e10, "share": 0.9,
               "bound": "compute", "efficiency": 0.5, "calls": 40}, ...],
     "run": {"op": "whole run", "intensity": ..., "achieved_flops_s": ...} | None,
     "not_drawn": ["aten::copy_"], "note": str | None}

Why log-log: intensities span 0.01–1000 FLOP/byte and rates several decades, and on log axes the memory roof
is a straight 45° line, so "below the ridge" reads at a glance. Compute-bound dots and memory-bound dots have
their own colours; the selected precision's roof is solid, the others dashed; hovering a dot names the op.
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

X_LABEL = "arithmetic intensity (FLOP/byte)"
Y_LABEL = "performance (FLOP/s)"
RUN_COLOR = "#f2b400"
HOVER_DECADES = 0.12  # a pointer within this many decades of a dot (in both axes) hovers it
_MIN_SIZE, _SIZE_RANGE = 8.0, 34.0


class RooflineChart(QtWidgets.QWidget):
    """`set_data(data)` draws the roofs and the dots; `clear()` empties the chart; hovering names the op."""

    # ---- Public API
    def __init__(self, parent: QtWidgets.QWidget | None = None):
        super().__init__(parent)
        self.title = theme.title_label("Roofline")
        self.title.setStyleSheet(f"color: {theme.FOREGROUND};")
        self.legend = QtWidgets.QLabel("")
        self.legend.setFont(theme.font(theme.BASE_PT))
        self.legend.setTextFormat(QtCore.Qt.TextFormat.RichText)
        self.legend.setWordWrap(True)
        self.plot = pg.PlotWidget(background=theme.BACKGROUND)
        style_plot(self.plot.getPlotItem(), X_LABEL, Y_LABEL)
        chart_export.set_title(self.plot, self.title)
        self.plot.getPlotItem().setLogMode(x=True, y=True)
        self.hover = QtWidgets.QLabel("")  # the hovered op, in words
        self.hover.setFont(theme.font(theme.BASE_PT))
        self.hover.setStyleSheet(f"color: {theme.FOREGROUND};")
        self.note = theme.caption_label()
        layout = QtWidgets.QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(2)
        for widget in (self.title, self.legend):
            layout.addWidget(widget)
        layout.addWidget(self.plot, 1)
        layout.addWidget(self.hover)
        layout.addWidget(self.note)
        # The plot itself keeps 150 px (two decades of each axis read). The whole chart's minimum is set, not left
        # to the layout: wrapped legend and note lines (5–6 at 360 px wide) do not count in a layout's minimum, and
        # under it they overlap the plot. (The Run page scrolls its plots and profile, so this does not set the
        # window's height.)
        self.plot.setMinimumHeight(150)
        self.setMinimumSize(360, 320)
        self.roof_items: list[Any] = []  # the drawn roofs, for tests
        self.dot_items: list[Any] = []
        self._points: list[tuple[float, float, dict[str, Any]]] = []  # (log10 x, log10 y, dot) for hovering
        self.plot.scene().sigMouseMoved.connect(self._mouse_moved)
        self.clear()

    def set_data(self, data: Mapping[str, Any]) -> None:
        self.clear()
        dots = [d for d in data.get("dots") or [] if _positive(d.get("intensity")) and _positive(d.get("achieved_flops_s"))]
        run = data.get("run") if data.get("run") and _positive(data["run"].get("intensity")) else None
        bandwidth = float(data.get("bandwidth_bytes_s") or 0.0)
        roofs = [r for r in data.get("roofs") or [] if _positive(r.get("peak_flops"))]
        x_low, x_high = self._x_range(dots, run, roofs, bandwidth)
        self._draw_roofs(roofs, bandwidth, x_low, x_high)
        self._draw_dots(dots, run)
        self.plot.getPlotItem().setXRange(math.log10(x_low), math.log10(x_high), padding=0.02)
        y_values = [r["peak_flops"] for r in roofs] + [d["achieved_flops_s"] for d in dots]
        y_values += [bandwidth * x_low] if bandwidth else []
        y_values += [run["achieved_flops_s"]] if run else []
        if y_values:
            self.plot.getPlotItem().setYRange(math.log10(min(y_values)) - 0.3, math.log10(max(y_values)) + 0.4,
                                              padding=0)
        self.legend.setText(self._legend(data, roofs, bandwidth, run))
        notes = []
        if data.get("not_drawn"):
            notes.append(f"Not drawn (no FLOPs counted, so no intensity): {', '.join(data['not_drawn'])}.")
        if data.get("note"):
            notes.append(str(data["note"]).capitalize() + ".")
        if not dots:
            notes.append("No op with both FLOPs and bytes to place on the roofline.")
        notes.append("Dot area ∝ share of op time; both axes logarithmic.")
        self.note.setText(" ".join(notes))

    def clear(self) -> None:
        self.plot.getPlotItem().clear()
        self.roof_items, self.dot_items, self._points = [], [], []
        self.legend.setText("")
        self.hover.setText("Hover a dot to name its op.")
        self.note.setText("No profile yet: analyse a run to see its ops against this machine's roofs.")

    def op_at(self, intensity: float, flops_s: float) -> dict[str, Any] | None:
        """The dot nearest (intensity, FLOP/s) within HOVER_DECADES in both axes, else None."""
        if intensity <= 0 or flops_s <= 0:
            return None
        x, y = math.log10(intensity), math.log10(flops_s)
        near = [(abs(px - x) + abs(py - y), dot) for px, py, dot in self._points
                if abs(px - x) <= HOVER_DECADES and abs(py - y) <= HOVER_DECADES]
        return min(near, key=lambda pair: pair[0])[1] if near else None

    @staticmethod
    def describe(dot: Mapping[str, Any]) -> str:
        """One line naming a dot's op and its figures (what hovering shows)."""
        parts = [f"{dot['op']}: {format_number(dot['intensity'])} FLOP/byte, "
                 f"{format_number(dot['achieved_flops_s'] / 1e9)} GFLOP/s"]
        if dot.get("share") is not None:
            parts.append(f"{format_number(100 * dot['share'])}% of op time")
        if dot.get("bound"):
            parts.append(f"{dot['bound']}-bound")
        if dot.get("efficiency") is not None:
            parts.append(f"{format_number(100 * dot['efficiency'])}% of its roof")
        if dot.get("calls"):
            parts.append(f"{dot['calls']} calls")
        return ", ".join(parts)

    # ---- Private API
    @staticmethod
    def _x_range(dots: list[dict[str, Any]], run: dict[str, Any] | None, roofs: list[dict[str, Any]],
                 bandwidth: float) -> tuple[float, float]:
        xs = [d["intensity"] for d in dots] + ([run["intensity"]] if run else [])
        xs += [r["peak_flops"] / bandwidth for r in roofs] if bandwidth else []
        if not xs:
            return 0.01, 1000.0
        return min(xs) / 8.0, max(xs) * 8.0

    def _draw_roofs(self, roofs: list[dict[str, Any]], bandwidth: float, x_low: float, x_high: float) -> None:
        plot = self.plot.getPlotItem()
        if bandwidth and roofs:
            top_ridge = max(r["peak_flops"] for r in roofs) / bandwidth
            xs = np.array([x_low, top_ridge])
            line = plot.plot(xs, bandwidth * xs, pen=pg.mkPen(theme.FOREGROUND, width=2.5))
            self.roof_items.append(("memory", line))
            label = pg.TextItem(f"memory {format_number(bandwidth / 1e9)} GB/s", color=theme.FOREGROUND,
                                anchor=(0, 1))
            plot.addItem(label)
            label.setPos(math.log10(x_low * 1.3), math.log10(bandwidth * x_low * 6))  # above the line, not on it
        for index, roof in enumerate(sorted(roofs, key=lambda r: r["peak_flops"])):
            ridge = roof["peak_flops"] / bandwidth if bandwidth else x_low
            style = QtCore.Qt.PenStyle.SolidLine if roof.get("selected") else QtCore.Qt.PenStyle.DashLine
            color = theme.PALETTE[(index + 2) % len(theme.PALETTE)]
            line = plot.plot(np.array([ridge, x_high]), np.array([roof["peak_flops"]] * 2),
                             pen=pg.mkPen(color, width=2.5 if roof.get("selected") else 1.8, style=style))
            self.roof_items.append((roof["name"], line))
            label = pg.TextItem(f"{roof['name']} {format_number(roof['peak_flops'] / 1e9)} GFLOP/s", color=color,
                                anchor=(1, 1.1))
            plot.addItem(label)
            label.setPos(math.log10(x_high), math.log10(roof["peak_flops"]))

    def _draw_dots(self, dots: list[dict[str, Any]], run: dict[str, Any] | None) -> None:
        plot = self.plot.getPlotItem()
        for bound, color in (("compute", theme.PALETTE[0]), ("memory", theme.PALETTE[1]), (None, theme.MUTED)):
            group = [d for d in dots if (d.get("bound") if d.get("bound") in ("compute", "memory") else None) == bound]
            if not group:
                continue
            sizes = [_MIN_SIZE + _SIZE_RANGE * math.sqrt(max(0.0, min(1.0, float(d.get("share") or 0.0))))
                     for d in group]
            item = plot.plot([d["intensity"] for d in group], [d["achieved_flops_s"] for d in group], pen=None,
                             symbol="o", symbolSize=sizes, symbolBrush=theme.tint(color, 0.75),
                             symbolPen=pg.mkPen(color, width=1.5), name=f"{bound}-bound op" if bound else "op")
            self.dot_items.append((bound or "unbound", item))
            self._points += [(math.log10(d["intensity"]), math.log10(d["achieved_flops_s"]), d) for d in group]
        if run:
            item = plot.plot([run["intensity"]], [run["achieved_flops_s"]], pen=None, symbol="star", symbolSize=24,
                             symbolBrush=RUN_COLOR, symbolPen=pg.mkPen("#222222", width=1.2), name="whole run")
            self.dot_items.append(("run", item))
            self._points.append((math.log10(run["intensity"]), math.log10(run["achieved_flops_s"]),
                                 {**run, "op": run.get("op") or "whole run"}))

    def _legend(self, data: Mapping[str, Any], roofs: list[dict[str, Any]], bandwidth: float,
                run: dict[str, Any] | None) -> str:
        entries = [_swatch(theme.PALETTE[0], "●", "compute-bound op"), _swatch(theme.PALETTE[1], "●", "memory-bound op")]
        if run:
            entries.append(_swatch(RUN_COLOR, "★", "whole run"))
        if bandwidth and roofs:
            selected = next((r for r in roofs if r.get("selected")), roofs[0])
            entries.append(f"ridge {format_number(selected['peak_flops'] / bandwidth)} FLOP/byte "
                           f"({data.get('precision', selected['name'])})")
        return "&nbsp;&nbsp;&nbsp;".join(entries)

    def _mouse_moved(self, position: QtCore.QPointF) -> None:
        view = self.plot.getPlotItem().getViewBox()
        if not view.sceneBoundingRect().contains(position):
            return
        point = view.mapSceneToView(position)
        dot = self.op_at(10 ** point.x(), 10 ** point.y())
        self.hover.setText(self.describe(dot) if dot else "Hover a dot to name its op.")
        self.plot.setToolTip(self.describe(dot) if dot else "")


def _swatch(color: str, mark: str, text: str) -> str:
    return f"<span style='color:{color}; font-size:14pt'>{mark}</span>&nbsp;{text}"


def _positive(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) and x > 0
