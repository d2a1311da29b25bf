"""A scaling series: the same training spec measured at several rank counts, each point with E(N), its interval,
the run's time breakdown and the waterfall from the ideal N× to the measured step.

Two ways in:
- a sweep (`labconsole sweep --mode training --ranks 1,2,4 [--bucket-mb 25,100 …]`): its completed points grouped
  by everything but `ranks`, one curve per combination of the other axes (per knob value), each curve's 1-rank point
  its baseline;
- a run: it, its partner (the newest completed 1-rank run of the same spec on the same host) and the newest
  completed run of the same spec at every other rank count.

The waterfall is C's (console.analysis.scaling_waterfall), imported when first needed: a build without it gives
each point "not available (why)" rather than failing the series.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Mapping
from typing import Any

from console.scaling.efficiency import (
    ddp_block,
    efficiency,
    ranks_of,
    samples_per_s,
    scaling_of,
)
from console.scaling.levers import KNOB_AXES, levers

# Torch options that say how or where ranks run, not what is trained (contract §7): a partner may differ in them.
IGNORED_TORCH = ("ranks", "ranks_cluster", "inject_straggler_ms", "scaling")
IGNORED_SPEC = ("name",)
CANDIDATES = 2000  # runs of the same model and host read when looking for partners and other rank counts
RUN_AXIS = "ranks"

Waterfall = Callable[[dict[str, Any], dict[str, Any], int, str], dict[str, Any]]


# ---- Public API
def is_distributed(run: Mapping[str, Any]) -> bool:
    """The run trained data-parallel (--ranks given), whatever the count."""
    return ranks_of(run) is not None


def same_training(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    """Both specs train the same thing, ignoring the rank count, its placement, an injected straggler, the scaling
    label and the name."""
    return _comparable_spec(a) == _comparable_spec(b)


def same_host(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    if a.get("host_id") and b.get("host_id"):
        return a["host_id"] == b["host_id"]
    return bool(a.get("hostname")) and a.get("hostname") == b.get("hostname")


def partner(store: Any, run: Mapping[str, Any]) -> dict[str, Any] | None:
    """The newest completed 1-rank run of the same spec on the same host (a 1-rank run is its own partner); None
    when the history has none."""
    if ranks_of(run) == 1:
        return dict(run)
    for other in _candidates(store, run):
        if other.get("run_id") != run.get("run_id") and ranks_of(other) == 1 and same_training(other, run):
            return other
    return None


def series(store: Any, sweep_id: str | None = None, run_id: str | None = None,
           waterfall: Waterfall | None = None) -> dict[str, Any]:
    """The scaling series of a sweep or of a run (exactly one of them), see the module docstring.

    {"source", "title", "scaling", "baseline_run_id", "points": [...], "curves": [{"name", "knobs",
    "baseline_run_id", "points"}], "levers", "notes"}; each point {"ranks", "run_id", "curve", "knobs", "host",
    "step_s", "samples_per_s", "e", "interval_95", "efficiency" (the full result or None), "e_missing" (why, when
    no E), "breakdown", "waterfall", "prediction", "injected"}. `waterfall`: C's function (tests pass a fake)."""
    if (sweep_id is None) == (run_id is None):
        raise ValueError("give a sweep id or a run id (one of them) to read a scaling series")
    waterfall = waterfall or _waterfall_function()
    if sweep_id is not None:
        source, title, groups = _sweep_groups(store, sweep_id)
    else:
        source, title, groups = _run_groups(store, run_id)
    curves = [_curve(store, name, knobs, runs, waterfall) for name, knobs, runs in groups]
    points = [point for curve in curves for point in curve["points"]]
    notes = sorted({point["e_missing"] for point in points if point.get("e_missing")} |
                   {(point.get("efficiency") or {}).get(key) for point in points for key in ("note", "cores_note")}
                   - {None})
    result = {"source": source, "title": title,
              "scaling": next((p["scaling"] for p in points if p.get("scaling")), "strong"),
              "baseline_run_id": curves[0]["baseline_run_id"] if curves else None,
              "points": points, "curves": curves, "notes": notes}
    result["levers"] = levers(result)
    return result


