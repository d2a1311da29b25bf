"""Which plot and which line each telemetry metric belongs to, and what feeds each plot.

One routing for the System page and the Run page, so a metric looks the same wherever it is drawn. It is not a
table kept here: each telemetry source declares its metrics' plot and series label (``metric_specs``), read
through the registry's catalog, so a new source is drawn without editing this file. Estimated metrics are drawn
dashed and say "(estimated)" in their legend: never read as a measurement.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable
from typing import Any

import numpy as np

from console.telemetry import catalog
from console.telemetry.metadata import PLOTS, PlotSpec

__all__ = ["PLOTS", "THROTTLE", "PlotSpec", "feed", "group_rows", "missing_reason", "missing_reasons", "plot_sources",
           "route"]

# GPU clock-event (throttle) bitmasks: the System page shades the power plot while one says "held back".
THROTTLE = re.compile(r"(gpu\d+)\.throttle")


def route(metric: str, method: str = "measured") -> tuple[str, str, bool] | None:
    """(plot key, series label, dashed) for a metric, or None when no plot shows it."""
    return _route(catalog.current(), metric, method)


def plot_sources(plot: PlotSpec) -> tuple[str, ...]:
    """The registered sources that declare a metric drawn on ``plot``: their reasons explain an empty plot."""
    return catalog.current().plot_sources(plot.key)


def missing_reason(plot: PlotSpec, sources: list[dict[str, Any]]) -> str | None:
    """Why a plot can show nothing, in one line: None when at least one of its sources is available."""
    reasons = missing_reasons(plot, sources)
    return None if reasons is None else "; ".join(reasons)


def missing_reasons(plot: PlotSpec, sources: list[dict[str, Any]]) -> list[str] | None:
    """Why a plot can show nothing, one "source: why" per source that could feed it (the plot's tooltip shows
    one a line); None when at least one of its sources is available."""
    known = {s.get("name"): s for s in sources}
    feeding = [known[name] for name in plot_sources(plot) if name in known]
    if any(s.get("available") for s in feeding):
        return None
    return [f"{s['name']}: {s.get('reason') or 'not available'}" for s in feeding] or ["no source for it is configured"]


def group_rows(rows: Iterable[tuple]) -> dict[tuple[str, str, bool], np.ndarray]:
    """Sample rows → {(plot key, series, dashed): array of (t_ns, value)} for the metrics a plot shows."""
    grouped: dict[tuple[str, str, bool], list[tuple[int, float]]] = defaultdict(list)
    known = catalog.current()
    for t_ns, _source, metric, value, _unit, method in rows:
        target = _route(known, metric, method)
        if target is not None:
            grouped[target].append((t_ns, value))
    return {target: np.asarray(points, dtype=np.float64) for target, points in grouped.items()}


def feed(plots: dict[str, Any], rows: Iterable[tuple], t0_ns: int) -> None:
    """Append routed rows to whichever of `plots` (key → TimeSeriesPlot) show them, seconds since t0_ns."""
    for (key, series, dashed), data in group_rows(rows).items():
        plot = plots.get(key)
        if plot is None:
            continue
        if dashed and series not in plot.series_names():
            plot.set_dashed(series)
        plot.add_points(series, (data[:, 0] - t0_ns) / 1e9, data[:, 1])


def _route(known: catalog.Catalog, metric: str, method: str) -> tuple[str, str, bool] | None:
    declared = known.resolve(metric)
    if declared is None or declared.spec.plot is None:
        return None
    series = declared.label
    estimated = method == "estimated"
    if estimated and "(estimated)" not in series:
        series += " (estimated)"
    return declared.spec.plot, series, estimated
