"""The report's charts, as SVG: latency over time and its CDF, throughput against latency, telemetry on each run's
own clock, and the roofline of an analysed run. Each says what it shows and how the figures were obtained.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from console.analysis import roofline
from console.report import svg
from console.report.content import Report, RunView


# ---- Public API
def charts(report: Report) -> list[tuple[str, str]]:
    """[(caption, svg text)] in reading order."""
    out = []
    with_latency = [view for view in report.runs if view.latency_ms.size]
    if with_latency:
        out.append(("latency-time", svg.render(_latency_over_time(with_latency))))
        out.append(("latency-cdf", svg.render(_cdf(with_latency))))
    if len(report.runs) > 1:
        curve = _throughput_latency(report)
        if curve is not None:
            out.append(("throughput-latency", svg.render(curve)))
    for chart in _telemetry(report.runs):
        out.append(("telemetry", svg.render(chart)))
    if report.analysed:
        chart = _roofline(report)
        if chart is not None:
            out.append(("roofline", svg.render(chart)))
    return out


# ---- Private API
def _name(view: RunView) -> str:
    return f"{view.letter}: {view.label}"


def _latency_over_time(views: list[RunView]) -> svg.Chart:
    series = [svg.Series(_name(view), view.t_s, view.latency_ms) for view in views]
    return svg.Chart("Latency over time", "time since run start (s)", "latency (ms)", series,
                     note="every measured iteration (thinned to each interval's fastest and slowest for drawing); "
                          "warm-up is before the first point")


def _cdf(views: list[RunView]) -> svg.Chart:
    series = []
    for view in views:
        ordered = np.sort(view.latency_ms)
        series.append(svg.Series(_name(view), ordered, np.arange(1, ordered.size + 1) / ordered.size, kind="step"))
    lows = [float(np.min(view.latency_ms)) for view in views]
    highs = [float(np.max(view.latency_ms)) for view in views]
    wide = min(lows) > 0 and max(highs) / min(lows) > 20
    return svg.Chart("Latency distribution (CDF)", "latency (ms)" + (", log scale" if wide else ""),
                     "fraction of iterations", series, x_log=wide, hlines=[(0.5, "p50"), (0.99, "p99")],
                     note="share of measured iterations at or below each latency")


def _throughput_latency(report: Report) -> svg.Chart | None:
    points = [(view, view.summary.get("throughput_per_s"), view.summary.get("latency_ms") or {})
              for view in report.runs if view.run.get("status") == "completed"]
    points = [(view, thr, lat) for view, thr, lat in points if thr and lat.get("p50")]
    if len(points) < 2:
        return None
    points.sort(key=lambda item: item[1])
    series = [svg.Series("p50", [p[1] for p in points], [p[2]["p50"] for p in points],
                         kind="line" if report.kind == "sweep" else "points", names=[_name(p[0]) for p in points],
                         sizes=[9.0] * len(points), labels=[p[0].letter for p in points])]
    p99 = [p for p in points if p[2].get("p99")]
    if p99:
        series.append(svg.Series("p99", [p[1] for p in p99], [p[2]["p99"] for p in p99], dashed=True,
                                 kind="line" if report.kind == "sweep" else "points",
                                 names=[_name(p[0]) for p in p99], sizes=[7.0] * len(p99)))
    return svg.Chart("Throughput against latency", "throughput (samples/s)", "latency (ms)", series,
                     note="one point per run: its sustained throughput and median (p99 where enough samples back it)")


def _telemetry(views: list[RunView]) -> list[svg.Chart]:
    metrics: dict[str, list[tuple[RunView, dict[str, Any]]]] = {}
    for view in views:
        for name, data in view.telemetry.items():
            metrics.setdefault(name, []).append((view, data))
    out = []
    for name, members in metrics.items():
        unit, methods = members[0][1]["unit"], {data["method"] for _, data in members}
        series = [svg.Series(_name(view), data["t_s"], data["values"], dashed=data["method"] == "estimated")
                  for view, data in members]
        how = ("ESTIMATED (a model, dashed), not measured" if methods == {"estimated"} else
               ", ".join(sorted(methods)))
        out.append(svg.Chart(f"Telemetry: {name}", "time since run start (s)", f"{name} ({unit})", series,
                             note=f"sampled by {members[0][1]['source']}; {how}"))
    return out


def _roofline(report: Report) -> svg.Chart | None:
    view = next(view for view in report.runs if view.ops)
    if not report.card:
        return None
    try:
        data = roofline.chart_data(view.ops, report.card, view.summary.get("precision") or "fp32")
    except roofline.RooflineError:
        return None
    dots = data["dots"]
    if not dots or not data.get("bandwidth_bytes_s"):
        return None
    intensities = [dot["intensity"] for dot in dots]
    lo, hi = min(intensities) / 4, max(intensities) * 4
    grid = np.logspace(np.log10(lo), np.log10(hi), 64)
    series = []
    for roof in data["roofs"]:
        series.append(svg.Series(f"{roof['name']} roof", grid, np.minimum(roof["peak_flops"],
                                 data["bandwidth_bytes_s"] * grid), color="#555555", dashed=not roof["selected"]))
    total = sum(dot["share"] for dot in dots) or 1.0
    series.append(svg.Series("ops (size: share of time)", intensities, [dot["achieved_flops_s"] for dot in dots],
                             kind="points", color="#1f77b4",
                             sizes=[6 + 30 * (dot["share"] / total) ** 0.5 for dot in dots],
                             names=[f"{dot['op']}: {dot['share']:.0%} of op time, {dot['bound'] or '?'}-bound"
                                    for dot in dots]))
    run = data.get("run")
    if run and run.get("intensity") and run.get("achieved_flops_s"):
        series.append(svg.Series("whole run", [run["intensity"]], [run["achieved_flops_s"]], kind="points",
                                 color="#f2b400", sizes=[14.0], names=["whole run"]))
    return svg.Chart("Roofline", "arithmetic intensity (FLOP/byte)", "performance (FLOP/s)", series, x_log=True,
                     y_log=True, note=f"roofs measured by this host's machine card ({data['precision']} solid); "
                                      "op FLOPs and bytes from the engine's profile")
