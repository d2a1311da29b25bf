"""A shaded time span on a live plot (a run phase, a throttled GPU): its record and the region item that draws it."""

from __future__ import annotations

from dataclasses import dataclass

import pyqtgraph as pg

from widgets import theme


@dataclass
class Band:
    """One shaded span of a plot, and the region item that draws it."""

    t0: float
    t1: float | None  # None: still open, follows the newest data
    label: str
    color: str
    region: pg.LinearRegionItem


def band_region(t0: float, t1: float | None, label: str, color: str, *, high: bool) -> pg.LinearRegionItem:
    """The region item of a band from `t0` to `t1` (`t0` while open) in `color`, under the curves, with `label` near
    the top: `high` or a little lower, so the names of short neighbouring phases do not overlap."""
    region = pg.LinearRegionItem(
        values=(t0, t0 if t1 is None else t1),
        orientation="vertical",
        movable=False,
        brush=pg.mkBrush(theme.qcolor(color, theme.BAND_ALPHA)),
        pen=pg.mkPen(theme.qcolor(color, 140), width=1),
    )
    region.setZValue(-10)
    if label:
        pg.InfLineLabel(
            region.lines[0], text=label, position=0.97 if high else 0.89, anchors=[(0, 0), (0, 0)],
            color=theme.FOREGROUND,
        ).setFont(theme.font(theme.SMALL_PT))
    return region
