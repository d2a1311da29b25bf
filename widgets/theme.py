"""Colours, fonts and plot styling shared by every widget.

The console is also shown on a big screen to people who did not set up the run, so every view uses the same light
background, dark text, large type, and one colour per meaning (run status, run phase, series).
"""

from __future__ import annotations

import pyqtgraph as pg
from PySide6 import QtGui

BACKGROUND = "#ffffff"
FOREGROUND = "#222222"
MUTED = "#666666"
BORDER = "#d0d0d0"
PANEL = "#f5f6f8"  # placeholder and card backgrounds
GOOD = "#2e7d32"
BAD = "#c62828"

# Tableau 10: distinct, colour-blind friendlier, prints well.
PALETTE = (
    "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
    "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf",
)
LATENCY_COLOR = "#4c78a8"
P50_COLOR = "#f58518"
P99_COLOR = "#c62828"

STATUS_COLORS = {
    "completed": "#2e7d32",
    "failed": "#c62828",
    "interrupted": "#e65100",
    "cancelled": "#757575",
    "running": "#1565c0",
}
PHASE_COLORS = {
    "loading": "#f2a900",
    "warmup": "#ff7043",
    "measuring": "#43a047",
    "profiling": "#8e24aa",
}
DEFAULT_PHASE_COLOR = "#9e9e9e"

SMALL_PT = 10
BASE_PT = 11
AXIS_LABEL_PT = 12
TITLE_PT = 14
FIGURE_PT = 22


def font(point_size: float, bold: bool = False) -> QtGui.QFont:
    f = QtGui.QFont()
    f.setPointSizeF(point_size)
    f.setBold(bold)
    return f


def qcolor(color: str, alpha: int = 255) -> QtGui.QColor:
    c = QtGui.QColor(color)
    c.setAlpha(alpha)
    return c


def tint(color: str, strength: float) -> QtGui.QColor:
    """An opaque colour between the background and `color`. Curves use this rather than alpha: Qt strokes a
    translucent polyline through its path stroker, which is 10-100× slower on dense data."""
    base, top = QtGui.QColor(BACKGROUND), QtGui.QColor(color)
    mix = [round(b + (t - b) * strength) for b, t in zip(base.getRgb()[:3], top.getRgb()[:3], strict=True)]
    return QtGui.QColor(*mix)


def phase_color(label: str) -> str:
    return PHASE_COLORS.get(label.strip().lower(), DEFAULT_PHASE_COLOR)


def style_plot(plot: pg.PlotItem, x_label: str, y_label: str) -> None:
    """Axis pens, large tick and label fonts, a faint grid; labels carry their unit in the text.

    pyqtgraph's automatic SI prefixes are off: "latency (ms)" must never turn into "latency (kms)".
    """
    tick_font = font(BASE_PT)
    for name, text in (("bottom", x_label), ("left", y_label)):
        axis = plot.getAxis(name)
        axis.enableAutoSIPrefix(False)
        axis.setPen(pg.mkPen(FOREGROUND))
        axis.setTextPen(pg.mkPen(FOREGROUND))
        axis.setStyle(tickFont=tick_font, tickTextOffset=6)
        axis.setLabel(text, **{"color": FOREGROUND, "font-size": f"{AXIS_LABEL_PT}pt"})
    plot.showGrid(x=True, y=True, alpha=0.15)
    plot.hideButtons()

