"""Bars of seconds per category: stacked (a cold start's read, deserialize, to-device and first-inference stages per
read mode) or grouped (a checkpoint's save and load per format).

A pure view fed plain data (console.storage.charts.coldstart_chart / checkpoint_chart)::

    {"layout": "stacked" | "grouped", "categories": ["mmap", "buffered", "direct"],
     "segments": [["read", [0.21, 0.25, 0.40]], ["deserialize", [0.05, 0.05, None]], ...],
     "labels": [[text per category], ...], "unit": "s", "title": "Cold start by read mode", "note": "..."}

Why bars: the question is where the time goes and which mode or format is quickest; a stacked bar answers both
at once, and a grouped pair keeps save and restore apart (they use the device differently). A value that was not
measured (None) is left out of its bar, never drawn as 0; the chart's note names it. `labels` print above each
bar (a stack: its total; a group: each bar's GB/s).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import pyqtgraph as pg
from PySide6 import QtCore, QtWidgets

from widgets import theme
from widgets.plot_style import style_plot


class StackedStages(QtWidgets.QWidget):
    """`set_data(data)` redraws; `clear(hint)` empties."""

    # ---- Public API
    def __init__(self, title: str = "", parent: QtWidgets.QWidget | None = None):
        super().__init__(parent)
        self._default_title = title
        self.title = theme.title_label(title)
        self.legend = QtWidgets.QLabel("")
        self.legend.setTextFormat(QtCore.Qt.TextFormat.RichText)
        self.legend.setFont(theme.font(theme.BASE_PT))
        self.plot = pg.PlotWidget(background=theme.BACKGROUND)
        self.plot.setMinimumHeight(170)
        style_plot(self.plot.getPlotItem(), "", "seconds")
        self.plot.setMouseEnabled(x=False, y=False)
        self.note = theme.caption_label()
        layout = QtWidgets.QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.title)
        layout.addWidget(self.legend)
        layout.addWidget(self.plot, 1)
        layout.addWidget(self.note)
        self.bars: list[pg.BarGraphItem] = []
        self.value_labels: list[pg.TextItem] = []
        self.data: dict[str, Any] = {}
        self.clear()

    def clear(self, hint: str = "Nothing measured yet: run one, or it appears here from the history.") -> None:
        self.plot.getPlotItem().clear()
        self.bars, self.value_labels, self.data = [], [], {}
        self.legend.setText("")
        self.note.setText(hint)

    def set_data(self, data: Mapping[str, Any]) -> None:
        self.clear("")
        self.data = dict(data)
        self.title.setText(str(data.get("title") or self._default_title))
        categories = [str(c) for c in data.get("categories") or []]
        segments = [(str(name), list(values)) for name, values in data.get("segments") or []]
        unit = str(data.get("unit") or "s")
        item = self.plot.getPlotItem()
        item.getAxis("left").setLabel(f"seconds ({unit})" if unit != "s" else "seconds",
                                      **{"color": theme.FOREGROUND, "font-size": f"{theme.AXIS_LABEL_PT}pt"})
        if not categories:
            self.note.setText("No bars: the result holds no measured category.")
            return
        grouped = data.get("layout") == "grouped"
        count = max(1, len(segments))
        width = 0.8 / count if grouped else 0.6
        tops = [0.0] * len(categories)
        entries = []
        for index, (name, values) in enumerate(segments):
            color = theme.PALETTE[index % len(theme.PALETTE)]
            drawn = any(_finite(v) for v in values[:len(categories)])  # a segment never measured says so
            entries.append(f'<span style="color:{color}">■</span>&nbsp;{name}' if drawn else
                           f'<span style="color:{theme.MUTED}">□&nbsp;{name} (not measured)</span>')
            xs, heights, bottoms = [], [], []
            for col, value in enumerate(values[:len(categories)]):
                if not _finite(value):
                    continue
                offset = (index - (count - 1) / 2) * width if grouped else 0.0
                xs.append(col + offset)
                heights.append(float(value))
                bottoms.append(0.0 if grouped else tops[col])
                if grouped:
                    tops[col] = max(tops[col], float(value))
                else:
                    tops[col] += float(value)
            if xs:
                bar = pg.BarGraphItem(x=xs, height=heights, width=width * 0.92, y0=bottoms, brush=color,
                                      pen=pg.mkPen(theme.BACKGROUND))
                item.addItem(bar)
                self.bars.append(bar)
                if grouped:
                    texts = (data.get("labels") or [[]] * count)[index] if index < len(data.get("labels") or []) \
                        else []
                    for x, h, col in zip(xs, heights, [c for c, v in enumerate(values) if _finite(v)], strict=False):
                        text = texts[col] if col < len(texts) else f"{h:.3g} s"
                        self._label(x, h, f"{h:.3g} s" + (f"\n{text}" if text and text != "—" else ""))
        if not grouped:
            totals = (data.get("labels") or [[]])[0]
            for col, top in enumerate(tops):
                if top > 0:
                    self._label(col, top, totals[col] if col < len(totals) else f"{top:.3g} s")
        self.legend.setText("&nbsp;&nbsp;&nbsp;".join(entries))
        item.getAxis("bottom").setTicks([[(i, name) for i, name in enumerate(categories)]])
        item.setXRange(-0.6, len(categories) - 0.4, padding=0)
        high = max(tops) if tops else 1.0
        item.setYRange(0, (high or 1.0) * 1.25, padding=0)
        self.note.setText(str(data.get("note") or ""))

    # ---- Private API
    def _label(self, x: float, y: float, text: str) -> None:
        label = pg.TextItem(text, color=theme.FOREGROUND, anchor=(0.5, 1.0))
        label.setFont(theme.font(theme.SMALL_PT, bold=True))
        label.setPos(x, y)
        self.plot.getPlotItem().addItem(label)
        self.value_labels.append(label)


def _finite(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
