"""Live time plots: per-iteration latency, and telemetry series (CPU, memory, ...).

Events arrive every ~100 ms and an hour-long run yields millions of points, so these views never redraw per
message: ``add_*`` only appends to bounded series and marks the plot dirty, and one timer shared by every plot
redraws the dirty, visible ones ten times a second. Each series keeps an incremental min/max pyramid
(widgets.peak_decimation), so a redraw hands pyqtgraph at most about two points per pixel of the visible span, with
every spike kept, whether the plot holds a second or an hour: a frame costs the same at any size. A zoom, pan or
resize redraws from the pyramid too. What else a frame paints is kept cheap as well: the auto-ranged time axis moves
in steps (_TimeAnchor), so axes and grid are recomputed only when it moves, and the grid is opaque, behind the data
(_GridBehind). Time is seconds since the run started, so latency and telemetry line up on one axis.

While a run measures, painting competes with the measured worker for CPU, so the window can turn it down
(`set_quiet`, driven by console.ui.paint_budget): the same timer then ticks at the latency trace's low rate, telemetry
plots redraw every few ticks, every curve is decimated coarser, a view change waits for the plot's next frame instead
of redrawing at once, and plots not on screen stay dirty. Turning it off redraws every visible plot in full at once
(the catch-up).
"""

from __future__ import annotations

import math
import re
import weakref
from dataclasses import dataclass, replace

import numpy as np
import numpy.ma  # noqa: F401 — else imported at the first np.unique, 50–100 ms inside a first run's measuring phase
import pyqtgraph as pg
from PySide6 import QtCore, QtGui, QtWidgets

from widgets import chart_export, theme
from widgets.formatting import format_number
from widgets.peak_decimation import PeakSeries

REFRESH_INTERVAL_MS = 100
# MLPerf's early-stopping rule: fewer samples than this cannot back a p99.
P99_MIN_SAMPLES = 662
# Below this many points each iteration gets a dot; above, dots would only blur the line.
_SYMBOL_MAX_POINTS = 2000
# A missing sensor is a short label in the plot ("power: not available"); the reason, often a paragraph with
# the fix, is its tooltip. Longer than this, the label would wrap into the paragraph it replaces.
UNAVAILABLE_LABEL_MAX = 40
# Pixels a curve is decimated for while its plot has no width yet (not laid out): a wide wall screen's.
_DEFAULT_BUCKETS = 1920
MINOR_BLOCK_PX = 4  # pixels per min/max block of a per-core (minor) series


# ---- Quiet painting while a run measures
@dataclass(frozen=True)
class PaintRates:
    """How the live plots paint while a run measures: the latency trace every `latency_ms`, telemetry plots (and
    their per-core lines) every `telemetry_ms`, and every curve decimated to min/max blocks of `block_px` pixels.

    The defaults (2 Hz, 1 Hz, 4 px) keep a trace that moves and shows every spike at a fraction of a full frame's
    cost; the window reads them from its settings (console.ui.settings, "paint/..." keys).
    """

    latency_ms: int = 500
    telemetry_ms: int = 1000
    block_px: int = 4

    def __post_init__(self) -> None:
        for name in ("latency_ms", "telemetry_ms"):
            value = getattr(self, name)
            if not isinstance(value, int) or value < REFRESH_INTERVAL_MS:
                raise ValueError(f"paint rate {name}={value!r}: must be a whole number of milliseconds "
                                 f">= {REFRESH_INTERVAL_MS} (the full-speed frame interval); use a lower rate")
        if not isinstance(self.block_px, int) or not 1 <= self.block_px <= 64:
            raise ValueError(f"paint block_px={self.block_px!r}: must be a whole number of pixels from 1 to 64")

    def for_sampler(self, sampler_hz: float | None) -> PaintRates:
        """These rates with telemetry no faster than a sampler at `sampler_hz` delivers (None: unknown, as is)."""
        if not sampler_hz or sampler_hz <= 0:
            return self
        return replace(self, telemetry_ms=max(self.telemetry_ms, math.ceil(1000.0 / sampler_hz)))


