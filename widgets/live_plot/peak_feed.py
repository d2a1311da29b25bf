"""Draws one series into one curve, decimated to the pixels the curve is seen at (widgets.peak_decimation), so a
frame hands pyqtgraph about two points per pixel whether the plot holds a second or an hour."""

from __future__ import annotations

import math

import numpy as np
import pyqtgraph as pg

from widgets.live_plot.paint_rates import state
from widgets.peak_decimation import PeakSeries

# Pixels a curve is decimated for while its plot has no width yet (not laid out): a wide wall screen's.
DEFAULT_BUCKETS = 1920


def view_span(curve: pg.PlotDataItem) -> tuple[float, float, int]:
    """(x0, x1, pixels) the curve is seen at: the whole series while the view fits the x axis to the data. A plot
    not on screen has no width that means anything yet (it gets one when shown): it is drawn for a wide screen."""
    view = curve.getViewBox()
    if view is None:
        return -math.inf, math.inf, DEFAULT_BUCKETS
    widget = view.getViewWidget()
    width = int(view.width()) if widget is not None and widget.isVisible() else 0
    buckets = width if width >= 2 else DEFAULT_BUCKETS
    if view.autoRangeEnabled()[0] or curve.opts["logMode"][0]:
        return -math.inf, math.inf, buckets
    x0, x1 = view.viewRange()[0]
    return float(x0), float(x1), buckets


def stroke_block_px(curve: pg.PlotDataItem) -> int:
    """Pixels per decimation block: 1 for a hairline; for a wider stroke (its pen or the halo under it), twice its
    width.

    A stroke w pixels wide shows no detail finer than w pixels, and Qt's cost for a wide stroke grows with the
    points under it (a 6 px halo over two points a pixel cost ~15 ms a paint; a 2 px line ~1 ms).
    """
    widths = [pg.mkPen(curve.opts[kind]).widthF() for kind in ("pen", "shadowPen") if curve.opts.get(kind) is not None]
    widest = round(max(widths, default=1.0))
    return 1 if widest <= 1 else 2 * widest


class PeakFeed:
    """Draws one series into one curve, decimated to the view; skips the work when nothing it depends on changed.

    ``take_latest`` (a refresh) moves the picture to the newest data; ``draw`` alone (a zoom, pan or resize)
    redraws the samples shown so far at the new span, so data still shows up only at a refresh.
    """

    def __init__(self, series: PeakSeries, curve: pg.PlotDataItem, upper: bool = False, block_px: int = 1):
        self.series = series
        self.curve = curve
        self.upper = upper  # draw the upper envelope only (PeakSeries.peaks)
        self.block_px = block_px  # at least this many pixels per decimation block (faint context lines: coarser)
        self.extra: tuple[float, float] | None = None  # one point after the series (a live running percentile)
        self._version = -1  # the series' version at the last refresh; -1: never refreshed, nothing to show
        self._end = 0
        self._key: tuple | None = None

    def take_latest(self) -> None:
        self._version, self._end = self.series.version, self.series.end

    def draw(self) -> None:
        if self._version < 0:
            return
        x0, x1, pixels = view_span(self.curve)
        quiet = state.quiet
        coarse = quiet.block_px if quiet is not None else 1  # while a run measures: fewer points a frame
        buckets = max(1, pixels // max(self.block_px, stroke_block_px(self.curve), coarse))
        key = (self._version, self._end, x0, x1, buckets, self.extra)
        if key == self._key:
            return
        self._key = key  # before setData: the view's reaction to it comes back here and must find it done
        x, y = self.series.peaks(x0, x1, buckets, end=self._end, upper=self.upper)
        if self.extra is not None and (x.size == 0 or self.extra[0] > x[-1]):
            x, y = np.append(x, self.extra[0]), np.append(y, self.extra[1])
        self.curve.setData(x, y)
