"""The knee of a sweep: where raising batch (or request rate, or threads) stops buying throughput.

The rule (`KNEE_RULE`): points are grouped into series by every swept axis but one, the *knee axis* (batch if it
was swept with ≥ 2 values, else request rate, else threads). Along each series, the knee is the smallest value of
the knee axis whose throughput reaches `KNEE_FRACTION` (90%) of the series' highest throughput: past it, raising
the axis buys at most the last 10% of throughput, usually at a steep price in p99 latency, which the record
states (`gain_beyond_pct`, `p99_growth_beyond_pct`: from the knee to the series' last point). This "fraction of
the maximum" rule is used rather than "the first step gaining < 10%" because one noisy step cannot fool it.
The sweep's `knee` is the knee of the series with the highest throughput; `knees` has every series'.
A series with one completed point has no curve and no knee.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from console.sweep.axes import AXES
from console.sweep.labels import point_label

KNEE_AXES = ("batch", "qps", "threads")
KNEE_FRACTION = 0.9
KNEE_RULE = (f"knee = along each series, the smallest value whose throughput reaches {KNEE_FRACTION:.0%} of the "
             "series' highest; the sweep's knee is that of the series with the highest throughput")


def analyse(points: Sequence[Mapping[str, Any]], varying: Sequence[str] | None = None) -> dict[str, Any]:
    """The knee axis, every series' knee and the sweep's knee (see the module docstring for the rule)."""
    completed = completed_points(points)
    if varying is None:
        varying = varying_axes([p["point"] for p in points])
    knee_axis = next((axis for axis in KNEE_AXES if axis in varying), None)
    if knee_axis is None:
        return {"knee_axis": None, "knees": [], "knee": None}
    knees = []
    for series, members in series_of(completed, knee_axis, varying).items():
        if len(members) < 2:
            continue
        members = sorted(members, key=lambda p: axis_sort_key(p["point"][knee_axis]))
        best = max(p["throughput_per_s"] for p in members)
        knee = next(p for p in members if p["throughput_per_s"] >= KNEE_FRACTION * best)
        last = members[-1]
        p99_knee, p99_last = knee["latency_ms"].get("p99"), last["latency_ms"].get("p99")
        knees.append({
            "series": series, "axis": knee_axis, "value": knee["point"][knee_axis], "index": knee["index"],
            "point": knee["point"], "label": knee["label"], "run_id": knee.get("run_id"),
            "throughput_per_s": knee["throughput_per_s"], "latency_ms": dict(knee["latency_ms"]),
            "fraction_of_max": knee["throughput_per_s"] / best, "max_throughput_per_s": best,
            "beyond": last["label"] if last is not knee else None,
            "gain_beyond_pct": (last["throughput_per_s"] / knee["throughput_per_s"] - 1) * 100
            if last is not knee else None,
            "p99_growth_beyond_pct": (p99_last / p99_knee - 1) * 100
            if last is not knee and p99_knee and p99_last else None,
            # the last value swept is the first to reach 90%: throughput was still rising, the knee may lie beyond
            "at_end": last is knee,
        })
    overall = max(knees, key=lambda k: k["max_throughput_per_s"]) if knees else None
    return {"knee_axis": knee_axis, "knees": knees, "knee": overall}


def completed_points(points: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The points with a throughput to put on a curve (failed, skipped and empty points have none)."""
    return [p for p in points if p.get("status") == "completed" and p.get("throughput_per_s")]


def varying_axes(points: Sequence[Mapping[str, Any]]) -> list[str]:
    """The axes whose value differs between points (for records that do not say which axes were swept)."""
    return [axis for axis in AXES if len({_freeze(p.get(axis)) for p in points if axis in p}) > 1]


def series_of(points: Sequence[Mapping[str, Any]], knee_axis: str,
              varying: Sequence[str]) -> dict[str, list[Mapping[str, Any]]]:
    """Points grouped by every varying axis except the knee axis; the key is the group's label ("" = one)."""
    others = [axis for axis in varying if axis != knee_axis]
    groups: dict[str, list[Mapping[str, Any]]] = {}
    for p in points:
        key = point_label({a: p["point"].get(a) for a in others if a in p["point"]}, others)
        groups.setdefault(key, []).append(p)
    return groups


def axis_sort_key(value: Any) -> tuple[int, float]:
    """Order along the knee axis; the engine's default thread count (None) comes first."""
    return (0, 0.0) if value is None else (1, float(value))


def _freeze(value: Any) -> Any:
    return value if not isinstance(value, list) else tuple(value)
