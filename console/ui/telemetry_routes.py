"""Which plot and which line each telemetry metric belongs to, and what feeds each plot.

One table for the System page and the Run page, so a metric looks the same wherever it is drawn.
Estimated metrics are drawn dashed and say "(estimated)" in their legend: never read as a measurement.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np


@dataclass(frozen=True)
class PlotSpec:
    key: str
    title: str
    y_label: str
    unit: str
    sources: tuple[str, ...]  # the sources that can feed it: their reasons explain an empty plot
    y_range: tuple[float, float] | None = None


PLOTS = (
    PlotSpec("util", "Utilization", "utilization", "%", ("psutil", "nvml", "amdsmi"), (0, 100)),
    PlotSpec("power", "Power", "power", "W", ("nvml", "rapl", "amdsmi", "estimated")),
    PlotSpec("memory", "Memory", "memory", "GiB", ("psutil", "nvml", "amdsmi")),
    PlotSpec("temperature", "Temperature", "temperature", "°C", ("nvml", "amdsmi")),
    PlotSpec("clocks", "Clocks", "clock", "MHz", ("psutil", "nvml", "amdsmi")),
    PlotSpec("io", "Disk, network and PCIe", "throughput", "MB/s", ("psutil", "nvml")),
)

# (pattern, plot key, series label template); the first match wins. Groups fill the template.
_ROUTES = (
    (r"cpu\.util", "util", "CPU total"),
    (r"cpu(\d+)\.util", "util", "cpu{0}"),
    (r"(gpu\d+)\.util", "util", "{0}"),
    (r"(amdgpu\d+)\.util", "util", "{0}"),
    (r"rapl\.power", "power", "CPU package + DRAM (RAPL)"),
    (r"(gpu\d+)\.power\.instant", "power", "{0} instant"),
    (r"(gpu\d+)\.power\.avg", "power", "{0} 1-s average"),
    (r"(amdgpu\d+)\.power\.(\w+)", "power", "{0} {1}"),
    (r"cpu\.power\.estimated", "power", "CPU (estimated)"),
    (r"mem\.power\.estimated", "power", "memory (estimated)"),
    (r"mem\.used", "memory", "system used"),
    (r"swap\.used", "memory", "swap used"),
    (r"worker\.rss", "memory", "worker RSS"),
    (r"(gpu\d+)\.mem\.used", "memory", "{0} used"),
    (r"(amdgpu\d+)\.mem\.used", "memory", "{0} used"),
    (r"(gpu\d+)\.temp", "temperature", "{0}"),
    (r"(amdgpu\d+)\.temp", "temperature", "{0}"),
    (r"cpu\.freq", "clocks", "CPU"),
    (r"(gpu\d+)\.clock\.(sm|mem)", "clocks", "{0} {1}"),
    (r"(amdgpu\d+)\.clock\.(\w+)", "clocks", "{0} {1}"),
    (r"disk\.(read|write)", "io", "disk {0}"),
    (r"net\.(sent|recv)", "io", "network {0}"),
    (r"(gpu\d+)\.pcie\.(tx|rx)", "io", "{0} PCIe {1}"),
)
_COMPILED = tuple((re.compile(pattern), key, label) for pattern, key, label in _ROUTES)
THROTTLE = re.compile(r"(gpu\d+)\.throttle")


def route(metric: str, method: str = "measured") -> tuple[str, str, bool] | None:
    """(plot key, series label, dashed) for a metric, or None when no plot shows it."""
    for pattern, key, label in _COMPILED:
        match = pattern.fullmatch(metric)
        if match:
            series = label.format(*match.groups())
            estimated = method == "estimated"
            if estimated and "(estimated)" not in series:
                series += " (estimated)"
            return key, series, estimated
    return None


def missing_reason(plot: PlotSpec, sources: list[dict[str, Any]]) -> str | None:
    """Why a plot can show nothing: None when at least one of its sources is available."""
    known = {s.get("name"): s for s in sources}
    feeding = [known[name] for name in plot.sources if name in known]
    if any(s.get("available") for s in feeding):
        return None
    reasons = [f"{s['name']}: {s.get('reason') or 'not available'}" for s in feeding]
    return "; ".join(reasons) or "no source for it is configured"


def group_rows(rows: Iterable[tuple]) -> dict[tuple[str, str, bool], np.ndarray]:
    """Sample rows → {(plot key, series, dashed): array of (t_ns, value)} for the metrics a plot shows."""
    grouped: dict[tuple[str, str, bool], list[tuple[int, float]]] = defaultdict(list)
    for t_ns, _source, metric, value, _unit, method in rows:
        target = route(metric, method)
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
