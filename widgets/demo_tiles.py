"""Big-screen views for demo mode: a figure tile, a live latency trace, a verdict banner, scaled labels.

Read from 3 m away: sizes are pixels on a 1920×1080 screen, scaled with the window (`set_scale`), so a figure
is ~100 px tall and no text is under 24 px; colours are the scheme's foreground on its panel (no grey on grey).
Each view takes its `theme.Scheme` explicitly and can be switched live (`set_scheme`): demo mode has its own
light/dark choice, apart from the window's.

Views only: they are fed numbers and arrays, format them (`widgets.formatting`) and draw; they compute nothing
about runs. Nothing redraws per message: the trace appends to ring buffers and the owner's one timer calls
`refresh()`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyqtgraph as pg
from PySide6 import QtCore, QtGui, QtWidgets

from widgets import theme
from widgets.formatting import MISSING, format_number
from widgets.ring_buffer import RingBuffer

# Pixel sizes at 1920×1080 (scale 1.0).
VALUE_PX = 104
COMPACT_VALUE_PX = 68
UNIT_PX = 38
LABEL_PX = 32
CAPTION_PX = 25
TICK_PX = 24
TRACE_CAPACITY = 400_000  # points per series: a long demo run keeps its newest
_ROLE_COLORS = {"foreground": "foreground", "muted": "muted", "good": "good", "bad": "bad"}


def _color(scheme: theme.Scheme, role: str) -> str:
    if role in _ROLE_COLORS:
        return getattr(scheme, _ROLE_COLORS[role])
    if role == "accent":
        return scheme.status.get("running", scheme.foreground)
    if role == "estimated":
        return scheme.status.get("interrupted", scheme.bad)
    return role  # an explicit colour


def pixel_font(px: float, bold: bool = False) -> QtGui.QFont:
    font = QtGui.QFont()
    font.setPixelSize(max(8, round(px)))
    font.setBold(bold)
    return font


class ScaledLabel(QtWidgets.QLabel):
    """A label whose font is `px` pixels at scale 1, in a colour role of the scheme (foreground, muted, good,
    bad, accent, estimated, or a colour).

    `shrink`: a one-line label that never widens the window; text that does not fit ends in "…" (the whole
    text stays in `text()` and the tooltip). Without it, the label asks for its text's width (or wraps)."""

    def __init__(self, text: str = "", px: float = CAPTION_PX, bold: bool = False, role: str = "foreground",
                 scheme: theme.Scheme | None = None, wrap: bool = False, shrink: bool = False):
        super().__init__()
        self._px, self._bold, self._role = px, bold, role
        self._scheme = scheme or theme.current()
        self._scale = 1.0
        self._shrink = shrink and not wrap
        self._full = ""
        self.setWordWrap(wrap)
        self.setTextFormat(QtCore.Qt.TextFormat.PlainText)
        if self._shrink:
            self.setSizePolicy(QtWidgets.QSizePolicy.Policy.Ignored, QtWidgets.QSizePolicy.Policy.Preferred)
        self._apply()
        self.setText(text)

    def setText(self, text: str) -> None:  # noqa: N802 — Qt override
        self._full = str(text)
        if self._shrink:
            self._elide()
        else:
            super().setText(self._full)

    def text(self) -> str:
        return self._full

    def set_role(self, role: str) -> None:
        if role != self._role:
            self._role = role
            self._apply()

    def role(self) -> str:
        return self._role

    def set_scheme(self, scheme: theme.Scheme) -> None:
        self._scheme = scheme
        self._apply()

    def set_scale(self, scale: float) -> None:
        self._scale = scale
        self.setFont(pixel_font(self._px * scale, self._bold))
        if self._shrink:
            self._elide()

    def resizeEvent(self, event: QtGui.QResizeEvent) -> None:  # noqa: N802 — Qt override
        super().resizeEvent(event)
        if self._shrink:
            self._elide()

    def _elide(self) -> None:
        shown = self.fontMetrics().elidedText(self._full, QtCore.Qt.TextElideMode.ElideRight, max(1, self.width()))
        super().setText(shown)
        self.setToolTip(self._full if shown != self._full else "")

    def _apply(self) -> None:
        self.setFont(pixel_font(self._px * self._scale, self._bold))
        self.setStyleSheet(f"color: {_color(self._scheme, self._role)}; background: transparent;")


