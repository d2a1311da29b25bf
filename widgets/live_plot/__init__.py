"""Live time plots: per-iteration latency, and telemetry series (CPU, memory, ...).

Events arrive every ~100 ms and an hour-long run yields millions of points, so these views never redraw per
message: ``add_*`` only appends to bounded series and marks the plot dirty, and one timer shared by every plot
(refresh_hub) redraws the dirty, visible ones ten times a second. Each series keeps an incremental min/max pyramid
(widgets.peak_decimation), so a redraw (peak_feed) hands pyqtgraph at most about two points per pixel of the visible
span, with every spike kept, whether the plot holds a second or an hour: a frame costs the same at any size. A zoom,
pan or resize redraws from the pyramid too. What else a frame paints is kept cheap as well: the auto-ranged time axis
moves in steps (time_anchor), so axes and grid are recomputed only when it moves, and the grid is opaque, behind the
data (grid_behind). Time is seconds since the run started, so latency and telemetry line up on one axis.

While a run measures, painting competes with the measured worker for CPU, so the window can turn it down
(`set_quiet`, driven by console.ui.paint_budget): the same timer then ticks at the latency trace's low rate, telemetry
plots redraw every few ticks, every curve is decimated coarser, a view change waits for the plot's next frame instead
of redrawing at once, and plots not on screen stay dirty. Turning it off redraws every visible plot in full at once
(the catch-up).

One item per module, as in pyqtgraph's own ``graphicsItems/``: paint_rates (rates and the shared paint state),
refresh_hub (the timer), fed_curve and peak_feed (a decimated curve), time_anchor, grid_behind, band, legend_bar (the
items around the data), time_plot (the frame every plot shares), latency_plot and time_series_plot (the two kinds).
This package re-exports what the rest of the console uses. The paint state and its timer (paint_rates, refresh_hub)
need only Qt and load with the package; the plots, and with them pyqtgraph (~0.5 s to import), load when a plot name
is first used, so the window's start-up and its Run form never wait for pyqtgraph.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from widgets.live_plot.paint_rates import REFRESH_INTERVAL_MS, PaintRates, quiet_rates
from widgets.live_plot.refresh_hub import paint_clock, set_quiet

if TYPE_CHECKING:
    import pyqtgraph as pg  # noqa: F401 — callers reach pyqtgraph's item types as live_plot.pg

    from widgets.live_plot.fed_curve import FedCurve
    from widgets.live_plot.latency_plot import P99_MIN_SAMPLES, LatencyPlot
    from widgets.live_plot.time_plot import UNAVAILABLE_LABEL_MAX
    from widgets.live_plot.time_series_plot import MINOR_BLOCK_PX, TimeSeriesPlot

# name → (module, attribute): what loads pyqtgraph, imported at its first use
_WITH_PYQTGRAPH = {
    "FedCurve": ("widgets.live_plot.fed_curve", "FedCurve"),
    "LatencyPlot": ("widgets.live_plot.latency_plot", "LatencyPlot"),
    "P99_MIN_SAMPLES": ("widgets.live_plot.latency_plot", "P99_MIN_SAMPLES"),
    "UNAVAILABLE_LABEL_MAX": ("widgets.live_plot.time_plot", "UNAVAILABLE_LABEL_MAX"),
    "MINOR_BLOCK_PX": ("widgets.live_plot.time_series_plot", "MINOR_BLOCK_PX"),
    "TimeSeriesPlot": ("widgets.live_plot.time_series_plot", "TimeSeriesPlot"),
    "pg": ("pyqtgraph", None),
}


def __getattr__(name: str) -> Any:
    """A plot name's first use imports its module (and pyqtgraph); later uses find it in the package."""
    if name not in _WITH_PYQTGRAPH:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import numpy.ma  # noqa: F401 — else imported at the first np.unique, 50–100 ms inside a first run's measuring phase

    module, attribute = _WITH_PYQTGRAPH[name]
    value = importlib.import_module(module)
    if attribute is not None:
        value = getattr(value, attribute)
    globals()[name] = value
    return value


__all__ = [
    "MINOR_BLOCK_PX",
    "P99_MIN_SAMPLES",
    "REFRESH_INTERVAL_MS",
    "UNAVAILABLE_LABEL_MAX",
    "FedCurve",
    "LatencyPlot",
    "PaintRates",
    "TimeSeriesPlot",
    "paint_clock",
    "quiet_rates",
    "set_quiet",
]
