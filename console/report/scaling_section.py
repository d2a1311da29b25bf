"""The report's scaling section: for each data-parallel run in the report, how it ran (ranks, backend, batch),
E(N) against a 1-rank run of the same spec that is in the report too, the scaling waterfall as a table (ideal →
measured, one row per part), the straggler and all-reduce prediction lines, and — for a sweep with a knob axis —
which lever moved E(N).

Why a section of its own: a DDP run's step time says how fast it was, not how much of the ideal N× it kept or
where the rest went. Qt-free, plain blocks; E and the waterfall come from console.scaling and C's
console.analysis.scaling_waterfall (imported when used: a build without it says so).
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np

from console.scaling.efficiency import ddp_block, efficiency, ranks_of, scaling_of
from console.scaling.levers import e_text, levers
from console.scaling.series import same_host, same_training
from console.scaling.texts import ms_text, prediction_text, straggler_text

__all__ = ["scaling_blocks"]


# ---- Public API
def scaling_blocks(report: Any, block: Any) -> list[Any]:
    """The section's blocks (`block` is the report's Block class), empty when no run is data-parallel."""
    views = [view for view in report.runs if ranks_of(view.run) is not None and view.run.get("status") == "completed"]
    if not views:
        return []
    out = [block("heading", "Scaling (data-parallel training)")]
    points = []
    for view in views:
        base = _baseline(view, views)
        point = _point(view, base)
        points.append((view, point))
        ddp = ddp_block(view.run)
        out.append(block("paragraph", f"Run {view.letter} — {view.label}: {ranks_of(view.run)} ranks, "
                                      f"{ddp.get('backend', '?')} placed {ddp.get('placement', '?')}, "
                                      f"{scaling_of(view.run)} scaling, global batch {ddp.get('global_batch', '?')} "
                                      f"({ddp.get('per_rank_batch', '?')} per rank), bucket "
                                      f"{ddp.get('bucket_mb', '?')} MB, {ddp.get('grad_accum', '?')} micro-batch(es)."))
        if ranks_of(view.run) == 1:
            continue
        out.append(block("paragraph", _e_line(point, base)))
        rows = _waterfall_rows(point)
        if rows:
            out.append(block("table", headers=["Part", "Δ per step", "From → to", "How"], rows=rows))
        elif point.get("waterfall_missing"):
            out.append(block("note", f"Waterfall not available ({point['waterfall_missing']})."))
        out.append(block("paragraph", straggler_text(point)))
        out.append(block("paragraph", prediction_text(point)))
        method = (point.get("efficiency") or {}).get("method")
        if method:
            out.append(block("note", f"Method: {method}"))
    if getattr(report, "sweep", None) is not None:
        result = levers({"curves": _curves(points)})
        if result["axes"]:
            out.append(block("paragraph", f"Levers: {result['text']}"))
    return out


# ---- Private API
def _baseline(view: Any, views: list[Any]) -> Any | None:
    """A completed 1-rank run of the same spec and host in the report (the newest), or None."""
    if ranks_of(view.run) == 1:
        return view
    candidates = [other for other in views if ranks_of(other.run) == 1 and same_training(other.run, view.run)
                  and same_host(other.run, view.run)]
    return max(candidates, key=lambda v: str(v.run.get("started_at") or ""), default=None)


def _point(view: Any, base: Any | None) -> dict[str, Any]:
    ddp = ddp_block(view.run)
    point: dict[str, Any] = {"ranks": ranks_of(view.run), "run_id": view.run.get("run_id"),
                             "breakdown": ddp.get("breakdown"), "prediction": ddp.get("prediction"),
                             "injected": ddp.get("injected"), "e": None, "interval_95": None, "efficiency": None,
                             "knobs": {k: v for k, v in (view.run.get("sweep_point") or {}).items() if k != "ranks"}}
    if base is None:
        return point
    try:
        result = efficiency(view.run, base.run, np.asarray(view.latency_ms) * 1e6, np.asarray(base.latency_ms) * 1e6)
    except ValueError as exc:
        point["e_missing"] = str(exc)
    else:
        point.update(efficiency=result, e=result["e"], interval_95=result["interval_95"])
    bd_n, bd_1 = ddp.get("breakdown"), ddp_block(base.run).get("breakdown")
    if point["ranks"] == 1:
        return point
    try:
        from console.analysis.scaling_waterfall import waterfall
    except ImportError as exc:
        point["waterfall_missing"] = f"console.analysis.scaling_waterfall is not in this build ({exc})"
        return point
    if not (isinstance(bd_n, dict) and isinstance(bd_1, dict)):
        point["waterfall_missing"] = "a run carries no time breakdown"
        return point
    try:
        point["waterfall"] = waterfall(bd_n, bd_1, point["ranks"], scaling_of(view.run))
    except (ValueError, KeyError, TypeError, ZeroDivisionError) as exc:
        point["waterfall_missing"] = f"{type(exc).__name__}: {exc}"
    return point


def _e_line(point: dict[str, Any], base: Any | None) -> str:
    if base is None:
        return (f"E({point['ranks']}): not in this report — add the same spec's 1-rank run to it (run with "
                "--ranks 1, then report both), or report the scaling sweep.")
    if point.get("e") is None:
        return f"E({point['ranks']}): not available ({point.get('e_missing') or 'no throughput'})."
    result = point.get("efficiency") or {}
    speedup = result.get("speedup")
    notes = "".join(f" Note: {result[key]}." for key in ("note", "cores_note") if result.get(key))
    return (f"E({point['ranks']}) = {e_text(point['e'], point.get('interval_95'))} against run {base.letter} "
            f"(1 rank){f'; speed-up {speedup:.2f}×' if isinstance(speedup, (int, float)) else ''}.{notes}")


def _waterfall_rows(point: dict[str, Any]) -> list[list[str]]:
    waterfall = point.get("waterfall") or {}
    rows = []
    for bar in waterfall.get("bars") or []:
        start, end = bar.get("from_s"), bar.get("to_s")
        if not (isinstance(start, (int, float)) and isinstance(end, (int, float))):
            continue
        delta = ms_text(end - start, signed=bar.get("name") != "ideal")
        rows.append([str(bar.get("name")), delta, f"{start * 1000:.3g} → {end * 1000:.3g} ms", str(bar.get("how", ""))])
    if rows and isinstance(waterfall.get("measured_s"), (int, float)):
        closure = waterfall.get("closure_n")
        how = f"parts add up to {closure:.1%} of it" if isinstance(closure, (int, float)) else "closure not available"
        rows.append(["measured", ms_text(waterfall["measured_s"]), "", how])
    return rows


def _curves(points: list[tuple[Any, dict[str, Any]]]) -> list[dict[str, Any]]:
    """The sweep's points as levers() reads them: one curve per combination of the other axes."""
    curves: dict[str, dict[str, Any]] = {}
    for _, point in points:
        key = json.dumps(point["knobs"], sort_keys=True, default=str)
        curves.setdefault(key, {"name": key, "knobs": point["knobs"], "points": []})["points"].append(point)
    return list(curves.values())