def tile_number(value: float | None) -> str:
    """A figure short enough for a tile: 3 significant digits, and 10,000 and up as 10.4k, 1.23M."""
    if value is None:
        return MISSING
    try:
        x = float(value)
    except (TypeError, ValueError):
        return MISSING
    if not np.isfinite(x):
        return MISSING
    for limit, suffix in ((1e9, "G"), (1e6, "M"), (1e4, "k")):
        if abs(x) >= limit:
            return f"{format_number(x / (limit if suffix != 'k' else 1e3))}{suffix}"
    return format_number(x)


class FigureTile(QtWidgets.QFrame):
    """One figure: label (and an ESTIMATED tag when it is one), value with its unit, a caption saying what the
    figure covers. A missing figure reads "not available" with the reason, never 0.

    Value and unit are one rich-text line that wraps the unit under the value when the tile is too narrow for
    both (a long unit, a race's narrower tiles); `compact` tiles use a smaller value."""

    def __init__(self, label: str, scheme: theme.Scheme | None = None, compact: bool = False,
                 parent: QtWidgets.QWidget | None = None):
        super().__init__(parent)
        self.setObjectName("figure_tile")
        self._scheme = scheme or theme.current()
        self._scale = 1.0
        self._compact = compact
        self._value_px = COMPACT_VALUE_PX if compact else VALUE_PX
        self._value_text, self._unit_text, self._muted = MISSING, "", True
        self._label = ScaledLabel(label, LABEL_PX, True, "muted", self._scheme, shrink=True)
        self._tag = ScaledLabel("ESTIMATED", CAPTION_PX, True, "estimated", self._scheme)
        self._tag.hide()
        self._figure = QtWidgets.QLabel()
        self._figure.setTextFormat(QtCore.Qt.TextFormat.RichText)
        self._figure.setWordWrap(True)
        self._figure.setStyleSheet("background: transparent;")
        self._caption = ScaledLabel("", CAPTION_PX, False, "muted", self._scheme, wrap=True)
        self._caption.setAlignment(QtCore.Qt.AlignmentFlag.AlignLeft | QtCore.Qt.AlignmentFlag.AlignTop)
        top = QtWidgets.QHBoxLayout()
        top.addWidget(self._label, 1)
        top.addWidget(self._tag)
        layout = QtWidgets.QVBoxLayout(self)
        layout.setContentsMargins(24, 14, 24, 14)
        layout.setSpacing(4)
        layout.addLayout(top)
        layout.addWidget(self._figure)
        layout.addWidget(self._caption)
        layout.addStretch(1)
        self._labels = (self._label, self._tag, self._caption)
        self._apply_frame()
        self._show_figure()

    # ---- Public API
    def set_value(self, value: float | None, unit: str, caption: str = "", estimated: bool = False,
                  muted: bool = False) -> None:
        """Show a number (3 significant digits; 10.4k from 10,000) with its unit; `estimated` adds the ESTIMATED
        tag; `muted` greys the value."""
        text = tile_number(value)
        self._value_text, self._unit_text = text, (unit if text != MISSING else "")
        self._muted = muted or text == MISSING
        self._small = False
        self._caption.setText(caption)
        self._caption.setToolTip("")
        self._tag.setVisible(estimated)
        self._show_figure()

    def set_unavailable(self, reason: str, details: str = "") -> None:
        """"not available" and why (`details` on hover): a missing sensor is never shown as 0."""
        self._value_text, self._unit_text, self._muted, self._small = "not available", "", True, True
        self._caption.setText(reason)
        self._caption.setToolTip(details or reason)
        self._tag.hide()
        self._show_figure()

    def clear(self, caption: str = "") -> None:
        self.set_value(None, "", caption)

    def set_scheme(self, scheme: theme.Scheme) -> None:
        self._scheme = scheme
        for label in self._labels:
            label.set_scheme(scheme)
        self._apply_frame()
        self._show_figure()

    def set_scale(self, scale: float) -> None:
        self._scale = scale
        for label in self._labels:
            label.set_scale(scale)
        margin = round((18 if self._compact else 24) * scale)
        self.layout().setContentsMargins(margin, round(12 * scale), margin, round(12 * scale))
        self._show_figure()

    # Read back (tests, screenshots' checks)
    def label_text(self) -> str:
        return self._label.text()

    def value_text(self) -> str:
        return self._value_text

    def unit_text(self) -> str:
        return self._unit_text

    def caption_text(self) -> str:
        return self._caption.text()

    def is_estimated(self) -> bool:
        return not self._tag.isHidden()

    # ---- Private API
    _small = False

    def _show_figure(self) -> None:
        s, k = self._scheme, self._scale
        color = s.muted if self._muted else s.foreground
        # "not available" is said smaller, on one line
        value_px = round(self._value_px * k * ((0.42 if self._compact else 0.5) if self._small else 1.0))
        html = (f'<span style="font-size:{value_px}px; font-weight:700; color:{color}">'
                f"{_escape(self._value_text)}</span>")
        if self._unit_text:
            html += (f'<span style="font-size:{round(UNIT_PX * k)}px; color:{s.foreground}"> '
                     f"{_escape(self._unit_text)}</span>")
        self._figure.setText(html)

    def _apply_frame(self) -> None:
        s = self._scheme
        self.setStyleSheet(f"QFrame#figure_tile {{ background: {s.panel}; border: 2px solid {s.border}; "
                           "border-radius: 14px; }")


