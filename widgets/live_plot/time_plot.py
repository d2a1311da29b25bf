"""What every live plot shares: the title row, a pyqtgraph plot against time with its grid, time anchor and phase
bands, the legend row, the dirty flag the refresh hub redraws by, and the "not available" page a missing sensor
shows instead of a 0 line. The plot kinds (latency_plot, time_series_plot) add their series and feeds.
"""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6 import QtCore, QtGui, QtWidgets

from widgets import chart_export, theme
from widgets.live_plot.band import Band, band_region
from widgets.live_plot.grid_behind import GridBehind
from widgets.live_plot.legend_bar import LegendBar
from widgets.live_plot.paint_rates import state
from widgets.live_plot.peak_feed import PeakFeed
from widgets.live_plot.refresh_hub import refresh_hub
from widgets.live_plot.time_anchor import TimeAnchor
from widgets.plot_style import style_plot

# A missing sensor is a short label in the plot ("power: not available"); the reason, often a paragraph with
# the fix, is its tooltip. Longer than this, the label would wrap into the paragraph it replaces.
UNAVAILABLE_LABEL_MAX = 40


def as_pair(t_s, values) -> tuple[np.ndarray, np.ndarray]:
    """Times and values as two flat float arrays of one length; a clear error when the lengths differ."""
    t = np.asarray(t_s, dtype=float).ravel()
    v = np.asarray(values, dtype=float).ravel()
    if t.shape != v.shape:
        raise ValueError(f"times and values differ in length: {t.size} != {v.size}")
    return t, v


class TimePlot(QtWidgets.QWidget):
    """Title row, a pyqtgraph plot against time, phase bands, the dirty flag and the "not available" page."""

    PAINT_KIND = "telemetry"  # which quiet rate (PaintRates) this plot redraws at while a run measures

    def __init__(self, title: str, y_axis_label: str, parent: QtWidgets.QWidget | None = None):
        super().__init__(parent)
        self._dirty = False
        self._refreshing = False
        self.frames = 0  # redraws so far (refresh calls): what tests and benchmarks count
        self._bands: list[Band] = []
        self._feeds: list[PeakFeed] = []  # every curve drawn from a series; subclasses add theirs

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
        self._legend = LegendBar()

        self._plot_widget = pg.PlotWidget(background=theme.BACKGROUND)
        self._plot: pg.PlotItem = self._plot_widget.getPlotItem()
        style_plot(self._plot, x_label="time (s)", y_label=y_axis_label)
        self._plot.showGrid(x=False, y=False)  # drawn behind the data instead, opaque: see grid_behind.GridBehind
        for name in ("left", "bottom"):  # labels carry their unit in words: no SI prefix to re-typeset (setHtml)
            self._plot.getAxis(name).enableAutoSIPrefix(False)  # with every range change, ~1 ms an axis
        self._plot.addItem(GridBehind(self._plot), ignoreBounds=True)
        self._anchor = TimeAnchor()
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
        refresh_hub().register(self)

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
            if state.axis_tick:
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
        t1 = None if t1_s is None else float(t1_s)
        # Alternate heights so the names of short neighbouring phases do not overlap.
        region = band_region(t0, t1, label, color, high=len(self._bands) % 2 == 0)
        # Outside the auto-range: an open band follows the newest data, and as a bound it would move the time axis
        # (and repaint every linked plot) with each frame; the anchor takes the bands' spans in steps instead.
        self._plot.addItem(region, ignoreBounds=True)
        self._bands.append(Band(t0, t1, label, color, region))
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
        tooltip = details_html(f"{self._subject}: not available", reason.splitlines())
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
        if state.quiet is not None and not self._refreshing:
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
        if state.quiet is not None and last is not None:  # room for the data until the axis may move again
            last += state.quiet.telemetry_ms / 1000.0
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


def details_html(heading: str, lines: list[str]) -> str:
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
