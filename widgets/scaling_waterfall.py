"""The scaling waterfall of one rank count: floating bars from the ideal step time to the measured one.

Fed C's waterfall (console.analysis.scaling_waterfall, docs/scaling.md): {"ranks", "scaling", "ideal_s",
"measured_s", "bars": [{"name", "delta_s", "from_s", "to_s", "how"}], "ends_at_measured", "closure_n", "adds_up"}.
The first bar is the ideal (T(1)/N strong, T(1) weak) from zero; each part then floats from where the previous one
ended by its Δ against the 1-rank run (compute, data wait, optimizer, straggler, exposed communication); the
unattributed rest is drawn hatched, since it is what the parts do not explain, not a part; a last solid bar is
the measured step from zero, so the chain's end can be checked against it by eye. Each part keeps one colour on
every chart. A waterfall that is not available shows why.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pyqtgraph as pg
from PySide6 import QtCore, QtGui, QtWidgets

from widgets import chart_export, layouts, theme
from widgets.plot_style import style_plot

Y_LABEL = "step time (ms)"
MEASURED = "measured"
# one colour per part, by the first word of C's bar names (Tableau 10, as theme.PALETTE's light scheme)
PART_COLORS = {"ideal": "#7f7f7f", "compute": "#1f77b4", "data": "#bcbd22", "optimizer": "#9467bd",
               "straggler": "#d62728", "exposed": "#ff7f0e", "communication": "#ff7f0e", "gradient": "#e377c2",
               "unattributed": "#8c564b",
               MEASURED: "#2ca02c"}
FALLBACK_COLOR = "#17becf"


def part_color(name: str) -> str:
    """The colour of a bar by its part ('exposed communication' → the communication colour)."""
    words = str(name).lower().replace("_", " ").split()
    return next((PART_COLORS[w] for w in words if w in PART_COLORS), FALLBACK_COLOR)


def is_unattributed(name: str) -> bool:
    return "unattributed" in str(name).lower()


def ms_text(seconds: float, signed: bool = False) -> str:
    value = seconds * 1000
    text = f"{value:+.3g}" if signed else f"{value:.3g}"
    return f"{text} ms"


class FloatingBar(pg.GraphicsObject):
    """A bar from y0 to y1 at x (±width/2); hatched bars fill with a diagonal pattern in screen pixels, so the
    hatching looks the same at any zoom."""

    def __init__(self, x: float, y0: float, y1: float, color: str, hatched: bool = False, width: float = 0.7):
        super().__init__()
        self.rect = QtCore.QRectF(x - width / 2, min(y0, y1), width, abs(y1 - y0))
        self.color, self.hatched = color, hatched

    def boundingRect(self) -> QtCore.QRectF:  # noqa: N802 — Qt's name
        return self.rect

    def paint(self, painter: QtGui.QPainter, *_: Any) -> None:
        pen = pg.mkPen(self.color, width=1.5)
        pen.setCosmetic(True)
        if self.hatched:
            device = painter.transform().mapRect(self.rect)
            painter.save()
            painter.resetTransform()
            painter.fillRect(device, QtGui.QBrush(theme.qcolor(self.color, 50)))
            painter.fillRect(device, QtGui.QBrush(QtGui.QColor(self.color), QtCore.Qt.BrushStyle.BDiagPattern))
            painter.setPen(pen)
            painter.drawRect(device)
            painter.restore()
            return
        painter.setPen(pen)
        painter.setBrush(QtGui.QBrush(QtGui.QColor(self.color)))
        painter.drawRect(self.rect)


class NamesAxis(pg.AxisItem):
    """The bars' names under them (one tick per bar)."""

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.names: list[str] = []

    def tickValues(self, minVal: float, maxVal: float, size: float):  # noqa: N802,N803 — pyqtgraph's names
        return [(1.0, [float(i) for i in range(len(self.names)) if minVal <= i <= maxVal])]

    def tickStrings(self, values, scale, spacing):  # noqa: N802 — pyqtgraph's name
        return [self.names[int(round(v))] if 0 <= int(round(v)) < len(self.names) else "" for v in values]


