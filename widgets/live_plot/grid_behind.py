"""A live plot's grid, drawn opaque behind the data instead of pyqtgraph's translucent grid over it."""

from __future__ import annotations

import pyqtgraph as pg
from PySide6 import QtCore, QtGui

from widgets import theme


class GridBehind(pg.GraphicsObject):
    """The plot's grid at the axes' ticks, opaque and behind the data.

    pyqtgraph draws its grid with the axes, translucent and over the curves, and a live plot's axes repaint with
    every frame: Qt blends a translucent vertical line one pixel row at a time, ~10 ms an axis a paint at 1400 px.
    Opaque faint lines behind the data look the same (15% and 7.5% of the foreground, as the grid's alpha was) and
    cost a tenth of that.
    """

    def __init__(self, plot: pg.PlotItem):
        super().__init__()
        self._plot = plot
        self._pens = [pg.mkPen(theme.tint(theme.FOREGROUND, strength)) for strength in (0.15, 0.075)]
        self._lines: tuple[tuple, list[list[QtCore.QLineF]]] | None = None  # (view rect and size, lines per pen)
        self.setZValue(-20)  # under the phase bands (-10) and the curves

    def boundingRect(self) -> QtCore.QRectF:
        return self._plot.getViewBox().viewRect()

    def viewRangeChanged(self) -> None:
        self.prepareGeometryChange()
        self.update()

    def paint(self, painter: QtGui.QPainter, *_) -> None:
        painter.setRenderHint(QtGui.QPainter.RenderHint.Antialiasing, False)
        for pen, lines in zip(self._pens, self._grid_lines(), strict=True):
            painter.setPen(pen)
            painter.drawLines(lines)

    def _grid_lines(self) -> list[list[QtCore.QLineF]]:
        """The lines at the major and minor ticks (finer levels get none), kept while the view stays put."""
        view = self._plot.getViewBox()
        rect = view.viewRect()
        key = (rect.left(), rect.right(), rect.top(), rect.bottom(), view.width(), view.height())
        if self._lines is not None and self._lines[0] == key:
            return self._lines[1]
        lines: list[list[QtCore.QLineF]] = [[], []]
        for name, vertical in (("bottom", True), ("left", False)):
            low, high = (rect.left(), rect.right()) if vertical else (rect.top(), rect.bottom())
            pixels = view.width() if vertical else view.height()
            levels = self._plot.getAxis(name).tickValues(min(low, high), max(low, high), pixels)
            for level, (_, values) in zip(lines, levels, strict=False):
                for v in values:
                    level.append(QtCore.QLineF(v, rect.top(), v, rect.bottom()) if vertical
                                 else QtCore.QLineF(rect.left(), v, rect.right(), v))
        self._lines = (key, lines)
        return lines