# ---- Private API
def _sweep_groups(store: Any, sweep_id: str) -> tuple[str, str, list[tuple[str, dict[str, Any], list[dict]]]]:
    sweep = store.get_sweep(sweep_id)
    if sweep is None:
        raise ValueError(f"there is no sweep {sweep_id!r} in the history (`labconsole history --sweeps` lists them)")
    runs = [run for run in store.runs_of_sweep(sweep["sweep_id"]) if run.get("status") == "completed"]
    ddp_runs = [run for run in runs if is_distributed(run)]
    if not ddp_runs:
        raise ValueError(f"sweep {sweep['sweep_id'][:8]} has no completed data-parallel run: a scaling sweep is "
                         "`labconsole sweep --mode training --ranks 1,2,4 …`")
    groups: dict[str, tuple[dict[str, Any], list[dict[str, Any]]]] = {}
    for run in ddp_runs:
        # the sweep's own axes only: a 1-rank run's DDP block may leave out what it does not use (buckets)
        knobs = {k: v for k, v in sorted((run.get("sweep_point") or {}).items()) if k != RUN_AXIS}
        key = json.dumps(knobs, sort_keys=True, default=str)
        groups.setdefault(key, (knobs, []))[1].append(run)  # in the order they ran: a later one wins its N
    varying = _varying([knobs for knobs, _ in groups.values()])
    named = [(_curve_name(knobs, varying), knobs, members) for knobs, members in groups.values()]
    model = (ddp_runs[0].get("spec") or {}).get("model", "?")
    title = f"sweep {sweep['sweep_id'][:8]}{' · ' + sweep['name'] if sweep.get('name') else ''} · {model}"
    return f"sweep {sweep['sweep_id']}", title, named


def _run_groups(store: Any, run_id: str) -> tuple[str, str, list[tuple[str, dict[str, Any], list[dict]]]]:
    run = store.get_run(run_id)
    if run is None:
        raise ValueError(f"there is no run {run_id!r} in the history (`labconsole history` lists them)")
    if not is_distributed(run):
        raise ValueError(f"run {run['run_id'][:8]} is not a data-parallel run (no --ranks): a scaling series needs "
                         "`labconsole run --mode training --ranks N` (and the same spec at --ranks 1)")
    if run.get("status") != "completed":
        raise ValueError(f"run {run['run_id'][:8]} is {run.get('status')}: only a completed run has a step time "
                         "to scale")
    by_ranks: dict[int, dict[str, Any]] = {}
    for other in _candidates(store, run):  # newest first: the first seen at each N is kept
        if other.get("run_id") != run["run_id"] and is_distributed(other) and same_training(other, run) and \
                (ranks_of(other) == 1 or scaling_of(other) == scaling_of(run)):  # one curve, one scaling
            by_ranks.setdefault(ranks_of(other), other)
    by_ranks[ranks_of(run)] = run  # the run asked for stands at its own N
    base = partner(store, run)
    if base is not None:
        by_ranks[1] = base
    knobs = _run_knobs(run)
    model = (run.get("spec") or {}).get("model", "?")
    title = f"run {run['run_id'][:8]} · {model} · {ranks_of(run)} ranks, {scaling_of(run)} scaling"
    return f"run {run['run_id']}", title, [(_curve_name(knobs, []), knobs, list(by_ranks.values()))]


def _curve(store: Any, name: str, knobs: dict[str, Any], runs: list[dict[str, Any]],
           waterfall: Waterfall | str) -> dict[str, Any]:
    by_ranks: dict[int, dict[str, Any]] = {}
    for run in runs:  # oldest first: the newest at each N wins
        by_ranks[ranks_of(run)] = run
    base = by_ranks.get(1) or partner(store, next(iter(by_ranks.values())))
    base_lat = _step_times(store, base) if base is not None else None
    points = [_point(store, run, base, base_lat, name, knobs, waterfall) for _, run in sorted(by_ranks.items())]
    return {"name": name, "knobs": knobs, "baseline_run_id": base.get("run_id") if base else None, "points": points}


def _point(store: Any, run: dict[str, Any], base: dict[str, Any] | None, base_lat: Any, curve: str,
           knobs: dict[str, Any], waterfall: Waterfall | str) -> dict[str, Any]:
    ranks = ranks_of(run) or 0
    block = ddp_block(run)
    breakdown = block.get("breakdown") if isinstance(block.get("breakdown"), dict) else None
    point: dict[str, Any] = {
        "ranks": ranks, "run_id": run.get("run_id"), "curve": curve, "knobs": knobs, "host": run.get("hostname"),
        "scaling": scaling_of(run), "step_s": _step_s(run, breakdown), "samples_per_s": None, "e": None,
        "interval_95": None, "efficiency": None, "e_missing": None, "breakdown": breakdown,
        "prediction": block.get("prediction") if isinstance(block.get("prediction"), dict) else None,
        "injected": block.get("injected"), "started_at": run.get("started_at")}
    try:
        point["samples_per_s"] = samples_per_s(run)[0]
    except ValueError as exc:
        point["e_missing"] = str(exc)
        return point
    if base is None and ranks != 1:
        point["e_missing"] = ("E(N) not available: no completed 1-rank run of the same spec on this host; run it "
                              "with --ranks 1 (or add 1 to the sweep's --ranks)")
    else:
        try:
            result = efficiency(run, base or run, _step_times(store, run), base_lat if base_lat is not None else [])
        except ValueError as exc:
            point["e_missing"] = f"E(N) not available: {exc}"
        else:
            point.update(efficiency=result, e=result["e"], interval_95=result["interval_95"])
    point["waterfall"] = _waterfall_of(waterfall, breakdown, ddp_block(base).get("breakdown") if base else None,
                                       ranks, point["scaling"])
    return point


