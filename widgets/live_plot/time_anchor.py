"""The invisible item that makes a live plot's auto-ranged time axis move in steps, not with every frame."""

from __future__ import annotations

import math

import pyqtgraph as pg
from PySide6 import QtCore

from widgets.live_plot.paint_rates import state


class TimeAnchor(pg.GraphicsObject):
    """An invisible item whose x bounds are the data's time span rounded out to a step of about 1/32 of it (a power
    of two; about 1/4 while painting is quiet): the auto-ranged time axis then moves in steps, not with every frame,
    and between steps the axes, the grid and the view transform stay as they are instead of being recomputed and
    repainted. With an hour on screen the axis moves every 64 s; a short run's, a few times a second.
    """

    def __init__(self):
        super().__init__()
        self._span: tuple[float, float] | tuple[None, None] = (None, None)

    def set_span(self, first: float | None, last: float | None) -> None:
        span: tuple[float, float] | tuple[None, None] = (None, None)
        if first is not None and last is not None and math.isfinite(first) and math.isfinite(last):
            # While a run measures, steps of about a quarter of the span: the axis, and every plot linked to it,
            # then moves (and repaints) a few times per span instead of with nearly every quiet frame.
            divisions = 32 if state.quiet is None else 4
            step = 2.0 ** math.floor(math.log2(max(last - first, 1e-3) / divisions))
            span = (math.floor(first / step) * step, math.ceil(last / step) * step)
        if span != self._span:
            self._span = span
            self.informViewBoundsChanged()

    def dataBounds(self, ax: int, frac: float = 1.0, orthoRange=None):
        return self._span if ax == 0 else (None, None)

    def boundingRect(self) -> QtCore.QRectF:
        return QtCore.QRectF()

    def paint(self, *_) -> None:
        pass