class Banner(QtWidgets.QFrame):
    """A headline and a few lines under it, with a tone: good (a decided verdict), bad (a failure), neutral."""

    def __init__(self, scheme: theme.Scheme | None = None, headline_px: float = 58,
                 parent: QtWidgets.QWidget | None = None):
        super().__init__(parent)
        self.setObjectName("banner")
        self._scheme = scheme or theme.current()
        self._tone = "neutral"
        self._headline = ScaledLabel("", headline_px, True, "foreground", self._scheme, wrap=True)
        self._lines = [ScaledLabel("", 32, False, "foreground", self._scheme, wrap=True),
                       *(ScaledLabel("", 27, False, "muted", self._scheme, wrap=True) for _ in range(3))]
        layout = QtWidgets.QVBoxLayout(self)
        layout.setContentsMargins(36, 20, 36, 20)
        layout.setSpacing(8)
        layout.addWidget(self._headline)
        for line in self._lines:
            layout.addWidget(line)
        self._apply_frame()

    def set_text(self, headline: str, lines: list[str] | tuple[str, ...] = (), tone: str = "neutral") -> None:
        self._tone = tone
        self._headline.setText(headline)
        self._headline.set_role({"good": "good", "bad": "bad"}.get(tone, "foreground"))
        for label, text in zip(self._lines, [*lines, *[""] * len(self._lines)], strict=False):
            label.setText(text)
            label.setVisible(bool(text))
        self._apply_frame()

    def headline(self) -> str:
        return self._headline.text()

    def lines(self) -> list[str]:
        return [label.text() for label in self._lines if label.text()]

    def tone(self) -> str:
        return self._tone

    def set_scheme(self, scheme: theme.Scheme) -> None:
        self._scheme = scheme
        for label in (self._headline, *self._lines):
            label.set_scheme(scheme)
        self._apply_frame()

    def set_scale(self, scale: float) -> None:
        for label in (self._headline, *self._lines):
            label.set_scale(scale)

    def _apply_frame(self) -> None:
        s = self._scheme
        edge = {"good": s.good, "bad": s.bad}.get(self._tone, s.border)
        self.setStyleSheet(f"QFrame#banner {{ background: {s.panel}; border: 4px solid {edge}; "
                           "border-radius: 14px; }")


@dataclass
class _Series:
    label: str
    color: str
    t: RingBuffer
    y: RingBuffer
    median_t: RingBuffer
    median_y: RingBuffer
    raw: pg.PlotDataItem
    median: pg.PlotDataItem