_quiet: PaintRates | None = None  # set while a run measures (set_quiet); None: full-speed painting
# While quiet: whether this tick may move the time axis. Only ticks on which the telemetry plots redraw too do, so
# the plots linked to the latency plot's axis repaint once per telemetry frame, not again at each latency frame.
_axis_tick = True


def set_quiet(rates: PaintRates | None) -> None:
    """Paint at `rates` (a run is measuring), or at full speed again (None): then every visible plot is redrawn
    in full at once, and hidden ones when they are shown. Safe to call repeatedly with the same value."""
    global _quiet
    was = _quiet
    _quiet = rates
    hub = _refresh_hub()
    hub._timer.setInterval(rates.latency_ms if rates is not None else REFRESH_INTERVAL_MS)
    if rates is None and was is not None:
        hub._catch_up()
    if (was is None) != (rates is None):
        hub.sig_quiet.emit(rates is not None)


def quiet_rates() -> PaintRates | None:
    """The rates in force while a run measures; None while the plots paint at full speed."""
    return _quiet


def paint_clock() -> _RefreshHub:
    """The one timer that drives every live plot's redraw: `sig_tick` after each of its ticks (other widgets that
    should update no faster than the plots can follow it), `sig_quiet(bool)` when quiet painting starts or ends."""
    return _refresh_hub()


# ---- Shared refresh timer
class _RefreshHub(QtCore.QObject):
    """One timer for every live plot: redraws stay in step, and the timer stops when no plot is left.

    Plots redraw in the order they were made: the Run page's latency plot, whose time axis the others follow, first.
    While painting is quiet the timer ticks at the latency trace's rate and a telemetry plot redraws every few ticks.
    """

    sig_tick = QtCore.Signal()
    sig_quiet = QtCore.Signal(bool)

    def __init__(self, parent: QtCore.QObject | None):
        super().__init__(parent)
        self._plots: weakref.WeakKeyDictionary[_TimePlot, None] = weakref.WeakKeyDictionary()
        self._ticks = 0
        self._timer = QtCore.QTimer(self)
        self._timer.setInterval(_quiet.latency_ms if _quiet is not None else REFRESH_INTERVAL_MS)
        self._timer.timeout.connect(self._tick)

    def register(self, plot: _TimePlot) -> None:
        self._plots[plot] = None
        if not self._timer.isActive():
            self._timer.start()

    def interval_ms(self) -> int:
        """Milliseconds between ticks now."""
        return self._timer.interval()

    def _tick(self) -> None:
        if not self._plots:
            self._timer.stop()
            return
        global _axis_tick
        self._ticks += 1
        _axis_tick = _quiet is None or self._ticks % self._every("telemetry") == 0
        try:
            for plot in list(self._plots):
                try:
                    if _quiet is None or self._ticks % self._every(plot.PAINT_KIND) == 0:
                        plot._refresh_if_due()
                except RuntimeError:  # its C++ side was deleted with a parent
                    self._plots.pop(plot, None)
        finally:
            _axis_tick = True
        self.sig_tick.emit()

    def _every(self, kind: str) -> int:
        """Ticks between a quiet plot's frames: its kind's interval over the timer's."""
        wanted = _quiet.latency_ms if kind == "latency" else _quiet.telemetry_ms
        return max(1, math.ceil(wanted / max(1, self._timer.interval())))

    def _catch_up(self) -> None:
        for plot in list(self._plots):
            try:
                plot._catch_up()
            except RuntimeError:
                self._plots.pop(plot, None)


_hub: _RefreshHub | None = None


def _refresh_hub() -> _RefreshHub:
    global _hub
    app = QtCore.QCoreApplication.instance()
    if _hub is not None:
        try:
            if _hub.parent() is app:
                return _hub
        except RuntimeError:  # the application that owned it is gone
            pass
    _hub = _RefreshHub(app)
    return _hub


