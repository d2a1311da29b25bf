"""The demo's live latency trace: latency per iteration against time, with a bold running median per series.

Split from `widgets.demo_tiles` (the tiles, banner and scaled labels it shares fonts with). A view only: data
goes to ring buffers and the owner's one timer calls `refresh()`; nothing redraws per message.
"""

from __future__ import annotations

from dataclasses import dataclass
from html import escape

import numpy as np
import pyqtgraph as pg
from PySide6 import QtCore, QtWidgets

from widgets import theme
from widgets.demo_tiles import CAPTION_PX, LABEL_PX, TICK_PX, ScaledLabel, pixel_font
from widgets.formatting import format_number
from widgets.ring_buffer import RingBuffer

TRACE_CAPACITY = 400_000  # points per series: a long demo run keeps its newest


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
        self._restyle()

    def set_scale(self, scale: float) -> None:
        self._scale = scale
        self._title.set_scale(scale)
        self._note.set_scale(scale)
        self._restyle()

    # ---- Private API
    def _restyle(self) -> None:
        """Redraw the plot, every series' pen and the legend after the scheme or the scale changed."""
        self._style()
        for s in self._series.values():
            self._pen(s)
        self._update_legend()

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
    return escape(text, quote=False)
