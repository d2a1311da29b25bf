"""Charts as SVG text, for reports: vector, self-contained, readable without the console.

Why our own: a report must be one file with no network fetch and no Qt in the core (the PDF writer renders the
same SVG with Qt), and the few chart kinds a report needs (lines, steps, points, reference lines, linear or log
axes, a legend) are short to draw. Every piece of text is XML-escaped here, so a run name can never inject markup.
Lines of many points are thinned to at most MAX_POINTS per series, keeping each bucket's extremes (pyqtgraph's
"peak" downsampling), so a spike is never smoothed away.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from html import escape

import numpy as np

MAX_POINTS = 1200
PALETTE = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#17becf")
FONT = "DejaVu Sans, Helvetica, Arial, sans-serif"
INK, MUTED, GRID = "#222222", "#666666", "#e3e3e3"
SVG_NAMESPACE = "http://www.w3.org/2000/svg"
_CLIP_IDS = itertools.count(1)  # each chart's clip path needs an id of its own once charts share a page


@dataclass
class Series:
    """One series: `kind` line | step (a CDF) | points; `sizes` (points only) in pixels; `names` hover titles;
    `labels` (points only) short text drawn beside each dot, e.g. the run's letter."""

    label: str
    x: Sequence[float]
    y: Sequence[float]
    color: str = ""
    kind: str = "line"
    dashed: bool = False
    sizes: Sequence[float] | None = None
    names: Sequence[str] | None = None
    labels: Sequence[str] | None = None


@dataclass
class Chart:
    """A titled chart; axis labels carry their units, e.g. "latency (ms)"."""

    title: str
    x_label: str
    y_label: str
    series: list[Series] = field(default_factory=list)
    x_log: bool = False
    y_log: bool = False
    hlines: list[tuple[float, str]] = field(default_factory=list)  # (y, label): reference lines, e.g. p99
    note: str = ""  # one line under the chart: what is drawn, how it was obtained
    width: int = 760
    height: int = 320


def render(chart: Chart) -> str:
    """The chart as an <svg> element for inlining in HTML (no namespace: HTML gives inline SVG its own, and the
    page then names no URL at all); `standalone()` makes a file of it."""
    left, right, top, bottom = 74, 16, 34, 52 + (18 if chart.note else 0)
    legend_rows = _legend_rows(chart)
    bottom += 18 * legend_rows
    w, h = chart.width, chart.height
    pw, ph = w - left - right, h - top - bottom
    clip = f"plot{next(_CLIP_IDS)}"
    parts = [f'<svg width="{w}" height="{h}" viewBox="0 0 {w} {h}" '
             f'font-family="{FONT}" font-size="12">',
             f'<rect x="0" y="0" width="{w}" height="{h}" fill="#ffffff"/>',
             _text(left, 20, chart.title, size=14, weight="bold")]
    drawn = [s for s in chart.series if len(s.x) and len(s.y)]
    if not drawn:
        parts.append(_text(left + pw / 2, top + ph / 2, "no data to draw", anchor="middle", color=MUTED))
        parts.append("</svg>")
        return "".join(parts)
    xs = np.concatenate([np.asarray(s.x, dtype=float) for s in drawn])
    ys = np.concatenate([np.asarray(s.y, dtype=float) for s in drawn] +
                        [np.asarray([y for y, _ in chart.hlines], dtype=float)])
    x_axis = _Axis(xs, chart.x_log, left, left + pw)
    y_axis = _Axis(ys, chart.y_log, top + ph, top)
    parts += _grid_and_ticks(x_axis, y_axis, left, top, pw, ph)
    parts.append(f'<defs><clipPath id="{clip}"><rect x="{left}" y="{top}" width="{pw}" height="{ph}"/></clipPath>'
                 f'</defs><g clip-path="url(#{clip})">')
    for y, label in chart.hlines:
        if y_axis.usable(y):
            py = y_axis.at(y)
            parts.append(f'<line x1="{left}" y1="{py:.1f}" x2="{left + pw}" y2="{py:.1f}" stroke="{MUTED}" '
                         'stroke-dasharray="3 3" stroke-width="1"/>')
            parts.append(_text(left + 4, py - 3, label, size=10, color=MUTED))
    for index, series in enumerate(drawn):
        parts.append(_series(series, series.color or PALETTE[index % len(PALETTE)], x_axis, y_axis))
    parts.append("</g>")
    parts.append(f'<rect x="{left}" y="{top}" width="{pw}" height="{ph}" fill="none" stroke="#999999"/>')
    parts.append(_text(left + pw / 2, top + ph + 34, chart.x_label, anchor="middle"))
    parts.append(_text(16, top + ph / 2, chart.y_label, anchor="middle", rotate=True))
    parts += _legend(chart, drawn, left, top + ph + 52, pw)
    if chart.note:
        parts.append(_text(left, h - 8, chart.note, size=10, color=MUTED))
    parts.append("</svg>")
    return "".join(parts)