class DemoTrace(QtWidgets.QWidget):
    """Latency per iteration against time, one colour per series, with each series' running median as a bold
    line: the dots show the spread, the line is what the audience follows.

    The y axis runs from 0 to, per series, the lower of 1.3 × its p99 and 4 × its median over the recent points
    (the highest of the series), and always over the whole median line: a stall, or a busy machine's bursts,
    must not flatten the line the audience reads into the floor, nor push it off the top. Points above the top are off the scale, not dropped, and the header says how
    many and how high they went. Data goes to ring buffers; `refresh()` redraws.
    """

    def __init__(self, title: str = "Latency per iteration", scheme: theme.Scheme | None = None,
                 parent: QtWidgets.QWidget | None = None, capacity: int = TRACE_CAPACITY,
                 x_label: str = "time (s)"):
        super().__init__(parent)
        self._scheme = scheme or theme.current()
        self._x_label = x_label
        self._markers: list[tuple[pg.InfiniteLine, pg.InfLineLabel, str]] = []
        self._off_scale = ""  # how many recent points lie above the y axis' top
        self._scale = 1.0
        self._capacity = capacity
        self._series: dict[str, _Series] = {}
        self._dirty = False
        self._title = ScaledLabel(title, LABEL_PX, True, "foreground", self._scheme)
        self._note = ScaledLabel("", CAPTION_PX, False, "muted", self._scheme, shrink=True)
        self._legend = QtWidgets.QLabel()
        self._legend.setTextFormat(QtCore.Qt.TextFormat.RichText)
        header = QtWidgets.QHBoxLayout()
        header.setContentsMargins(8, 0, 8, 0)
        header.setSpacing(24)
        header.addWidget(self._title)
        header.addWidget(self._note, 1)
        header.addWidget(self._legend)
        self._plot_widget = pg.PlotWidget()
        self._plot: pg.PlotItem = self._plot_widget.getPlotItem()
        self._plot.hideButtons()
        self._plot.setMenuEnabled(False)
        self._plot.setMouseEnabled(x=False, y=False)
        layout = QtWidgets.QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(6)
        layout.addLayout(header)
        layout.addWidget(self._plot_widget, 1)
        self._style()

    # ---- Public API
    def set_series(self, key: str, label: str, color: str) -> None:
        """Create a series drawn in `color`, or relabel and recolour it (a scheme change)."""
        if key in self._series:
            series = self._series[key]
            series.label, series.color = label, color
            self._pen(series)
            self._update_legend()
            return
        raw = pg.PlotDataItem(antialias=False, connect="finite")
        median = pg.PlotDataItem(antialias=True, connect="finite")
        for curve in (raw, median):
            self._plot.addItem(curve)
            curve.setDownsampling(auto=True, method="peak")
            curve.setClipToView(True)
        median.setZValue(10)
        cap = self._capacity
        self._series[key] = _Series(label, color, RingBuffer(cap), RingBuffer(cap), RingBuffer(20_000),
                                    RingBuffer(20_000), raw, median)
        self._pen(self._series[key])
        self._update_legend()

    def add_points(self, key: str, t_s: np.ndarray, latency_ms: np.ndarray) -> None:
        s = self._series[key]
        t, y = np.asarray(t_s, dtype=float).ravel(), np.asarray(latency_ms, dtype=float).ravel()
        if t.size:
            s.t.extend(t)
            s.y.extend(y)
            self._dirty = True

    def add_gap(self, key: str) -> None:
        """Break the series' lines here (a race's next round of this side starts later on the axis)."""
        s = self._series[key]
        # NaN in y only: pyqtgraph's clip-to-view searches the x values, which must stay finite and sorted.
        for t, y in ((s.t, s.y), (s.median_t, s.median_y)):
            last = t.tail(1)
            if last.size:
                t.append(last[0])
                y.append(np.nan)

    def add_median(self, key: str, t_s: float, latency_ms: float | None) -> None:
        if latency_ms is None:
            return
        s = self._series[key]
        s.median_t.append(float(t_s))
        s.median_y.append(float(latency_ms))
        self._dirty = True

    def add_marker(self, x: float, label: str) -> None:
        """A thin vertical line at `x` with `label` at its top (where a race's round begins)."""
        line = pg.InfiniteLine(pos=float(x), angle=90, movable=False)
        line.setZValue(20)  # over the data, so its label stays readable
        self._plot.addItem(line)
        text = pg.InfLineLabel(line, text=label, position=0.93, anchors=[(0, 0), (0, 0)])
        self._markers.append((line, text, label))
        self._style_marker(line, text)
        self._dirty = True

    def marker_labels(self) -> list[str]:
        return [label for _, _, label in self._markers]

    def clear(self) -> None:
        """Forget every series and marker (a new run or race)."""
        for s in self._series.values():
            self._plot.removeItem(s.raw)
            self._plot.removeItem(s.median)
        self._series.clear()
        self._off_scale = ""
        self._note.setText("")
        for line, _, _ in self._markers:
            self._plot.removeItem(line)
        self._markers.clear()
        self._update_legend()
        self._dirty = True

    def refresh(self) -> None:
        """Redraw from the buffers if anything arrived since the last redraw."""
        if not self._dirty:
            return
        self._dirty = False
        latest, earliest, recent = 0.0, None, []
        for s in self._series.values():
            t = s.t.values()
            s.raw.setData(t, s.y.values())
            s.median.setData(s.median_t.values(), s.median_y.values())
            t = t[np.isfinite(t)]
            if t.size:
                latest = max(latest, float(t[-1]))
                earliest = float(t[0]) if earliest is None else min(earliest, float(t[0]))
                tail = s.y.tail(20_000)
                recent.append(tail[np.isfinite(tail)])
        recent = [values for values in recent if values.size]
        if recent:
            top = max(min(1.3 * float(np.percentile(v, 99)), 4.0 * float(np.median(v))) for v in recent)
            medians = [m for m in (s.median_y.values() for s in self._series.values()) if np.isfinite(m).any()]
            if medians:  # the bold lines are what the audience follows: always wholly in view
                top = max(top, 1.15 * max(float(np.nanmax(m)) for m in medians))
            top = top if top > 0 else 1.0
            self._plot.setYRange(0.0, top, padding=0)
            start = min(0.0, earliest or 0.0)
            self._plot.setXRange(start, start + max(latest - start, 1.0) * 1.02, padding=0)
            values = np.concatenate(recent)
            above = int((values > top).sum())
            self._off_scale = (f"{above / values.size:.0%} off scale (max {format_number(float(values.max()))} ms)"
                               if above > values.size * 0.005 else "")
        else:
            self._off_scale = ""
        if self._note.text() != self._off_scale:
            self._note.setText(self._off_scale)
        # Move the view now, not during the paint: a view moved while painting repaints everything a second time.
        self._plot.getViewBox().prepareForPaint()

    def series_keys(self) -> list[str]:
        return list(self._series)

    def point_count(self, key: str) -> int:
        return len(self._series[key].t) if key in self._series else 0

    def drawn(self, key: str, median: bool = False) -> tuple[np.ndarray, np.ndarray]:
        """What the series' curve draws now (after downsampling and clipping to the view)."""
        series = self._series[key]
        x, y = (series.median if median else series.raw).getData()
        return (np.empty(0), np.empty(0)) if x is None else (np.asarray(x), np.asarray(y))

    def legend_text(self) -> str:
        return self._legend.text()

    @property
    def plot_item(self) -> pg.PlotItem:
        return self._plot

    def off_scale_text(self) -> str:
        return self._note.text()

    def set_scheme(self, scheme: theme.Scheme) -> None:
        self._scheme = scheme
        self._title.set_scheme(scheme)
        self._note.set_scheme(scheme)
        self._style()
        for s in self._series.values():
            self._pen(s)
        self._update_legend()

    def set_scale(self, scale: float) -> None:
        self._scale = scale
        self._title.set_scale(scale)
        self._note.set_scale(scale)
        self._style()
        for s in self._series.values():
            self._pen(s)
        self._update_legend()

    # ---- Private API
    def _style(self) -> None:
        s, k = self._scheme, self._scale
        self._plot_widget.setBackground(s.background)
        tick_font = pixel_font(TICK_PX * k)
        for name, text in (("bottom", self._x_label), ("left", "latency (ms)")):
            axis = self._plot.getAxis(name)
            axis.enableAutoSIPrefix(False)
            axis.setPen(pg.mkPen(s.foreground, width=2))
            axis.setTextPen(pg.mkPen(s.foreground))
            axis.setStyle(tickFont=tick_font, tickTextOffset=round(10 * k), tickLength=round(-10 * k))
            axis.setLabel(text, **{"color": s.foreground, "font-size": f"{round(CAPTION_PX * k)}px"})
        self._plot.getAxis("left").setWidth(round(120 * k))
        self._plot.getAxis("bottom").setHeight(round(80 * k))
        self._plot.showGrid(x=True, y=True, alpha=0.2)
        for line, text, _ in self._markers:
            self._style_marker(line, text)
        self._legend.setFont(pixel_font(CAPTION_PX * k))
        self._legend.setStyleSheet(f"color: {s.foreground}; background: transparent;")

    def _style_marker(self, line: pg.InfiniteLine, text: pg.InfLineLabel) -> None:
        s, k = self._scheme, self._scale
        line.setPen(pg.mkPen(s.muted, width=max(1, round(2 * k)), style=QtCore.Qt.PenStyle.DashLine))
        text.setColor(s.foreground)
        text.fill = pg.mkBrush(theme.qcolor(s.background, 220))  # readable over the data it sits on
        text.setFont(pixel_font(CAPTION_PX * k, bold=True))

    def _pen(self, series: _Series) -> None:
        s, k = self._scheme, self._scale
        faint = theme.tint(series.color, 0.45, base=s.background)
        series.raw.setPen(pg.mkPen(faint, width=max(1, round(1.5 * k))))
        series.median.setPen(pg.mkPen(series.color, width=max(2, round(6 * k))))
        series.median.setShadowPen(pg.mkPen(s.background, width=max(4, round(12 * k))))

    def _update_legend(self) -> None:
        parts = []
        for series in self._series.values():
            parts.append(f'<span style="color:{series.color}; font-weight:700">━━</span>&nbsp;'
                         f'{_escape(series.label)}')
        if parts:
            parts.append(f'<span style="color:{self._scheme.muted}">bold line: median, last 1 s</span>')
        self._legend.setText("&nbsp;&nbsp;&nbsp;&nbsp;".join(parts))


def _escape(text: str) -> str:
    return (text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;"))
