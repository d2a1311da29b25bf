"""Throughput as a heat map: block size (rows) × queue depth (columns), MB/s in every cell, the knee outlined.

A pure view fed plain data (console.storage.charts.sweep_chart)::

    {"maps": {"read/seq": {"x": [1, 4, 16], "y": [4096, 65536, 1048576], "mb_s": [[row per y: value per x]]}},
     "knees": {"read/seq": {"x": 4, "y": 65536, "text": "64 KiB at QD 4 gives 92% of the best"}},
     "y_labels": {4096: "4 KiB", ...}, "engine": "built-in"}

Why a heat map: a loader's question is which block size and how many requests in flight reach the device's
throughput, and where more stops paying; in a grid the plateau and its edge (the knee) are seen at once. Each
cell prints its MB/s (a colour alone cannot be read back); a missing point is grey and says "—", never 0. One map
at a time, picked by (reads or writes, sequential or random).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np
import pyqtgraph as pg
from PySide6 import QtCore, QtGui, QtWidgets

from widgets import theme
from widgets.plot_style import style_plot

KNEE_COLOR = "#f2b400"
COLORMAP = "viridis"


class IoHeatmap(QtWidgets.QWidget):
    """`set_data(data)` redraws; the combo picks the (rw, pattern) map; `clear()` empties."""

    sig_map_changed = QtCore.Signal(str)

    # ---- Public API
    def __init__(self, parent: QtWidgets.QWidget | None = None):
        super().__init__(parent)
        self.title = theme.title_label("Throughput: block size × queue depth")
        self.choice = QtWidgets.QComboBox()
        self.choice.setToolTip("which map: reads or writes, sequential or random")
        self.choice.currentTextChanged.connect(self._show)
        top = QtWidgets.QHBoxLayout()
        top.addWidget(self.title, 1)
        top.addWidget(self.choice)
        self.plot = pg.PlotWidget(background=theme.BACKGROUND)
        self.plot.setMinimumHeight(170)
        style_plot(self.plot.getPlotItem(), "queue depth (requests in flight)", "block size")
        self.plot.getPlotItem().showGrid(x=False, y=False)
        self.plot.setMouseEnabled(x=False, y=False)
        self.note = theme.caption_label()
        layout = QtWidgets.QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addLayout(top)
        layout.addWidget(self.plot, 1)
        layout.addWidget(self.note)
        self.data: dict[str, Any] = {}
        self.cell_texts: list[pg.TextItem] = []
        self.knee_item: QtWidgets.QGraphicsRectItem | None = None
        self.clear()

    def clear(self, hint: str = "No I/O sweep yet: run one, or it appears here from the history.") -> None:
        self.plot.getPlotItem().clear()
        self.cell_texts, self.knee_item, self.data = [], None, {}
        self.choice.blockSignals(True)
        self.choice.clear()
        self.choice.blockSignals(False)
        self.choice.setVisible(False)
        self.note.setText(hint)

    def set_data(self, data: Mapping[str, Any]) -> None:
        current = self.choice.currentText()
        self.clear("")
        self.data = dict(data)
        keys = list((data.get("maps") or {}).keys())
        if not keys:
            self.note.setText("The sweep stored no heat map.")
            return
        self.choice.blockSignals(True)
        self.choice.addItems(keys)
        self.choice.setCurrentText(current if current in keys else keys[0])
        self.choice.blockSignals(False)
        self.choice.setVisible(len(keys) > 1)
        self._show(self.choice.currentText())

    def current_map(self) -> str:
        return self.choice.currentText()

    # ---- Private API
    def _show(self, key: str) -> None:
        item = self.plot.getPlotItem()
        item.clear()
        self.cell_texts, self.knee_item = [], None
        block = (self.data.get("maps") or {}).get(key)
        if not block:
            return
        xs, ys = list(block["x"]), list(block["y"])
        grid = np.full((len(ys), len(xs)), np.nan)
        for row, values in enumerate(block.get("mb_s") or []):
            for col, value in enumerate(values or []):
                if row < len(ys) and col < len(xs) and _finite(value):
                    grid[row, col] = float(value)
        finite = grid[np.isfinite(grid)]
        low, high = (float(finite.min()), float(finite.max())) if finite.size else (0.0, 1.0)
        cmap = pg.colormap.get(COLORMAP)
        for row in range(len(ys)):
            for col in range(len(xs)):
                value = grid[row, col]
                if math.isfinite(value):
                    share = 0.0 if high <= low else (value - low) / (high - low)
                    color = cmap.map(share, mode="qcolor")
                else:
                    color = theme.qcolor(theme.PANEL)
                rect = QtWidgets.QGraphicsRectItem(col, row, 1, 1)
                rect.setBrush(QtGui.QBrush(color))
                border = QtGui.QPen(theme.qcolor(theme.BACKGROUND), 2)
                border.setCosmetic(True)
                rect.setPen(border)
                item.addItem(rect)
                text_color = "#111111" if math.isfinite(value) and share > 0.55 else "#f5f5f5"
                if not math.isfinite(value):
                    text_color = theme.MUTED
                label = pg.TextItem(_mb(value), color=text_color, anchor=(0.5, 0.5))
                label.setFont(theme.font(theme.BASE_PT, bold=True))
                label.setPos(col + 0.5, row + 0.5)
                item.addItem(label)
                self.cell_texts.append(label)
        knee = (self.data.get("knees") or {}).get(key) or {}
        if knee.get("x") in xs and knee.get("y") in ys:
            col, row = xs.index(knee["x"]), ys.index(knee["y"])
            self.knee_item = QtWidgets.QGraphicsRectItem(col + 0.03, row + 0.03, 0.94, 0.94)
            pen = QtGui.QPen(QtGui.QColor(KNEE_COLOR), 4)
            pen.setCosmetic(True)  # 4 pixels whatever the cell's size
            self.knee_item.setPen(pen)
            self.knee_item.setBrush(QtGui.QBrush(QtCore.Qt.BrushStyle.NoBrush))
            item.addItem(self.knee_item)
        labels = self.data.get("y_labels") or {}
        item.getAxis("bottom").setTicks([[(i + 0.5, f"{x:g}" if isinstance(x, (int, float)) else str(x))
                                          for i, x in enumerate(xs)]])
        item.getAxis("left").setTicks([[(i + 0.5, str(labels.get(y, labels.get(str(y), y))))
                                        for i, y in enumerate(ys)]])
        item.setXRange(0, len(xs), padding=0.02)
        item.setYRange(0, len(ys), padding=0.02)
        parts = [f"MB/s per cell, colour from {low:,.0f} to {high:,.0f} MB/s" if finite.size else "no point measured"]
        if knee.get("text"):
            parts.append(f"knee (gold outline): {knee['text']}")
        missing = int(np.isnan(grid).sum())
        if missing:
            parts.append(f"{missing} point{'s' if missing != 1 else ''} not measured (—)")
        if self.data.get("engine"):
            parts.append(f"engine: {self.data['engine']}")
        self.note.setText(" · ".join(parts))
        self.sig_map_changed.emit(key)


def _finite(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _mb(value: float) -> str:
    if not math.isfinite(value):
        return "—"
    return f"{value:,.0f}" if value >= 10 else f"{value:.2g}"