def _waterfall_of(waterfall: Waterfall | str, bd_n: Any, bd_1: Any, ranks: int, scaling: str) -> dict[str, Any]:
    if isinstance(waterfall, str):
        return {"not_available": waterfall}
    if not isinstance(bd_n, dict):
        return {"not_available": "this run carries no time breakdown (summary.scenario.ddp.breakdown)"}
    if not isinstance(bd_1, dict):
        return {"not_available": "no 1-rank baseline with a time breakdown: the waterfall starts from T(1)/N"}
    try:
        return waterfall(bd_n, bd_1, ranks, scaling)
    except (ValueError, KeyError, TypeError, ZeroDivisionError) as exc:
        return {"not_available": f"the waterfall could not be built ({type(exc).__name__}: {exc})"}


def _waterfall_function() -> Waterfall | str:
    """C's waterfall, or why it cannot be used (a string)."""
    try:
        from console.analysis.scaling_waterfall import waterfall
    except ImportError as exc:
        return f"console.analysis.scaling_waterfall is not in this build ({exc})"
    return waterfall


def _step_times(store: Any, run: Mapping[str, Any]) -> Any:
    _, latency_ns = store.latencies(run["run_id"])
    return latency_ns


def _step_s(run: Mapping[str, Any], breakdown: Mapping[str, Any] | None) -> float | None:
    mean = ((breakdown or {}).get("step_s") or {}).get("mean")
    if isinstance(mean, (int, float)):
        return float(mean)
    latency = ((run.get("summary") or {}).get("latency_ms") or {}).get("mean")
    return float(latency) / 1000 if isinstance(latency, (int, float)) else None


def _candidates(store: Any, run: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Completed runs of the same model on the same host, newest first."""
    filters: dict[str, Any] = {"model": (run.get("spec") or {}).get("model")}
    if run.get("hostname"):
        filters["hostname"] = run["hostname"]
    return [other for other in store.list_runs(limit=CANDIDATES, status="completed", **filters)
            if same_host(other, run)]


def _comparable_spec(run: Mapping[str, Any]) -> dict[str, Any]:
    spec = copy.deepcopy(dict(run.get("spec") or {}))
    for key in IGNORED_SPEC:
        spec.pop(key, None)
    torch = (spec.get("engine_options") or {}).get("torch")
    if isinstance(torch, dict):
        for key in IGNORED_TORCH:
            torch.pop(key, None)
    return spec


def _run_knobs(run: Mapping[str, Any]) -> dict[str, Any]:
    """The levers a run was measured with (bucket size, accumulation, precision, loader workers) where it says."""
    block, spec = ddp_block(run), run.get("spec") or {}
    torch = (spec.get("engine_options") or {}).get("torch") or {}
    scenario = spec.get("scenario_options") or {}
    found = {"bucket_mb": block.get("bucket_mb", torch.get("bucket_mb")),
             "grad_accum": block.get("grad_accum", torch.get("grad_accum")),
             "precision": block.get("precision", spec.get("precision")),
             "loader_workers": scenario.get("loader_workers") if isinstance(scenario, dict) else None}
    return {k: v for k, v in found.items() if k in KNOB_AXES and v is not None}


def _varying(knob_sets: list[dict[str, Any]]) -> list[str]:
    keys = sorted({k for knobs in knob_sets for k in knobs})
    return [k for k in keys if len({json.dumps(knobs.get(k), default=str) for knobs in knob_sets}) > 1]


def _curve_name(knobs: dict[str, Any], varying: list[str]) -> str:
    """What sets this curve apart from the others ("bucket_mb=100"), or "E(N)" for a lone curve."""
    return ", ".join(f"{k}={_value(knobs.get(k))}" for k in varying) or "E(N)"


def _value(value: Any) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)
