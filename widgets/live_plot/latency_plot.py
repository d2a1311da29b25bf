"""The latency plot: per-iteration latency against time, with the running p50 and p99 over a trailing window."""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6 import QtCore, QtWidgets

from widgets import theme
from widgets.formatting import format_number
from widgets.live_plot.fed_curve import FedCurve, peak_downsampled
from widgets.live_plot.peak_feed import PeakFeed
from widgets.live_plot.time_plot import TimePlot, as_pair
from widgets.peak_decimation import PeakSeries

# MLPerf's early-stopping rule: fewer samples than this cannot back a p99.
P99_MIN_SAMPLES = 662
# Below this many points each iteration gets a dot; above, dots would only blur the line.
_SYMBOL_MAX_POINTS = 2000


class LatencyPlot(TimePlot):
    """Per-iteration latency against time, with running p50 and p99 over the trailing window.

    Every `window // 10` iterations the p50/p99 of the last `window` iterations is added as a point, so the
    lines show how the distribution moved during the run (drift, throttling, a noisy neighbour); the header
    repeats the current values, and says when too few samples back the p99.
    """

    PAINT_KIND = "latency"

    def __init__(
        self,
        parent: QtWidgets.QWidget | None = None,
        *,
        title: str = "Latency per iteration",
        window: int = 1000,
        capacity: int = 1_000_000,
    ):
        super().__init__(title, "latency (ms)", parent)
        self._window = int(window)
        self._series = PeakSeries(capacity)
        self._shown: tuple[float, float, int] | None = None
        self._step = max(1, self._window // 10)  # a running-percentile point every `step` iterations
        self._next_eval = self._step
        # (t, p50) and (t, p99) at each evaluation point, as many as the kept iterations have.
        self._p50 = PeakSeries(int(capacity) // self._step + 2)
        self._p99 = PeakSeries(int(capacity) // self._step + 2)
        self._symbols = False

        latency_pen = pg.mkPen(theme.tint(theme.LATENCY_COLOR, 0.67), width=1)
        p50_pen = pg.mkPen(theme.P50_COLOR, width=3)
        p99_pen = pg.mkPen(theme.P99_COLOR, width=3, style=QtCore.Qt.PenStyle.DashLine)
        self._curve = FedCurve(pen=latency_pen, skipFiniteCheck=True, name="latency")
        halo = pg.mkPen(theme.BACKGROUND, width=6)  # keeps the lines visible over dense data
        # Opaque, not antialiased, decimated: a long run has thousands of running-percentile points, and wide
        # antialiased strokes of that many points cost seconds per frame.
        self._p50_line = FedCurve(pen=p50_pen, shadowPen=halo, antialias=False, name=f"p50 (last {self._window})")
        self._p99_line = FedCurve(pen=p99_pen, shadowPen=halo, antialias=False, name=f"p99 (last {self._window})")
        for line in (self._curve, self._p50_line, self._p99_line):
            self._plot.addItem(line)
            peak_downsampled(line)  # after addItem: it overwrites both with the plot-wide defaults
        self._feed = PeakFeed(self._series, self._curve)
        self._p50_feed = PeakFeed(self._p50, self._p50_line)
        # The p99 line is dashed: its upper envelope, one point a block, costs a tenth of the zig-zag (~7 ms a paint
        # at 1400 px), and a running p99 is read for its rises.
        self._p99_feed = PeakFeed(self._p99, self._p99_line, upper=True)
        self._feeds.extend([self._feed, self._p50_feed, self._p99_feed])
        self._legend.set_entry("latency", "latency", [latency_pen])
        self._legend.set_entry("p50", f"p50 (last {self._window})", [p50_pen])
        self._legend.set_entry("p99", f"p99 (last {self._window})", [p99_pen])
        for line in (self._p50_line, self._p99_line):
            line.setZValue(5)

    # ---- Public API
    def add_latencies(self, t_s: np.ndarray, latency_ms: np.ndarray) -> None:
        """Append a batch (seconds since run start, milliseconds); drawn at the next timer tick."""
        t, y = as_pair(t_s, latency_ms)
        if t.size:
            self._series.extend(t, y)
            self._mark_dirty()

    def set_data(self, t_s: np.ndarray, latency_ms: np.ndarray) -> None:
        """Replace all data, e.g. when a finished run is reopened from history. Bands are kept."""
        t, y = as_pair(t_s, latency_ms)
        self._series.clear()
        self._reset_rolling()
        self._series.extend(t, y)
        self._mark_dirty()

    def clear(self) -> None:
        """Empty the plot for a new run: data, bands and the "not available" state."""
        self._series.clear()
        self._reset_rolling()
        self._reset_frame()

    def data(self) -> tuple[np.ndarray, np.ndarray]:
        """The kept (time s, latency ms) arrays, which may be newer than what is drawn."""
        return self._series.values()

    def percentiles(self) -> dict | None:
        """The p50/p99 (ms) drawn at the last redraw and the sample count behind them; None before any data."""
        if self._shown is None:
            return None
        p50, p99, n = self._shown
        return {"p50": p50, "p99": p99, "n": n}

    @property
    def window(self) -> int:
        return self._window

    # ---- Private API
    def _reset_rolling(self) -> None:
        self._next_eval = self._step
        self._p50.clear()
        self._p99.clear()

    def _update_rolling(self) -> None:
        """Add running-percentile points for the iterations that arrived since the last redraw.

        Past points never change, so each redraw only evaluates the new ones: cheap at 10 Hz even with
        a million iterations kept.
        """
        series = self._series
        first, appended = series.first, series.end  # stream positions: iterations ever appended since the clear
        times, p50s, p99s = [], [], []
        while self._next_eval <= appended:
            end = self._next_eval
            self._next_eval += self._step
            if end <= first:
                continue
            window = series.values_between(end - self._window, end)
            window = window[np.isfinite(window)]
            if window.size:
                p50, p99 = np.percentile(window, [50, 99])
                times.append(series.time_at(end - 1))
                p50s.append(float(p50))
                p99s.append(float(p99))
        if times:
            self._p50.extend(times, p50s)
            self._p99.extend(times, p99s)

    def _latest_time(self) -> float | None:
        return self._series.last_time()

    def _earliest_time(self) -> float | None:
        return self._series.time_at(self._series.first) if len(self._series) else None

    def _redraw(self) -> None:
        n = len(self._series)
        symbols = 0 < n <= _SYMBOL_MAX_POINTS
        if symbols != self._symbols:
            self._symbols = symbols
            if symbols:
                self._curve.setSymbol("o")
                self._curve.setSymbolSize(4)
                self._curve.setSymbolPen(None)
                self._curve.setSymbolBrush(pg.mkBrush(theme.qcolor(theme.LATENCY_COLOR, 200)))
            else:
                self._curve.setSymbol(None)
        self._feed.take_latest()
        if n == 0:
            self._shown = None
            for feed in (self._p50_feed, self._p99_feed):
                feed.extra = None
                feed.take_latest()
            self._readout.setText("")
            self._readout.setToolTip("")
            return
        wt, wy = self._series.tail(self._window)
        finite = np.isfinite(wy)
        if not finite.any():
            return
        p50, p99 = (float(v) for v in np.percentile(wy[finite], [50, 99]))
        n = int(finite.sum())
        self._shown = (p50, p99, n)
        self._update_rolling()
        last = self._p50.last_time()
        newest = float(wt[-1])
        live = last is None or last < newest  # the current values, as a point after the last evaluation
        self._p50_feed.extra = (newest, p50) if live else None
        self._p99_feed.extra = (newest, p99) if live else None
        self._p50_feed.take_latest()
        self._p99_feed.take_latest()
        text = f"last {n:,}:  p50 {format_number(p50)} ms   p99 {format_number(p99)} ms"
        if n < P99_MIN_SAMPLES:
            text += "*"
            self._readout.setToolTip(
                f"* p99 from {n:,} samples: a p99 needs at least {P99_MIN_SAMPLES} to be reported"
            )
        else:
            self._readout.setToolTip(f"percentiles over the last {n:,} iterations")
        self._readout.setText(text)