class ScalingWaterfall(QtWidgets.QWidget):
    """`set_waterfall(waterfall, heading)` draws it; `bars` lists what was drawn: {"name", "y0_s", "y1_s",
    "color", "hatched"} in order."""

    def __init__(self, parent: QtWidgets.QWidget | None = None):
        super().__init__(parent)
        self.axis = NamesAxis("bottom")
        self.plot_widget = pg.PlotWidget(background=theme.BACKGROUND, axisItems={"bottom": self.axis})
        self.plot = self.plot_widget.getPlotItem()
        style_plot(self.plot, "", Y_LABEL)
        self.plot.setMenuEnabled(False)
        self.plot.showGrid(x=False, y=True, alpha=0.15)
        self.plot.setMouseEnabled(x=False, y=False)
        self.axis.setHeight(34)  # room for the names under the bars (no axis title below them)
        self.title = theme.title_label("Scaling waterfall: ideal → measured step")
        chart_export.set_title(self.plot, self.title)
        self.caption = theme.caption_label()
        layouts.column(self, self.title, (self.plot_widget, 1), self.caption)
        self.plot_widget.setMinimumHeight(180)
        self.waterfall: dict[str, Any] | None = None
        self.bars: list[dict[str, Any]] = []
        self.items: list[FloatingBar] = []

    # ---- Public API
    def set_waterfall(self, waterfall: Mapping[str, Any] | None, heading: str = "") -> None:
        self.waterfall = dict(waterfall) if waterfall else None
        self.plot.clear()
        self.bars, self.items = [], []
        self.axis.names = []
        if heading:
            self.title.setText(heading)
        if not self.waterfall or not self.waterfall.get("bars"):
            why = (self.waterfall or {}).get("not_available") or "choose a point on the curve"
            self.caption.setText(f"Waterfall not available ({why}).")
            self.plot.update()
            return
        self._draw(self.waterfall)

    def clear(self, message: str = "No waterfall shown.") -> None:
        self.set_waterfall(None)
        self.caption.setText(message)

    # ---- Private API
    def _draw(self, waterfall: dict[str, Any]) -> None:
        chain = []
        for bar in waterfall["bars"]:
            name = str(bar.get("name") or "?")
            start, end = bar.get("from_s"), bar.get("to_s")
            if not (isinstance(start, (int, float)) and isinstance(end, (int, float))):
                continue  # a part without a figure is left out (the caption lists it), never drawn as 0
            chain.append((name, float(start), float(end), bar))
        measured = waterfall.get("measured_s")
        if isinstance(measured, (int, float)) and not any(n.lower() == MEASURED for n, *_ in chain):
            chain.append((MEASURED, 0.0, float(measured), {"how": "the measured mean step time of this run",
                                                           "delta_s": measured}))
        top = max([max(s, e) for _, s, e, _ in chain] + [1e-9])
        for index, (name, start, end, bar) in enumerate(chain):
            color = part_color(name)
            hatched = is_unattributed(name)
            item = FloatingBar(index, start * 1000, end * 1000, color, hatched)
            item.setToolTip(f"{name}: {ms_text(end - start, signed=index > 0 and name != MEASURED)} — "
                            f"{bar.get('how') or 'how not given'}")
            self.plot.addItem(item)
            self.items.append(item)
            self.bars.append({"name": name, "y0_s": start, "y1_s": end, "color": color, "hatched": hatched})
            delta = end - start
            label = ms_text(end if index == 0 or name == MEASURED else delta,
                            signed=not (index == 0 or name == MEASURED))
            text = pg.TextItem(label, color=theme.FOREGROUND, anchor=(0.5, 1.0))
            text.setFont(theme.font(theme.SMALL_PT))
            text.setPos(index, max(start, end) * 1000 + top * 1000 * 0.01)
            self.plot.addItem(text)
            if 0 < index < len(chain) and name != MEASURED:  # the step from the previous bar's end
                previous_end = chain[index - 1][2]
                connector = pg.PlotDataItem([index - 1 + 0.35, index - 0.35], [previous_end * 1000, start * 1000],
                                            pen=pg.mkPen(theme.MUTED, width=1, style=QtCore.Qt.PenStyle.DotLine))
                self.plot.addItem(connector)
        self.axis.names = [self._short(name) for name, *_ in chain]
        self.plot.setXRange(-0.6, len(chain) - 0.4, padding=0)
        self.plot.setYRange(0, top * 1000 * 1.12, padding=0)
        self.caption.setText(self._caption(waterfall, chain))

    @staticmethod
    def _short(name: str) -> str:
        return {"exposed communication": "exposed comm", "gradient copy-back": "grad copy"}.get(name.lower(), name)

    @staticmethod
    def _caption(waterfall: Mapping[str, Any], chain: list) -> str:
        scaling, ranks = waterfall.get("scaling", "strong"), waterfall.get("ranks", "?")
        ideal_rule = "T(1) ÷ N" if scaling == "strong" else "T(1)"
        parts = []
        ideal, measured = waterfall.get("ideal_s"), waterfall.get("measured_s")
        if isinstance(ideal, (int, float)) and isinstance(measured, (int, float)):
            parts.append(f"N = {ranks}, {scaling} scaling: ideal {ideal_rule} = {ms_text(ideal)} → measured "
                         f"{ms_text(measured)}.")
        closure = waterfall.get("closure_n")
        if isinstance(closure, (int, float)):
            verdict = "" if waterfall.get("adds_up", True) else " — NOT within 5%: read the parts with care"
            parts.append(f"Parts add up to {closure:.1%} of the measured step{verdict}.")
        if waterfall.get("ends_at_measured") is False:
            parts.append("The chain does not end at the measured step.")
        parts.append("Each part: Δ = N-rank part − 1-rank part" + (" ÷ N" if scaling == "strong" else "") +
                     "; unattributed (hatched) = measured − the parts, shown, never folded in.")
        left_out = [str(b.get("name")) for b in waterfall.get("bars") or []
                    if not (isinstance(b.get("from_s"), (int, float)) and isinstance(b.get("to_s"), (int, float)))]
        if left_out:
            parts.append(f"No figure for {', '.join(left_out)} (not drawn, not 0).")
        return " ".join(parts)
