"""A sweep record for people and programs: the knee in one line, the charts' series, the CLI's JSON document,
and the record rebuilt from the history (so a past sweep reads exactly like one that just ran)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from console.sweep.grid import SweepGrid
from console.sweep.knee import (
    KNEE_AXES,
    KNEE_RULE,
    analyse,
    axis_sort_key,
    completed_points,
    series_of,
    varying_axes,
)
from console.sweep.labels import format_rate, point_label
from console.sweep.running import point_result

AXIS_UNITS = {"batch": "batch size (samples)", "qps": "request rate (queries/s)", "threads": "threads"}
AXIS_NOUNS = {"batch": "batch", "qps": "request rate", "threads": "thread count"}


def knee_text(knee: Mapping[str, Any] | None, knee_axis: str | None = None) -> str:
    """One line for people: where the knee is and what going beyond it buys and costs."""
    if not knee:
        if knee_axis is None:
            return "no knee: sweep batch, request rate or threads with at least two values to find one"
        return "no knee: no series has two completed points"
    text = f"knee at {knee['label']}: {format_rate(knee['throughput_per_s'])} samples/s " \
           f"({knee['fraction_of_max']:.0%} of the series' best)"
    if knee.get("at_end"):
        text += (f"; throughput was still rising at the largest {AXIS_NOUNS.get(knee['axis'], knee['axis'])} "
                 "measured in its series, so the real knee may lie beyond it")
    elif knee.get("beyond"):
        gain = knee["gain_beyond_pct"]
        growth = knee["p99_growth_beyond_pct"]
        text += f"; going on to {knee['beyond']} changes throughput by {gain:+.0f}%"
        text += f" and p99 by {growth:+.0f}%" if growth is not None else " (p99 not backed by enough samples)"
    return text


def chart_data(record: Mapping[str, Any]) -> dict[str, Any]:
    """What widgets.sweep_chart draws, as plain data: one series per combination of the other swept axes."""
    varying = record.get("varying") or varying_axes([p["point"] for p in record["points"]])
    knee_axis = record.get("knee_axis") or next((a for a in KNEE_AXES if a in varying), None) or "batch"
    series = []
    for name, members in series_of(completed_points(record["points"]), knee_axis, varying).items():
        members = sorted(members, key=lambda p: axis_sort_key(p["point"].get(knee_axis)))
        series.append({"name": name or "all points", "points": [
            {"x": p["point"].get(knee_axis, record.get("base", {}).get(knee_axis)),
             "throughput": p["throughput_per_s"], "p50": p["latency_ms"].get("p50"),
             "p99": p["latency_ms"].get("p99"), "label": p["label"], "index": p["index"]} for p in members]})
    knee = record.get("knee")
    return {
        "x_label": AXIS_UNITS.get(knee_axis, knee_axis), "x_axis": knee_axis, "series": series,
        "knee": None if not knee else {"series": knee["series"] or "all points", "x": knee["value"],
                                       "throughput": knee["throughput_per_s"], "p50": knee["latency_ms"].get("p50"),
                                       "p99": knee["latency_ms"].get("p99"),
                                       "label": f"knee ≥ {knee['label']} (still rising)" if knee.get("at_end")
                                       else f"knee: {knee['label']}"},
    }


def record_from_history(sweep: Mapping[str, Any], runs: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Rebuild a sweep record (as `SweepRun.run` returns it) from `store.get_sweep` and `store.runs_of_sweep`."""
    grid = SweepGrid.from_dict(sweep.get("grid") or {})
    varying = grid.varying()
    stored = sweep.get("summary") or {}
    points = []
    for index, run in enumerate(runs):
        point = run.get("sweep_point") or {}
        planned = {"index": index, "point": point, "label": point_label(point, varying), "spec": run.get("spec")}
        points.append(point_result(planned, record={"run_id": run["run_id"], "status": run["status"],
                                                    "message": run.get("error") or "",
                                                    "summary": run.get("summary"),
                                                    "hostname": run.get("hostname")}))
    analysis = analyse(points, varying)
    return {"sweep_id": sweep["sweep_id"], "name": sweep.get("name") or "", "status": sweep["status"],
            "created_at": sweep.get("created_at"), "grid": grid.to_dict(), "base": sweep.get("base") or {},
            "varying": varying, "points": points,
            "skipped": [{**p, "status": "skipped"} for p in stored.get("impossible", [])],
            **analysis, "knee_rule": KNEE_RULE}


def report(record: Mapping[str, Any]) -> dict[str, Any]:
    """The CLI's JSON document."""
    return {"sweep_id": record["sweep_id"], "name": record.get("name", ""), "status": record["status"],
            "grid": record["grid"],
            "points": [{"point": p["point"], "label": p["label"], "run_id": p.get("run_id"), "status": p["status"],
                        "message": p.get("message") or "", "latency_ms": p["latency_ms"],
                        "throughput_per_s": p["throughput_per_s"], "valid": p["valid"],
                        "hostname": p.get("hostname"), "until_stable": p.get("until_stable")}
                       for p in record["points"]],
            "skipped": [{"point": p["point"], "label": p["label"], "reason": p["reason"]}
                        for p in record.get("skipped", [])],
            "knee": record.get("knee"), "knees": record.get("knees", []), "knee_axis": record.get("knee_axis"),
            "knee_rule": record.get("knee_rule", KNEE_RULE)}
