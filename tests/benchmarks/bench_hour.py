"""An hour of live data on screen, shared by the frame benchmarks (test_plot_hour, test_window_vs_headless): the
Run page's latency and utilization plots holding 1M iterations and 17 series at 10 Hz, two plain pyqtgraph
PlotWidgets beside them as the baseline, and one live frame's cost."""

import time
from dataclasses import dataclass

import numpy as np
import pyqtgraph as pg
from PySide6 import QtWidgets

from widgets.live_plot import LatencyPlot, TimeSeriesPlot

HOUR_AT_10HZ = 36_000
LATENCY_POINTS = 1_000_000
SERIES = ["CPU total"] + [f"cpu{i}" for i in range(16)]
PER_TICK = round(LATENCY_POINTS / 3600.0 / 10)  # iterations one 100-ms refresh adds at an hour-long run's rate


@dataclass
class HourOnScreen:
    t: np.ndarray
    t_lat: np.ndarray
    lat: np.ndarray
    values: dict[str, np.ndarray]
    latency: LatencyPlot
    utilization: TimeSeriesPlot
    bare_latency: pg.PlotWidget
    bare_utilization: pg.PlotWidget

    def add_tick(self, now: float) -> None:
        """One refresh's worth of new data (100 ms) at time `now`, then the console's redraw."""
        self.latency.add_latencies(now - 0.1 + np.arange(PER_TICK) * 0.1 / PER_TICK, self.lat[:PER_TICK])
        for name in SERIES:
            self.utilization.add_points(name, [now], self.values[name][-1:])
        self.latency.refresh()
        self.utilization.refresh()


def hour_on_screen(qtbot) -> HourOnScreen:
    """The console's plots holding the hour (shown, 1400×450), and two empty bare PlotWidgets of the same size."""
    rng = np.random.default_rng(0)
    t = np.arange(HOUR_AT_10HZ) / 10.0
    t_lat = np.sort(rng.random(LATENCY_POINTS)) * 3600.0
    lat = 1 + rng.gamma(2.0, 0.3, LATENCY_POINTS)
    values = {name: 50 + 40 * np.sin(t / 60 + i) + 5 * rng.random(t.size) for i, name in enumerate(SERIES)}
    latency, utilization = LatencyPlot(), TimeSeriesPlot("Utilization", "utilization", "%", y_range=(0, 100))
    bare_latency, bare_utilization = pg.PlotWidget(), pg.PlotWidget()
    for widget in (latency, utilization, bare_latency, bare_utilization):
        qtbot.addWidget(widget)
        widget.resize(1400, 450)
        widget.show()
    latency.set_data(t_lat, lat)
    for name in SERIES:
        utilization.set_data(name, t, values[name])
    return HourOnScreen(t, t_lat, lat, values, latency, utilization, bare_latency, bare_utilization)


def frame_ms(widgets, update) -> float:
    """Wall milliseconds of `update()`, then a synchronous repaint of `widgets` and the event queue."""
    app = QtWidgets.QApplication.instance()
    started = time.perf_counter()
    update()
    for widget in widgets:
        widget.repaint()
    app.processEvents()
    return (time.perf_counter() - started) * 1e3