def standalone(svg_text: str) -> str:
    """An inline chart as a file of its own (an .svg, or what Qt's renderer reads): with the SVG namespace."""
    return svg_text.replace("<svg ", f'<svg xmlns="{SVG_NAMESPACE}" ', 1)


def thin(x: Sequence[float], y: Sequence[float], limit: int = MAX_POINTS) -> tuple[np.ndarray, np.ndarray]:
    """At most ~`limit` points: each bucket of consecutive points keeps its minimum and maximum, in order."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if x.size <= limit:
        return x, y
    buckets = limit // 2
    edges = np.linspace(0, x.size, buckets + 1).astype(int)
    keep = []
    for lo, hi in zip(edges[:-1], edges[1:], strict=True):
        if hi <= lo:
            continue
        segment = y[lo:hi]
        pair = sorted({lo + int(np.argmin(segment)), lo + int(np.argmax(segment))})
        keep += pair
    index = np.asarray(keep)
    return x[index], y[index]


# ---- Private API
class _Axis:
    """Maps data to pixels between `start` and `end` (y runs upwards: start is the bottom)."""

    def __init__(self, values: np.ndarray, log: bool, start: float, end: float):
        finite = values[np.isfinite(values)]
        if log:
            finite = finite[finite > 0]
        self.log = log and finite.size > 0
        if finite.size == 0:
            finite = np.asarray([0.0, 1.0])
        lo, hi = float(finite.min()), float(finite.max())
        if self.log:
            lo, hi = 10 ** math.floor(math.log10(lo)), 10 ** math.ceil(math.log10(hi))
            if lo == hi:
                hi = lo * 10
        else:
            if lo == hi:
                lo, hi = lo - (abs(lo) * 0.1 or 1), hi + (abs(hi) * 0.1 or 1)
            step = _nice_step(hi - lo)
            lo, hi = math.floor(lo / step) * step, math.ceil(hi / step) * step
            if float(finite.min()) >= 0 > lo:
                lo = 0.0
        self.lo, self.hi, self.start, self.end = lo, hi, start, end

    def _t(self, v: float) -> float:
        return math.log10(v) if self.log else v

    def usable(self, v: float) -> bool:
        return math.isfinite(v) and (v > 0 or not self.log)

    def at(self, v: float) -> float:
        lo, hi = self._t(self.lo), self._t(self.hi)
        return self.start + (self._t(v) - lo) / (hi - lo) * (self.end - self.start)

    def ticks(self) -> list[float]:
        if self.log:
            return [10.0 ** k for k in range(round(math.log10(self.lo)), round(math.log10(self.hi)) + 1)]
        step = _nice_step(self.hi - self.lo)
        count = int(round((self.hi - self.lo) / step))
        return [self.lo + i * step for i in range(count + 1)]


def _nice_step(span: float, target: int = 6) -> float:
    raw = span / target if span > 0 else 1.0
    magnitude = 10 ** math.floor(math.log10(raw))
    for factor in (1, 2, 2.5, 5, 10):
        if raw <= factor * magnitude:
            return factor * magnitude
    return 10 * magnitude


def _tick_text(v: float, log: bool) -> str:
    if log:
        exponent = round(math.log10(v))
        return f"{v:g}" if -3 <= exponent <= 4 else f"1e{exponent}"
    if v == 0:
        return "0"
    if abs(v) >= 1e5 or abs(v) < 1e-3:
        return f"{v:.2g}"
    return f"{v:,.6g}"


def _grid_and_ticks(x_axis: _Axis, y_axis: _Axis, left: float, top: float, pw: float, ph: float) -> list[str]:
    parts = []
    for v in x_axis.ticks():
        px = x_axis.at(v)
        parts.append(f'<line x1="{px:.1f}" y1="{top}" x2="{px:.1f}" y2="{top + ph}" stroke="{GRID}"/>')
        parts.append(_text(px, top + ph + 16, _tick_text(v, x_axis.log), anchor="middle", size=11))
    for v in y_axis.ticks():
        py = y_axis.at(v)
        parts.append(f'<line x1="{left}" y1="{py:.1f}" x2="{left + pw}" y2="{py:.1f}" stroke="{GRID}"/>')
        parts.append(_text(left - 6, py + 4, _tick_text(v, y_axis.log), anchor="end", size=11))
    return parts


def _series(series: Series, color: str, x_axis: _Axis, y_axis: _Axis) -> str:
    x, y = np.asarray(series.x, dtype=float), np.asarray(series.y, dtype=float)
    usable = np.asarray([x_axis.usable(a) and y_axis.usable(b) for a, b in zip(x, y, strict=True)], dtype=bool)
    if series.kind == "points":
        sizes = list(series.sizes) if series.sizes is not None else [6.0] * x.size
        names = list(series.names) if series.names is not None else [series.label] * x.size
        dots = []
        for i in np.flatnonzero(usable):
            cx, cy = x_axis.at(x[i]), y_axis.at(y[i])
            dots.append(f'<circle cx="{cx:.1f}" cy="{cy:.1f}" r="{sizes[i] / 2:.1f}" '
                        f'fill="{color}" fill-opacity="0.75" stroke="#333333" stroke-width="0.6">'
                        f'<title>{escape(str(names[i]))}</title></circle>')
            if series.labels is not None:
                dots.append(_text(cx + sizes[i] / 2 + 3, cy - 3, series.labels[i], size=11, weight="bold"))
        return "".join(dots)
    x, y = thin(x[usable], y[usable])
    if series.kind == "step" and x.size:
        x, y = np.repeat(x, 2)[1:], np.repeat(y, 2)[:-1]
    points = " ".join(f"{x_axis.at(a):.1f},{y_axis.at(b):.1f}" for a, b in zip(x, y, strict=True))
    dash = ' stroke-dasharray="6 4"' if series.dashed else ""
    return (f'<polyline points="{points}" fill="none" stroke="{color}" stroke-width="1.6"{dash}>'
            f'<title>{escape(series.label)}</title></polyline>')


LEGEND_COLUMNS = 2


def _legend_rows(chart: Chart) -> int:
    return math.ceil(len(chart.series) / LEGEND_COLUMNS) if len(chart.series) > 1 else 0


def _legend(chart: Chart, drawn: list[Series], left: float, y: float, width: float) -> list[str]:
    if len(chart.series) <= 1:
        return []
    parts, column = [], width / LEGEND_COLUMNS
    for index, series in enumerate(drawn):
        cx, cy = left + (index % LEGEND_COLUMNS) * column, y + (index // LEGEND_COLUMNS) * 18
        color = series.color or PALETTE[index % len(PALETTE)]
        parts.append(f'<rect x="{cx:.1f}" y="{cy - 9:.1f}" width="12" height="10" fill="{color}"/>')
        parts.append(_text(cx + 16, cy, _clip(series.label, int(column / 6.5)), size=11))
    return parts


def _clip(text: str, length: int) -> str:
    return text if len(text) <= length else text[:length - 1] + "…"


def _text(x: float, y: float, text: str, anchor: str = "start", size: int = 12, weight: str = "normal",
          color: str = INK, rotate: bool = False) -> str:
    transform = f' transform="rotate(-90 {x:.1f} {y:.1f})"' if rotate else ""
    return (f'<text x="{x:.1f}" y="{y:.1f}" text-anchor="{anchor}" font-size="{size}" font-weight="{weight}" '
            f'fill="{color}"{transform}>{escape(str(text))}</text>')