def _as_pair(t_s, values) -> tuple[np.ndarray, np.ndarray]:
    t = np.asarray(t_s, dtype=float).ravel()
    v = np.asarray(values, dtype=float).ravel()
    if t.shape != v.shape:
        raise ValueError(f"times and values differ in length: {t.size} != {v.size}")
    return t, v


def _peak_downsampled(curve: pg.PlotDataItem) -> None:
    """pyqtgraph's own peak downsampling and clip-to-view, kept as a safety net (and for the plot's context menu).

    A feed already hands the curve at most about two points per pixel of the view, so at three samples per pixel
    pyqtgraph leaves them as they are; re-downsampling a million points every frame was what made an hour of data
    cost ~70 ms a frame.
    """
    curve.setDownsampling(auto=True, method="peak")
    curve.setClipToView(True)
    if "autoDownsampleFactor" in curve.opts:
        curve.opts["autoDownsampleFactor"] = 3.0


def _view_span(curve: pg.PlotDataItem) -> tuple[float, float, int]:
    """(x0, x1, pixels) the curve is seen at: the whole series while the view fits the x axis to the data. A plot
    not on screen has no width that means anything yet (it gets one when shown): it is drawn for a wide screen."""
    view = curve.getViewBox()
    if view is None:
        return -math.inf, math.inf, _DEFAULT_BUCKETS
    widget = view.getViewWidget()
    width = int(view.width()) if widget is not None and widget.isVisible() else 0
    buckets = width if width >= 2 else _DEFAULT_BUCKETS
    if view.autoRangeEnabled()[0] or curve.opts["logMode"][0]:
        return -math.inf, math.inf, buckets
    x0, x1 = view.viewRange()[0]
    return float(x0), float(x1), buckets


class _FedCurve(pg.PlotDataItem):
    """A curve fed decimated data by a _PeakFeed, which redraws it when the view moves.

    A plain PlotDataItem with clip-to-view or downsampling redoes its display data on every change of the view's x
    range, for every curve: with the time axis moving each frame, that doubled the frame's curve work for nothing.
    """

    def viewRangeChanged(self, vb=None, ranges=None, changed=None) -> None:
        self.setProperty("xViewRangeWasChanged", True)  # pyqtgraph's own pass still clips at the next setData


def _block_px(curve: pg.PlotDataItem) -> int:
    """Pixels per decimation block: 1 for a hairline; for a wider stroke (its pen or the halo under it), twice its
    width.

    A stroke w pixels wide shows no detail finer than w pixels, and Qt's cost for a wide stroke grows with the
    points under it (a 6 px halo over two points a pixel cost ~15 ms a paint; a 2 px line ~1 ms).
    """
    widths = [pg.mkPen(curve.opts[kind]).widthF() for kind in ("pen", "shadowPen") if curve.opts.get(kind) is not None]
    widest = round(max(widths, default=1.0))
    return 1 if widest <= 1 else 2 * widest


