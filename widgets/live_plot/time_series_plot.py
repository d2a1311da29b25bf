"""The telemetry plot: several named series against time (CPU utilization, memory, power, ...), per-core lines
faint under the total."""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
import pyqtgraph as pg
from PySide6 import QtCore, QtWidgets

from widgets import chart_export, theme
from widgets.live_plot.fed_curve import FedCurve, peak_downsampled
from widgets.live_plot.peak_feed import PeakFeed
from widgets.live_plot.time_plot import TimePlot, as_pair
from widgets.peak_decimation import PeakSeries

MINOR_BLOCK_PX = 4  # pixels per min/max block of a per-core (minor) series


@dataclass
class _Series:
    data: PeakSeries
    curve: pg.PlotDataItem
    feed: PeakFeed
    minor: bool


class TimeSeriesPlot(TimePlot):
    """Several named series against time, e.g. CPU utilization (%) or memory (GiB).

    Series whose name matches ``minor_series`` (per-core "cpu0", "cpu1", ...) are thin and translucent and share one
    legend entry, so 64 cores do not bury the "total" line or the legend. NaN values leave gaps: a sample that could
    not be read is never drawn as 0.
    """

    def __init__(
        self,
        title: str,
        y_label: str,
        y_unit: str,
        parent: QtWidgets.QWidget | None = None,
        y_range: tuple[float, float] | None = None,
        *,
        capacity: int = 100_000,
        minor_series: str = r"cpu\d+",
        minor_label: str = "per core",
    ):
        super().__init__(title, f"{y_label} ({y_unit})" if y_unit else y_label, parent)
        self._capacity = int(capacity)
        self._minor_re = re.compile(minor_series) if minor_series else None
        self._minor_label = minor_label
        self._series: dict[str, _Series] = {}
        self._changed: set[str] = set()
        self._follow_s: float | None = None
        self._y_range = y_range
        chart_export.set_legend(self._plot, self._export_legend)
        if y_range is not None:
            self._plot.setYRange(float(y_range[0]), float(y_range[1]), padding=0.04)  # a line at 100 % stays visible
            self._plot.enableAutoRange(axis="y", enable=False)

    # ---- Public API
    def add_points(self, series: str, t_s: np.ndarray, values: np.ndarray) -> None:
        """Append a batch to ``series`` (created on first use); drawn at the next timer tick."""
        t, v = as_pair(t_s, values)
        s = self._series.get(series) or self._create_series(series)
        if t.size:
            s.data.extend(t, v)
            self._changed.add(series)
            self._mark_dirty()

    def set_data(self, series: str, t_s: np.ndarray, values: np.ndarray) -> None:
        """Replace one series' data (reopening a run from history)."""
        t, v = as_pair(t_s, values)
        s = self._series.get(series) or self._create_series(series)
        s.data.clear()
        s.data.extend(t, v)
        self._changed.add(series)
        self._mark_dirty()

    def clear(self) -> None:
        """Remove every series, band and the "not available" state, for a new run."""
        for s in self._series.values():
            self._plot.removeItem(s.curve)
        self._series.clear()
        self._feeds.clear()
        self._changed.clear()
        self._legend.clear()
        self._reset_frame()

    def series_names(self) -> list[str]:
        return list(self._series)

    def set_dashed(self, series: str, dashed: bool = True) -> None:
        """Draw ``series`` dashed — the mark of an estimate, so it is never read as a measurement."""
        s = self._series.get(series) or self._create_series(series)
        pen = pg.mkPen(s.curve.opts["pen"])
        pen.setStyle(QtCore.Qt.PenStyle.DashLine if dashed else QtCore.Qt.PenStyle.SolidLine)
        s.curve.setPen(pen)
        if not s.minor:
            self._legend.set_entry(series, series, [pen])

    def set_follow(self, seconds: float | None) -> None:
        """Keep the last ``seconds`` in view as data arrives (a system monitor); None: show everything."""
        self._follow_s = seconds
        self._mark_dirty()

    def data(self, series: str) -> tuple[np.ndarray, np.ndarray]:
        """The kept (time s, value) arrays of ``series``, which may be newer than what is drawn."""
        return self._series[series].data.values()

    # ---- Private API
    def _is_minor(self, name: str) -> bool:
        return bool(self._minor_re and self._minor_re.fullmatch(name))

    def _export_legend(self) -> list[tuple[pg.PlotDataItem, str]]:
        """An export's legend in the order of the legend row: the main series, then "per core" for the rest."""
        ordered = sorted(self._series.values(), key=lambda series: series.minor)
        return [(series.curve, series.curve.name()) for series in ordered if series.curve.name()]

    def _create_series(self, name: str) -> _Series:
        minor = self._is_minor(name)
        color = theme.PALETTE[len(self._series) % len(theme.PALETTE)]
        if minor:
            pen = pg.mkPen(theme.tint(color, 0.35), width=1)
        else:
            pen = pg.mkPen(color, width=2)
        # No antialiasing: Qt strokes a wide antialiased polyline over dense, jagged data in seconds per frame
        # (12 s for 36k points measured), which would freeze the window with an hour of telemetry.
        # Named for a chart export's legend: each main series, and the first minor one for all of them.
        first_minor = minor and not any(series.minor for series in self._series.values())
        curve = FedCurve(pen=pen, connect="finite", antialias=False, name=None if minor and not first_minor else name)
        curve.setZValue(0 if minor else 10)
        self._plot.addItem(curve)
        # After addItem: PlotItem.addItem overwrites both with the plot-wide defaults.
        peak_downsampled(curve)
        data = PeakSeries(self._capacity)
        # A per-core line is faint context under the total: min and max per 4 px keep each core's peaks and dips
        # at a quarter of the points (64 cores would otherwise be most of a frame).
        s = _Series(data, curve, PeakFeed(data, curve, block_px=MINOR_BLOCK_PX if minor else 1), minor)
        self._series[name] = s
        self._feeds.append(s.feed)
        if minor:
            minors = [series for series in self._series.values() if series.minor]
            pens = [pg.mkPen(theme.tint(c, 0.67), width=1) for c in theme.PALETTE[1:4]]
            self._legend.set_entry("\0minor", f"{self._minor_label} ({len(minors)})", pens, last=True)
            minors[0].curve.opts["name"] = f"{self._minor_label} ({len(minors)})"
        else:
            self._legend.set_entry(name, name, [pen])
        return s

    def _latest_time(self) -> float | None:
        times = [t for t in (s.data.last_time() for s in self._series.values()) if t is not None]
        return max(times, default=None)

    def _earliest_time(self) -> float | None:
        return min((s.data.time_at(s.data.first) for s in self._series.values() if len(s.data)), default=None)

    def _redraw(self) -> None:
        for name in self._changed:
            s = self._series.get(name)
            if s is not None:
                s.feed.take_latest()
        self._changed.clear()
        latest = self._latest_time() if self._follow_s else None
        if latest is not None:  # before the curves are drawn: they are decimated for the span they will show
            self._plot.setXRange(max(0.0, latest - self._follow_s), latest, padding=0)
