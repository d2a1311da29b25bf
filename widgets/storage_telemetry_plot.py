"""A compact strip of what the storage did during a run: MB/s, IOPS, queue depth, await, the page cache's dirty and
writeback bytes, and NVMe temperature — one small plot each, on the run's time axis.

A view fed plain data (no console, no SQL): metric names as console.telemetry.diskstats emits them
(``storage.<device>.read_mb_s``, ``pagecache.dirty``, ``storage.<nvmeN>.temperature``, ...) with their times in
seconds since the run started. Each panel is a :class:`widgets.live_plot.TimeSeriesPlot`, so the strip costs what
the other live plots cost: bounded series, redrawn by the one shared timer only when dirty and on screen, coarser
while a run measures (DESIGN §10).

Public API: ``append(points)`` / ``set_series(points)`` with ``points = {metric: (t_s, values)}``; ``add_rows(rows,
t0_ns)`` for telemetry sample tuples ``(t_ns, source, metric, value, unit, method)``; ``set_unavailable({panel:
why})``; ``clear()``; ``refresh()``; ``has_data()``. The panels are not X-linked to a wider plot: pyqtgraph aligns
linked views by screen position, so side-by-side panels would each show a different stretch of the run; each keeps
the run's own time (seconds since its start) and ranges over its data.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from PySide6 import QtCore, QtWidgets

from widgets.live_plot import TimeSeriesPlot

PREFIXES = ("storage.", "pagecache.")  # the metrics this strip draws start with one of these
PANEL_MIN_HEIGHT = 150  # a title, a legend line and ~90 px of plot


@dataclass(frozen=True)
class Panel:
    key: str
    title: str
    y_label: str
    unit: str
    pattern: str  # full match on the metric name; its groups fill `series`
    series: str


PANELS: tuple[Panel, ...] = (
    Panel("throughput", "Storage throughput", "throughput", "MB/s", r"storage\.(.+)\.(read|write)_mb_s", "{0} {1}"),
    Panel("iops", "IOPS", "requests completed", "1/s", r"storage\.(.+)\.(read|write)_iops", "{0} {1}"),
    Panel("queue", "Queue depth", "requests in flight", "requests", r"storage\.(.+)\.queue_depth", "{0}"),
    Panel("await", "Await", "time per request", "ms", r"storage\.(.+)\.await_ms", "{0}"),
    Panel("pagecache", "Page cache", "dirty / writeback", "MB", r"pagecache\.(dirty|writeback)", "{0}"),
    Panel("temperature", "NVMe temperature", "temperature", "°C", r"storage\.(nvme\d+)\.temperature", "{0}"),
)
_CACHED = "pagecache.cached"  # GiB: shown in the page-cache panel's title, its scale would flatten dirty bytes
_COMPILED = tuple((panel, re.compile(panel.pattern)) for panel in PANELS)


def is_storage_metric(metric: str) -> bool:
    return metric.startswith(PREFIXES)


class StorageTelemetryPlot(QtWidgets.QWidget):
    """Six small time plots in two rows (throughput and IOPS wide on top); hidden panels never cost a frame."""

    # (row, column, column span) of each panel: throughput and IOPS get two columns, their legends name a read and a
    # write line per device; the others one line per device.
    PLACES = {"throughput": (0, 0, 2), "iops": (0, 2, 2), "queue": (1, 0, 1), "await": (1, 1, 1),
              "pagecache": (1, 2, 1), "temperature": (1, 3, 1)}

    # ---- Public API
    def __init__(self, parent: QtWidgets.QWidget | None = None):
        super().__init__(parent)
        self.panels: dict[str, TimeSeriesPlot] = {}
        grid = QtWidgets.QGridLayout(self)
        grid.setContentsMargins(0, 0, 0, 0)
        grid.setHorizontalSpacing(4)
        grid.setVerticalSpacing(2)
        for panel in PANELS:
            # The axis says the unit alone: the title says what it is, and a narrow panel has no room for both.
            plot = TimeSeriesPlot(panel.title, panel.unit, "", minor_series="", capacity=50_000)
            plot.setMinimumSize(160, PANEL_MIN_HEIGHT)
            plot.plot_item.getAxis("left").setWidth(52)
            self.panels[panel.key] = plot
            row, column, span = self.PLACES[panel.key]
            grid.addWidget(plot, row, column, 1, span)
        for column in range(4):
            grid.setColumnStretch(column, 1)
        self._series_of: dict[str, tuple[str, str] | None] = {}
        self._cached_gib: float | None = None
        self.setSizePolicy(QtWidgets.QSizePolicy.Policy.Expanding, QtWidgets.QSizePolicy.Policy.Preferred)
        self.setMinimumHeight(2 * PANEL_MIN_HEIGHT + 4)

    def append(self, points: Mapping[str, tuple[Sequence[float], Sequence[float]]]) -> None:
        """Add ``{metric: (t_s, values)}`` to the panels that show them; other metrics are ignored."""
        for metric, (t_s, values) in points.items():
            if metric == _CACHED:
                if len(values):
                    self._set_cached(float(values[-1]))
                continue
            target = self._target(metric)
            if target is not None:
                key, series = target
                self.panels[key].add_points(series, np.asarray(t_s, dtype=np.float64),
                                            np.asarray(values, dtype=np.float64))

    def set_series(self, points: Mapping[str, tuple[Sequence[float], Sequence[float]]]) -> None:
        """Replace everything with ``points`` (a stored run, or the Storage page's selection)."""
        self.clear()
        self.append(points)
        self.refresh()

    def add_rows(self, rows: Iterable[Sequence], t0_ns: int) -> int:
        """Telemetry sample tuples ``(t_ns, source, metric, value, unit, method)``: the storage ones are appended
        (times as seconds since ``t0_ns``). Returns how many rows were the strip's."""
        grouped: dict[str, tuple[list[float], list[float]]] = defaultdict(lambda: ([], []))
        n = 0
        for row in rows:
            metric = row[2]
            if metric.startswith(PREFIXES):
                t, v = grouped[metric]
                t.append((row[0] - t0_ns) / 1e9)
                v.append(row[3])
                n += 1
        if grouped:
            self.append(grouped)
        return n

    def set_unavailable(self, reasons: Mapping[str, str]) -> None:
        """``{panel key: why}`` — e.g. ``{"temperature": "no NVMe controller here"}``: the panel says so."""
        for key, why in reasons.items():
            if key in self.panels:
                self.panels[key].set_unavailable(why)

    def has_data(self) -> bool:
        return any(plot.series_names() for plot in self.panels.values()) or self._cached_gib is not None

    def clear(self) -> None:
        for plot in self.panels.values():
            plot.clear()
            plot.clear_bands()
            plot.set_available()
        self._cached_gib = None
        self.panels["pagecache"].set_title("Page cache")

    def refresh(self) -> None:
        for plot in self.panels.values():
            plot.refresh()

    def plots(self) -> list[TimeSeriesPlot]:
        return list(self.panels.values())

    def sizeHint(self) -> QtCore.QSize:
        return QtCore.QSize(900, 260)

    # ---- Private API
    def _target(self, metric: str) -> tuple[str, str] | None:
        try:
            return self._series_of[metric]
        except KeyError:
            pass
        found = None
        for panel, regex in _COMPILED:
            match = regex.fullmatch(metric)
            if match:
                found = (panel.key, panel.series.format(*match.groups()))
                break
        if len(self._series_of) < 10_000:
            self._series_of[metric] = found
        return found

    def _set_cached(self, gib: float) -> None:
        old = self._cached_gib
        self._cached_gib = gib
        if old is None or abs(gib - old) >= 0.01 * max(abs(old), 0.1):  # a label change per ~1%, not per sample
            self.panels["pagecache"].set_title(f"Page cache ({gib:.3g} GiB)")