class _PeakFeed:
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
        x0, x1, pixels = _view_span(self.curve)
        coarse = _quiet.block_px if _quiet is not None else 1  # while a run measures: fewer points a frame
        buckets = max(1, pixels // max(self.block_px, _block_px(self.curve), coarse))
        key = (self._version, self._end, x0, x1, buckets, self.extra)
        if key == self._key:
            return
        self._key = key  # before setData: the view's reaction to it comes back here and must find it done
        x, y = self.series.peaks(x0, x1, buckets, end=self._end, upper=self.upper)
        if self.extra is not None and (x.size == 0 or self.extra[0] > x[-1]):
            x, y = np.append(x, self.extra[0]), np.append(y, self.extra[1])
        self.curve.setData(x, y)


class _TimeAnchor(pg.GraphicsObject):
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
            divisions = 32 if _quiet is None else 4
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


class _GridBehind(pg.GraphicsObject):
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


@dataclass
class _Band:
    t0: float
    t1: float | None  # None: still open, follows the newest data
    label: str
    color: str
    region: pg.LinearRegionItem


class _LegendBar(QtWidgets.QWidget):
    """Legend in a row above the plot: it never hides data or phase labels, and reads well from a distance."""

    _SWATCH = QtCore.QSize(30, 14)

    def __init__(self, parent: QtWidgets.QWidget | None = None):
        super().__init__(parent)
        self._layout = QtWidgets.QHBoxLayout(self)
        self._layout.setContentsMargins(6, 0, 6, 0)
        self._layout.setSpacing(16)
        self._entries: dict[str, tuple[QtWidgets.QWidget, QtWidgets.QLabel, bool]] = {}

    def set_entry(self, key: str, text: str, pens: list[QtGui.QPen], last: bool = False) -> None:
        """Add or relabel an entry; ``last`` entries (e.g. "per core") stay after the others."""
        if key in self._entries:
            _, label, _ = self._entries[key]
            label.setText(text)
            return
        entry = QtWidgets.QWidget()
        row = QtWidgets.QHBoxLayout(entry)
        row.setContentsMargins(0, 0, 0, 0)
        row.setSpacing(5)
        swatch = QtWidgets.QLabel()
        swatch.setPixmap(self._swatch(pens))
        label = QtWidgets.QLabel(text)
        label.setFont(theme.font(theme.BASE_PT))
        label.setStyleSheet(f"color: {theme.FOREGROUND};")
        row.addWidget(swatch)
        row.addWidget(label)
        self._entries[key] = (entry, label, last)
        self._relayout()

    def clear(self) -> None:
        for entry, _, _ in self._entries.values():
            entry.setParent(None)
            entry.deleteLater()
        self._entries.clear()
        self._relayout()

    def labels(self) -> list[str]:
        return [label.text() for _, label, _ in self._ordered()]

    def _ordered(self):
        values = list(self._entries.values())
        return [e for e in values if not e[2]] + [e for e in values if e[2]]

    def _relayout(self) -> None:
        while self._layout.count():
            self._layout.takeAt(0)
        for entry, _, _ in self._ordered():
            self._layout.addWidget(entry)
        self._layout.addStretch(1)

    def _swatch(self, pens: list[QtGui.QPen]) -> QtGui.QPixmap:
        ratio = max(1.0, self.devicePixelRatioF())  # crisp on high-DPI wall screens
        pixmap = QtGui.QPixmap(self._SWATCH * ratio)
        pixmap.setDevicePixelRatio(ratio)
        pixmap.fill(QtCore.Qt.GlobalColor.transparent)
        painter = QtGui.QPainter(pixmap)
        painter.setRenderHint(QtGui.QPainter.RenderHint.Antialiasing)
        middle = self._SWATCH.height() / 2
        for i, pen in enumerate(pens):
            pen = QtGui.QPen(pen)
            pen.setCosmetic(True)
            pen.setWidthF(min(max(pen.widthF(), 1.5), 3.0))
            color = pen.color()
            color.setAlpha(max(color.alpha(), 170))  # translucent lines still need a visible swatch
            pen.setColor(color)
            painter.setPen(pen)
            y = middle + (i - (len(pens) - 1) / 2) * 4
            painter.drawLine(QtCore.QPointF(2, y), QtCore.QPointF(self._SWATCH.width() - 2, y))
        painter.end()
        return pixmap


# ---- Common frame
class _TimePlot(QtWidgets.QWidget):
    """Title row, a pyqtgraph plot against time, phase bands, the dirty flag and the "not available" page."""

    PAINT_KIND = "telemetry"  # which quiet rate (PaintRates) this plot redraws at while a run measures

    def __init__(self, title: str, y_axis_label: str, parent: QtWidgets.QWidget | None = None):
        super().__init__(parent)
        self._dirty = False
        self._refreshing = False
        self.frames = 0  # redraws so far (refresh calls): what tests and benchmarks count
        self._bands: list[_Band] = []
        self._feeds: list[_PeakFeed] = []  # every curve drawn from a series; subclasses add theirs

        self._title = QtWidgets.QLabel(title)
        self._title.setFont(theme.font(theme.TITLE_PT, bold=True))
        self._title.setStyleSheet(f"color: {theme.FOREGROUND};")
        self._readout = QtWidgets.QLabel("")
        self._readout.setFont(theme.font(theme.BASE_PT))
        self._readout.setStyleSheet(f"color: {theme.MUTED};")
        self._readout.setAlignment(QtCore.Qt.AlignmentFlag.AlignRight | QtCore.Qt.AlignmentFlag.AlignVCenter)
        header = QtWidgets.QHBoxLayout()
        header.setContentsMargins(6, 0, 6, 0)
        header.addWidget(self._title)
        header.addStretch(1)
        header.addWidget(self._readout)
        self._legend = _LegendBar()

        self._plot_widget = pg.PlotWidget(background=theme.BACKGROUND)
        self._plot: pg.PlotItem = self._plot_widget.getPlotItem()
        theme.style_plot(self._plot, x_label="time (s)", y_label=y_axis_label)
        self._plot.showGrid(x=False, y=False)  # drawn behind the data instead, opaque: see _GridBehind
        for name in ("left", "bottom"):  # labels carry their unit in words: no SI prefix to re-typeset (setHtml)
            self._plot.getAxis(name).enableAutoSIPrefix(False)  # with every range change, ~1 ms an axis
        self._plot.addItem(_GridBehind(self._plot), ignoreBounds=True)
        self._anchor = _TimeAnchor()
        self._plot.addItem(self._anchor)
        chart_export.set_title(self._plot, self._title)

        self._subject = y_axis_label.split(" (")[0]  # "power (W)" → "power": what the short label names
        self._unavailable_details = ""
        self._unavailable_page = QtWidgets.QFrame()
        self._unavailable_page.setObjectName("unavailablePanel")
        self._unavailable_page.setStyleSheet(
            f"QFrame#unavailablePanel {{ background: {theme.PANEL}; border: 1px dashed {theme.BORDER}; }}"
        )
        self._unavailable_page.setCursor(QtCore.Qt.CursorShape.WhatsThisCursor)
        self._unavailable = QtWidgets.QLabel("")
        self._unavailable.setFont(theme.font(theme.AXIS_LABEL_PT, bold=True))
        self._unavailable.setStyleSheet(f"color: {theme.MUTED};")
        self._unavailable_hint = QtWidgets.QLabel("hover for why")
        self._unavailable_hint.setFont(theme.font(theme.SMALL_PT))
        self._unavailable_hint.setStyleSheet(f"color: {theme.MUTED};")
        page_layout = QtWidgets.QVBoxLayout(self._unavailable_page)
        page_layout.addStretch(1)
        for label in (self._unavailable, self._unavailable_hint):
            page_layout.addWidget(label, 0, QtCore.Qt.AlignmentFlag.AlignCenter)
        page_layout.addStretch(1)
        self._stack = QtWidgets.QStackedWidget()
        self._stack.addWidget(self._plot_widget)
        self._stack.addWidget(self._unavailable_page)

        layout = QtWidgets.QVBoxLayout(self)
        layout.setContentsMargins(0, 4, 0, 0)
        layout.setSpacing(2)
        layout.addLayout(header)
        layout.addWidget(self._legend)
        layout.addWidget(self._stack, 1)
        # 140 px tall still reads (a header, a legend line, ~100 px of plot); more would make four of them, with
        # a profile under them, taller than a laptop's screen (the pages scroll rather than squeeze below this).
        self.setMinimumSize(320, 140)

        view = self._plot.getViewBox()
        view.sigXRangeChanged.connect(self._view_changed)
        view.sigResized.connect(self._view_changed)
        _refresh_hub().register(self)

    # ---- Public API
    def set_title(self, text: str) -> None:
        self._title.setText(text)

    def title(self) -> str:
        return self._title.text()

    def legend_labels(self) -> list[str]:
        return self._legend.labels()

    def refresh(self) -> None:
        """Redraw now from the buffers (the shared timer does this on its own when data arrived)."""
        self._dirty = False
        self.frames += 1
        self._refreshing = True
        try:
            self._redraw()
            self._draw_feeds()
            if _axis_tick:
                self._update_anchor()
            # Fit the axes and move the view now, not at paint: plots linked to this time axis follow at once (they
            # decimate for the new span when they refresh next, not once before and again at paint), and the paint
            # that follows is the only one (a view moved during a paint repaints everything a second time).
            self._plot.getViewBox().prepareForPaint()
            self._update_open_band()
        finally:
            self._refreshing = False

    def add_band(self, t0_s: float, t1_s: float | None = None, label: str = "", color: str | None = None) -> None:
        """Shade a span from ``t0_s`` to ``t1_s`` seconds in ``color`` (hex; the theme's neutral band colour when
        None), with ``label`` at the top — a run phase, or a throttled GPU.

        ``t1_s=None`` leaves the band open: it follows the newest data until the next band starts, which closes it.
        So a caller can simply add a band at each phase change (loading, warm-up, measuring).
        """
        t0 = float(t0_s)
        self.end_band(t0)
        color = color or theme.BAND_COLOR
        region = pg.LinearRegionItem(
            values=(t0, t0 if t1_s is None else float(t1_s)),
            orientation="vertical",
            movable=False,
            brush=pg.mkBrush(theme.qcolor(color, theme.BAND_ALPHA)),
            pen=pg.mkPen(theme.qcolor(color, 140), width=1),
        )
        region.setZValue(-10)
        # Outside the auto-range: an open band follows the newest data, and as a bound it would move the time axis
        # (and repaint every linked plot) with each frame; the anchor takes the bands' spans in steps instead.
        if label:
            # Alternate heights so the names of short neighbouring phases do not overlap.
            position = 0.97 if len(self._bands) % 2 == 0 else 0.89
            pg.InfLineLabel(
                region.lines[0], text=label, position=position, anchors=[(0, 0), (0, 0)],
                color=theme.FOREGROUND,
            ).setFont(theme.font(theme.SMALL_PT))
        self._plot.addItem(region, ignoreBounds=True)
        self._bands.append(_Band(t0, None if t1_s is None else float(t1_s), label, color, region))
        self._update_open_band()
        self._update_anchor()

    def end_band(self, t1_s: float) -> None:
        """Close the open band at ``t1_s`` without starting another (the run ended)."""
        for band in self._bands:
            if band.t1 is None:
                band.t1 = max(float(t1_s), band.t0)
                band.region.setRegion((band.t0, band.t1))
        self._update_anchor()

    def clear_bands(self) -> None:
        for band in self._bands:
            self._plot.removeItem(band.region)
        self._bands.clear()
        self._update_anchor()

    def band_labels(self) -> list[str]:
        return [band.label for band in self._bands]

    def band_colors(self) -> list[str]:
        """The colour each band was given (hex), in the order of ``band_labels()``."""
        return [band.color for band in self._bands]

    def set_unavailable(self, reason: str, short: str | None = None) -> None:
        """Show a short "not available" label in place of the plot, the full reason on hover: a missing sensor is
        never drawn as 0.

        The label is ``short`` when given, else "not available (reason)" when that fits in
        ``UNAVAILABLE_LABEL_MAX`` characters, else "<what the plot shows>: not available". ``reason`` may hold one
        line per source. Data that still arrives is kept but not shown until ``set_available()`` or ``clear()``.
        """
        reason = (reason or "").strip()
        inline = f"not available ({reason})" if reason else "not available"
        if short is None:
            short = inline if len(inline) <= UNAVAILABLE_LABEL_MAX and "\n" not in reason \
                else f"{self._subject}: not available"
        if len(short) > UNAVAILABLE_LABEL_MAX:
            short = short[:UNAVAILABLE_LABEL_MAX - 1].rstrip() + "…"
        self._unavailable.setText(short)
        self._unavailable_details = f"{self._subject}: not available" + (f"\n{reason}" if reason else "")
        tooltip = _details_html(f"{self._subject}: not available", reason.splitlines())
        for widget in (self._unavailable_page, self._unavailable, self._unavailable_hint):
            widget.setToolTip(tooltip)
        self._unavailable_hint.setVisible(bool(reason) and short != inline)
        self._stack.setCurrentWidget(self._unavailable_page)

    def set_available(self) -> None:
        self._stack.setCurrentWidget(self._plot_widget)

    def is_available(self) -> bool:
        return self._stack.currentWidget() is self._plot_widget

    def unavailable_text(self) -> str:
        """The short label shown in place of the plot ("" while the plot shows)."""
        return "" if self.is_available() else self._unavailable.text()

    def unavailable_details(self) -> str:
        """What hovering the label says, as plain text: the subject and the full reason ("" while the plot shows)."""
        return "" if self.is_available() else self._unavailable_details

    def unavailable_tooltip(self) -> str:
        """The label's tooltip as set (rich text)."""
        return "" if self.is_available() else self._unavailable.toolTip()

    @property
    def plot_item(self) -> pg.PlotItem:
        """The pyqtgraph plot, for callers that add their own markers."""
        return self._plot

    # ---- Private API
    def _mark_dirty(self) -> None:
        self._dirty = True

    def _refresh_if_due(self) -> None:
        if self._dirty and self._on_screen():
            self.refresh()

    def _on_screen(self) -> bool:
        """Shown, showing the plot (not its "not available" page), in a window that is not minimized."""
        if not self.isVisible() or self._stack.currentWidget() is not self._plot_widget:
            return False
        window = QtWidgets.QWidget.window(self)  # LatencyPlot's `window` is its percentile window
        return window is None or not window.isMinimized()

    def _catch_up(self) -> None:
        """Quiet painting ended: redraw in full now if on screen, else when shown."""
        self._dirty = True
        if self._on_screen():
            self.refresh()

    def _view_changed(self, *_) -> None:
        """The span or width changed (zoom, pan, resize, the linked time axis moved): decimate for it. A plot that
        has new data redraws now rather than twice, now and at the next tick. While painting is quiet, a plot whose
        view another plot moved waits for its own next frame."""
        if _quiet is not None and not self._refreshing:
            self._dirty = True
        elif self._dirty and self._on_screen():
            self.refresh()
        else:
            self._draw_feeds()

    def _draw_feeds(self) -> None:
        for feed in list(self._feeds):
            feed.draw()

    def showEvent(self, event: QtGui.QShowEvent) -> None:
        super().showEvent(event)
        if self._dirty:
            self.refresh()

    def _update_anchor(self) -> None:
        """The time axis' auto-range span: the data and every band (an open one up to the newest data); while
        quiet, one telemetry interval more, so the newest data stays in view until the axis may move again."""
        first, last = self._earliest_time(), self._latest_time()
        starts = [band.t0 for band in self._bands]
        ends = [band.t1 if band.t1 is not None else band.t0 for band in self._bands]
        if starts:
            first = min(starts) if first is None else min(first, *starts)
            last = max(ends) if last is None else max(last, *ends)
        if _quiet is not None and last is not None:  # room for the data until the axis may move again
            last += _quiet.telemetry_ms / 1000.0
        self._anchor.set_span(first, last)

    def _update_open_band(self) -> None:
        latest = self._latest_time()
        for band in self._bands:
            if band.t1 is None:
                end = band.t0 if latest is None else max(band.t0, latest)
                band.region.setRegion((band.t0, end))

    def _reset_frame(self) -> None:
        self.clear_bands()
        self.set_available()
        self._readout.setText("")
        self._readout.setToolTip("")
        self._mark_dirty()

    def _redraw(self) -> None:
        """Bring the state to the newest data (``take_latest`` on the feeds that changed); refresh draws them."""
        raise NotImplementedError

    def _latest_time(self) -> float | None:
        raise NotImplementedError

    def _earliest_time(self) -> float | None:
        raise NotImplementedError


def _details_html(heading: str, lines: list[str]) -> str:
    """A tooltip of a heading and one paragraph per line, "source: why" with the source in bold. Rich text, so
    Qt word-wraps it: a reason with its fix is a sentence or two, too long for one line on screen."""
    def escape(text: str) -> str:
        return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")

    paragraphs = [f"<p style='margin:0'><b>{escape(heading)}</b></p>"]
    for line in lines:
        name, colon, why = line.partition(": ")
        text = f"<b>{escape(name)}</b>: {escape(why)}" if colon and " " not in name.strip() else escape(line)
        paragraphs.append(f"<p style='margin-top:6px; margin-bottom:0'>{text}</p>")
    return "<qt>" + "".join(paragraphs) + "</qt>"


# ---- Latency
class LatencyPlot(_TimePlot):
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
        self._curve = _FedCurve(pen=latency_pen, skipFiniteCheck=True, name="latency")
        halo = pg.mkPen(theme.BACKGROUND, width=6)  # keeps the lines visible over dense data
        # Opaque, not antialiased, decimated: a long run has thousands of running-percentile points, and wide
        # antialiased strokes of that many points cost seconds per frame.
        self._p50_line = _FedCurve(pen=p50_pen, shadowPen=halo, antialias=False, name=f"p50 (last {self._window})")
        self._p99_line = _FedCurve(pen=p99_pen, shadowPen=halo, antialias=False, name=f"p99 (last {self._window})")
        for line in (self._curve, self._p50_line, self._p99_line):
            self._plot.addItem(line)
            _peak_downsampled(line)  # after addItem: it overwrites both with the plot-wide defaults
        self._feed = _PeakFeed(self._series, self._curve)
        self._p50_feed = _PeakFeed(self._p50, self._p50_line)
        # The p99 line is dashed: its upper envelope, one point a block, costs a tenth of the zig-zag (~7 ms a paint
        # at 1400 px), and a running p99 is read for its rises.
        self._p99_feed = _PeakFeed(self._p99, self._p99_line, upper=True)
        self._feeds.extend([self._feed, self._p50_feed, self._p99_feed])
        self._legend.set_entry("latency", "latency", [latency_pen])
        self._legend.set_entry("p50", f"p50 (last {self._window})", [p50_pen])
        self._legend.set_entry("p99", f"p99 (last {self._window})", [p99_pen])
        for line in (self._p50_line, self._p99_line):
            line.setZValue(5)

    # ---- Public API
    def add_latencies(self, t_s: np.ndarray, latency_ms: np.ndarray) -> None:
        """Append a batch (seconds since run start, milliseconds); drawn at the next timer tick."""
        t, y = _as_pair(t_s, latency_ms)
        if t.size:
            self._series.extend(t, y)
            self._mark_dirty()

    def set_data(self, t_s: np.ndarray, latency_ms: np.ndarray) -> None:
        """Replace all data, e.g. when a finished run is reopened from history. Bands are kept."""
        t, y = _as_pair(t_s, latency_ms)
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


# ---- Telemetry
@dataclass
class _Series:
    data: PeakSeries
    curve: pg.PlotDataItem
    feed: _PeakFeed
    minor: bool


class TimeSeriesPlot(_TimePlot):
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
        t, v = _as_pair(t_s, values)
        s = self._series.get(series) or self._create_series(series)
        if t.size:
            s.data.extend(t, v)
            self._changed.add(series)
            self._mark_dirty()

    def set_data(self, series: str, t_s: np.ndarray, values: np.ndarray) -> None:
        """Replace one series' data (reopening a run from history)."""
        t, v = _as_pair(t_s, values)
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
        curve = _FedCurve(pen=pen, connect="finite", antialias=False, name=None if minor and not first_minor else name)
        curve.setZValue(0 if minor else 10)
        self._plot.addItem(curve)
        # After addItem: PlotItem.addItem overwrites both with the plot-wide defaults.
        _peak_downsampled(curve)
        data = PeakSeries(self._capacity)
        # A per-core line is faint context under the total: min and max per 4 px keep each core's peaks and dips
        # at a quarter of the points (64 cores would otherwise be most of a frame).
        s = _Series(data, curve, _PeakFeed(data, curve, block_px=MINOR_BLOCK_PX if minor else 1), minor)
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
