"""The plots of one run — latency, CPU, memory — fed live from session events or from the history.

One class serves both the live Run page and a run re-opened from the History page, so a stored run
looks exactly as it did while it ran.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from PySide6 import QtWidgets

from console.ui.telemetry_routes import PLOTS, feed, missing_reasons
from engines import phases
from widgets.live_plot import LatencyPlot, TimeSeriesPlot
from widgets.storage_telemetry_plot import StorageTelemetryPlot


class RunPlots(QtWidgets.QWidget):
    """Latency on top, CPU utilization and memory below, all on one time axis (seconds since run start)."""

    # ---- Public API
    def __init__(self, parent: QtWidgets.QWidget | None = None):
        super().__init__(parent)
        self.latency = LatencyPlot()
        self.latency.setMinimumHeight(180)  # the run's main plot keeps more than the others' 140 when space is short
        self.cpu = TimeSeriesPlot("Utilization", "utilization", "%", y_range=(0, 100))
        self.memory = TimeSeriesPlot("Memory", "memory", "GiB")
        self.power = TimeSeriesPlot("Power", "power", "W")
        self._telemetry = {"util": self.cpu, "memory": self.memory, "power": self.power}
        # The storage strip (MB/s, IOPS, queue depth, await, page cache, NVMe temperature) shows once storage
        # telemetry arrives; its panels are live plots like the others (one shared timer, bounded series).
        self.storage = StorageTelemetryPlot()
        self.storage.hide()
        layout = QtWidgets.QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        splitter = QtWidgets.QSplitter()
        splitter.setOrientation(splitter.orientation().Vertical)
        for plot in self._plots():
            splitter.addWidget(plot)
        splitter.addWidget(self.storage)
        splitter.setSizes([400, 200, 200, 200, 260])
        self._splitter = splitter
        layout.addWidget(splitter)
        for plot in self._plots():  # one time axis: same width, same range
            plot.plot_item.getAxis("left").setWidth(64)
        for plot in self._telemetry.values():
            plot.plot_item.setXLink(self.latency.plot_item)
        self._t0_ns = 0

    def _plots(self) -> list:
        return [self.latency, *self._telemetry.values()]

    def clear(self) -> None:
        for plot in self._plots():
            plot.clear()
            plot.clear_bands()
        self.storage.clear()
        self.storage.hide()

    def handle(self, event: dict[str, Any]) -> None:
        """Route one session event to the plots (called on the GUI thread)."""
        kind = event.get("type")
        if kind == "started":
            self.clear()
            self._t0_ns = event["t0_ns"]
        elif kind == "latencies":
            self.add_latencies(np.asarray(event["t_ns"], dtype=np.int64), np.asarray(event["latency_ns"]))
        elif kind == "samples":
            self.add_samples(event["rows"])
        elif kind == "sources":
            self._show_missing(event["sources"])
        elif kind == "phase":
            self._phase_boundary(event["phase"], event["t_ns"])
        elif kind == "finished":
            summary = event.get("summary") or {}
            self._phase_boundary(None, summary.get("t_end_ns") or 0)

    def show_stored(self, run: dict[str, Any], t_ns: np.ndarray, latency_ns: np.ndarray,
                    samples: list[dict[str, Any]]) -> None:
        """Show a run from the history database."""
        self.clear()
        summary = run.get("summary") or {}
        self._t0_ns = int(summary.get("t0_ns") or (t_ns[0] if len(t_ns) else 0))
        t_lat = (np.asarray(t_ns, dtype=np.int64) - self._t0_ns) / 1e9
        self.latency.set_data(t_lat, np.asarray(latency_ns, dtype=np.float64) / 1e6)
        self.add_samples([(s["t_ns"], s["source"], s["metric"], s["value"], s["unit"], s["method"]) for s in samples])
        self._show_missing((run.get("environment") or {}).get("telemetry") or [])
        for phase, t in summary.get("phases") or []:
            self._phase_boundary(phase, t)
        self._phase_boundary(None, summary.get("t_end_ns") or 0)
        self.latency.set_title(f"Latency — run {run['run_id'][:8]} ({run['status']})")
        self.refresh()

    def add_latencies(self, t_ns: np.ndarray, latency_ns: np.ndarray) -> None:
        self.latency.add_latencies((t_ns - self._t0_ns) / 1e9, latency_ns / 1e6)

    def add_samples(self, rows: list[tuple]) -> None:
        feed(self._telemetry, rows, self._t0_ns)
        if self.storage.add_rows(rows, self._t0_ns) and self.storage.isHidden():
            self.storage.show()

    def refresh(self) -> None:
        for plot in self._plots():
            plot.refresh()
        if self.storage.isVisible():
            self.storage.refresh()

    # ---- Private API
    def _show_missing(self, sources: list[dict[str, Any]]) -> None:
        for spec in PLOTS:
            reasons = missing_reasons(spec, sources) if spec.key in self._telemetry else None
            if reasons:  # a short label in the plot, one reason a line on hover
                self._telemetry[spec.key].set_unavailable("\n".join(reasons))
        storage = next((s for s in sources if s.get("name") == "storage"), None)
        if storage is not None:  # NVMe temperature: "not available (why)" when no controller or sensor
            missing = storage.get("unavailable_metrics") or {}
            shown = [m for m in storage.get("metrics") or [] if str(m.get("name", "")).endswith(".temperature")]
            why = next((w for m, w in missing.items() if m.endswith(".temperature")), None)
            if why and not shown:
                self.storage.set_unavailable({"temperature": why})

    def _phase_boundary(self, name: str | None, t_ns: int) -> None:
        """Open a shaded band for the phase that starts (it follows live data), closing the previous one; a phase
        without a band of its own (finishing, the run's end) only closes it."""
        if not t_ns:
            return
        t_s = (t_ns - self._t0_ns) / 1e9
        phase = phases.get(name)
        strip = self.storage.plots()
        for plot in [*self._plots(), *strip]:
            if name and phase.shaded:  # the storage strip's small panels: the colour alone, no label to crowd them
                plot.add_band(t_s, None, "" if plot in strip else phase.label, phase.color)
            else:
                plot.end_band(t_s)
