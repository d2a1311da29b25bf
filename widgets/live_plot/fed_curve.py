"""The curve item of a live plot: a PlotDataItem that a peak feed (widgets.live_plot.peak_feed) hands decimated data,
and that leaves redrawing on a view change to that feed."""

from __future__ import annotations

import pyqtgraph as pg


class FedCurve(pg.PlotDataItem):
    """A curve fed decimated data by a PeakFeed, which redraws it when the view moves.

    A plain PlotDataItem with clip-to-view or downsampling redoes its display data on every change of the view's x
    range, for every curve: with the time axis moving each frame, that doubled the frame's curve work for nothing.
    """

    def viewRangeChanged(self, vb=None, ranges=None, changed=None) -> None:
        self.setProperty("xViewRangeWasChanged", True)  # pyqtgraph's own pass still clips at the next setData


def peak_downsampled(curve: pg.PlotDataItem) -> None:
    """pyqtgraph's own peak downsampling and clip-to-view, kept as a safety net (and for the plot's context menu).

    A feed already hands the curve at most about two points per pixel of the view, so at three samples per pixel
    pyqtgraph leaves them as they are; re-downsampling a million points every frame was what made an hour of data
    cost ~70 ms a frame.
    """
    curve.setDownsampling(auto=True, method="peak")
    curve.setClipToView(True)
    if "autoDownsampleFactor" in curve.opts:
        curve.opts["autoDownsampleFactor"] = 3.0
