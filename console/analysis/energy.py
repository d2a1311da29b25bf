"""Energy per run, and per-metric telemetry statistics, from the sample rows a run recorded. Pure functions.

Rows are ``(t_ns, source, metric, value, unit, method)`` tuples (as the sampler sends them) or dicts with those
keys (as ``HistoryStore.samples`` returns them). Times are ``perf_counter_ns`` values, the clock of the worker's
phase events, so the measuring window is simply ``[phase "measuring" t_ns, end t_ns]``.

Which metrics count, and for which device group, is what the telemetry sources declare (``Energy`` in
``console/telemetry/metadata.py``, read through the registry's catalog); nothing here names a metric. How energy
is obtained, best first, per device group (each NVIDIA GPU, each AMD GPU, the CPU):

``counter``
    A measured energy counter in J (NVML ``gpuN.energy``, AMD SMI ``amdgpuN.energy``, RAPL ``rapl.<zone>.energy``
    for every package and dram zone together). The counter is read at the samples bracketing the window (the
    last one at or before its start, the first at or after its end) and interpolated linearly to the window's
    edges; a counter that goes backwards is a wrap when its range is known (``wraps``) and otherwise a reset
    (counted from zero again, with a note).
``integrated``
    The trapezoid rule over measured power samples in W (``gpuN.power.instant`` before ``gpuN.power.avg``, as
    their ``preference`` says; ``rapl.<zone>.power``), the power curve interpolated to the window's edges.
``estimated``
    The trapezoid rule over a model's power (``cpu.power.estimated`` + ``mem.power.estimated``).

A row counts only when its unit and method are the ones its metric declares: an estimate labelled with a
measured metric's name is never taken for a measurement.

Methods are never mixed silently: each group is reported with its own method, and a ``total`` exists only
when every group used the same method; otherwise ``total`` is None and ``total_reason`` says why. The
top-level ``joules``/``method``/``scope`` are the total when there is one, else the best-method groups alone
(``headline_is_total`` False, and ``scope`` names exactly what they cover).
"""

from __future__ import annotations

import bisect
import math
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from statistics import median
from typing import Any

from console.telemetry import catalog
from console.telemetry.metadata import ENERGY_METHODS, ResolvedMetric

ENV_GRID = "LABCONSOLE_GRID_G_PER_KWH"
METHOD_RANK = {method: rank for rank, method in enumerate(ENERGY_METHODS)}
COVERAGE_MIN = 0.99  # below this, joules per inference is withheld: the samples miss part of the window
J_PER_KWH = 3.6e6


# ---- Public API


def grid_intensity_from_env(environ: Mapping[str, str] | None = None) -> str | None:
    """The user's grid carbon intensity text (``LABCONSOLE_GRID_G_PER_KWH``), None when not set.

    Pass it to :func:`energy_summary` as is: a value that is not a positive number gives no carbon figure and
    a note saying so, instead of an exception in the middle of a run's summary.
    """
    value = (os.environ if environ is None else environ).get(ENV_GRID, "").strip()
    return value or None


def energy_summary(rows: Iterable[Any], t_start_ns: int, t_end_ns: int, inferences: int | None = None,
                   grid_g_per_kwh: float | str | None = None, *, per: str = "inference",
                   wraps: Mapping[str, float] | None = None) -> dict[str, Any]:
    """Joules over ``[t_start_ns, t_end_ns]`` by the best method per device group, and per inference.

    ``inferences``: how many inferences (or training samples, with ``per="sample"``) the window holds.
    ``grid_g_per_kwh``: grid carbon intensity in g CO2/kWh (a number, or the environment variable's text);
    None: no carbon figure. ``wraps``: metric -> counter range in J, for raw counters that wrap (the sources
    in this package already unwrap theirs).
    """
    if t_end_ns <= t_start_ns:
        raise ValueError(f"empty window: t_end_ns {t_end_ns} <= t_start_ns {t_start_ns}")
    series = _series(rows, catalog.current())
    window_s = (t_end_ns - t_start_ns) / 1e9
    groups = _plans(series)
    scopes: list[dict[str, Any]] = []
    unavailable: dict[str, str] = {}
    for group, plans in groups.items():
        chosen, tried = None, []
        for plan in plans:
            result, why = _evaluate(plan, series, t_start_ns, t_end_ns, wraps or {})
            if result is None:
                tried.append(f"{plan.method} ({why})")
                continue
            chosen = result
            chosen["other_methods"] = sorted({p.method for p in plans if p.method != plan.method},
                                             key=METHOD_RANK.__getitem__)
            if tried:
                chosen["notes"].append("better method unusable: " + "; ".join(tried))
            break
        if chosen is None:
            unavailable[group] = "; ".join(tried) or "no energy or power samples"
            continue
        chosen["group"] = group
        _per_inference(chosen, inferences, per)
        scopes.append(chosen)

    out: dict[str, Any] = {
        "window": {"t_start_ns": t_start_ns, "t_end_ns": t_end_ns, "seconds": window_s},
        "inferences": inferences, "per": per,
        "joules": None, "joules_per_inference": None, "method": None, "source": None, "scope": None,
        "sample_period_s": None, "coverage": None, "headline_is_total": False,
        "scopes": scopes, "total": None, "total_reason": None, "unavailable": unavailable,
        "carbon": None, "reason": None, "notes": [],
    }
    if not scopes:
        out["total_reason"] = out["reason"] = (
            "no energy counter, power or estimated-power samples in the window" if not unavailable
            else "no device group has usable samples in the window: " +
            "; ".join(f"{g}: {why}" for g, why in unavailable.items()))
        _carbon(out, grid_g_per_kwh)
        return out

    methods = {s["method"] for s in scopes}
    if len(methods) == 1:
        total = _combine(scopes, inferences, per)
        out["total"] = total
        headline = total
        out["headline_is_total"] = True
    else:
        listing = ", ".join(f"{s['scope']} by {s['method']}" for s in scopes)
        out["total_reason"] = f"no total: methods differ ({listing}); each scope is reported on its own"
        best = min(methods, key=METHOD_RANK.__getitem__)
        headline = _combine([s for s in scopes if s["method"] == best], inferences, per)
    if unavailable:
        missing = ", ".join(unavailable)
        out["notes"].append(f"not included (no usable samples): {missing}")
    for key in ("joules", "joules_per_inference", "method", "source", "scope", "sample_period_s", "coverage"):
        out[key] = headline[key]
    _carbon(out, grid_g_per_kwh)
    return out


def telemetry_summary(rows: Iterable[Any], t_start_ns: int, t_end_ns: int) -> dict[str, dict[str, Any]]:
    """Per metric over the window: ``{mean, max, min, last, unit, method, source, samples}``.

    Counters (unit ``J``) get ``delta`` (last - first in the window) and no mean/max; bitmasks (unit ``bitmask``,
    e.g. ``gpuN.throttle``) get ``bits`` (the OR of every value) and no mean/max. A metric reported by two
    sources is keyed ``source/metric`` for the second one.
    """
    acc: dict[tuple[str, str], list[Any]] = {}
    for t, source, metric, value, unit, method in _tuples(rows):
        if t_start_ns <= t <= t_end_ns and _finite(value):
            a = acc.get((source, metric))
            if a is None:
                acc[(source, metric)] = [unit, method, 1, value, value, value, value, value, int(value)]
            else:
                a[2] += 1
                a[3] += value
                a[4] = max(a[4], value)
                a[5] = min(a[5], value)
                a[7] = value
                a[8] |= int(value) if a[0] == "bitmask" else 0
    out: dict[str, dict[str, Any]] = {}
    for (source, metric), (unit, method, n, total, vmax, vmin, first, last, bits) in sorted(
            acc.items(), key=lambda kv: kv[0][1]):
        entry: dict[str, Any] = {"mean": total / n, "max": vmax, "min": vmin, "last": last, "unit": unit,
                                 "method": method, "source": source, "samples": n}
        if unit == "J":
            entry.update(mean=None, max=None, min=None, delta=last - first)
        elif unit == "bitmask":
            entry.update(mean=None, max=None, min=None, bits=bits)
        key = metric if metric not in out else f"{source}/{metric}"
        out[key] = entry
    return out


# ---- Private API


@dataclass
class _Plan:
    method: str  # counter | integrated | estimated
    kind: str  # "counter" (cumulative J) or "power" (W)
    scope: str
    parts: list[tuple[str, str]]  # (source, metric)
    notes: list[str]  # what the parts' declarations say about using them


@dataclass
class _Series:
    source: str
    metric: str
    unit: str
    method: str
    t: list[int]
    v: list[float]
    declared: ResolvedMetric


def _tuples(rows: Iterable[Any]) -> Iterable[tuple[int, str, str, float, str, str]]:
    for r in rows:
        if isinstance(r, Mapping):
            yield (int(r["t_ns"]), r["source"], r["metric"], float(r["value"]), r["unit"], r["method"])
        else:
            t, source, metric, value, unit, method = r
            yield int(t), source, metric, float(value), unit, method


def _finite(value: float) -> bool:
    return not (math.isnan(value) or math.isinf(value))


def _series(rows: Iterable[Any], known: catalog.Catalog) -> dict[tuple[str, str], _Series]:
    """The rows of declared energy metrics whose unit and method are the declared ones, by (source, metric)."""
    out: dict[tuple[str, str], _Series] = {}
    for t, source, metric, value, unit, method in _tuples(rows):
        if not _finite(value):
            continue
        s = out.get((source, metric))
        if s is None:
            declared = known.resolve(metric)
            if (declared is None or declared.energy_group is None or unit != declared.spec.unit
                    or method != declared.spec.method):
                continue
            s = out[(source, metric)] = _Series(source, metric, unit, method, [], [], declared)
        elif unit != s.unit or method != s.method:
            continue
        s.t.append(t)
        s.v.append(value)
    for s in out.values():
        if any(b < a for a, b in zip(s.t, s.t[1:], strict=False)):
            order = sorted(range(len(s.t)), key=s.t.__getitem__)
            s.t = [s.t[i] for i in order]
            s.v = [s.v[i] for i in order]
    return out


def _plans(series: dict[tuple[str, str], _Series]) -> dict[str, list[_Plan]]:
    """Candidate plans per device group (groups in their declared order), best method first.

    Metrics of one group, method and preference are the parts of one plan, summed (RAPL's zones); one part
    per name: a part reported twice (two sources) counts once, the last one read.
    """
    buckets: dict[str, dict[tuple[int, int, str], dict[str, tuple[int, tuple[str, str], str]]]] = {}
    group_order: dict[str, int] = {}
    for key, s in series.items():
        d = s.declared
        role, method = d.spec.energy, d.spec.energy_method
        assert role is not None and method is not None and d.energy_group is not None and d.energy_part is not None
        group = d.energy_group
        group_order[group] = min(group_order.get(group, role.group_order), role.group_order)
        kind = "counter" if s.unit == "J" else "power"
        bucket = buckets.setdefault(group, {}).setdefault((METHOD_RANK[method], role.preference, kind), {})
        note = role.note.format(metric=s.metric) if role.note else ""
        bucket[d.energy_part] = (role.part_order, key, note)
    plans: dict[str, list[_Plan]] = {}
    for group in sorted(buckets, key=lambda g: (group_order[g], g)):
        for (rank, _preference, kind), parts in sorted(buckets[group].items()):
            method = ENERGY_METHODS[rank]
            names = sorted(parts, key=lambda part: (parts[part][0], part))
            scope = "+".join(names) + (" (estimated)" if method == "estimated" else "")
            notes = list(dict.fromkeys(parts[n][2] for n in names if parts[n][2]))
            if method == "estimated" and not notes:
                notes.append("ESTIMATE from a model, not a measurement")
            plans.setdefault(group, []).append(_Plan(method, kind, scope, [parts[n][1] for n in names], notes))
    return plans


def _bracket(s: _Series, t0: int, t1: int) -> tuple[int, int]:
    """Index range [i, j] of samples from the last at or before t0 to the first at or after t1 (clipped)."""
    i = bisect.bisect_right(s.t, t0) - 1
    j = bisect.bisect_left(s.t, t1)
    return max(i, 0), min(j, len(s.t) - 1)


def _interp(t: list[int], y: list[float], x: int) -> float:
    k = bisect.bisect_right(t, x)
    if k <= 0:
        return y[0]
    if k >= len(t):
        return y[-1]
    t_a, t_b = t[k - 1], t[k]
    if t_b == t_a:
        return y[k]
    return y[k - 1] + (y[k] - y[k - 1]) * (x - t_a) / (t_b - t_a)


def _evaluate(plan: _Plan, series: dict[tuple[str, str], _Series], t0: int, t1: int,
              wraps: Mapping[str, float]) -> tuple[dict[str, Any] | None, str]:
    parts: dict[str, float] = {}
    periods: list[float] = []
    notes: list[str] = []
    coverage = 1.0
    n_samples = 0
    covered_lo, covered_hi = t0, t1
    for key in plan.parts:
        s = series[key]
        i, j = _bracket(s, t0, t1)
        t, v = s.t[i:j + 1], s.v[i:j + 1]
        if len(t) < 2 or t[-1] <= t0 or t[0] >= t1:
            return None, f"{s.metric}: fewer than two samples around the window"
        lo, hi = max(t0, t[0]), min(t1, t[-1])
        covered_lo, covered_hi = max(covered_lo, lo), min(covered_hi, hi)
        if plan.kind == "counter":
            cumulative, resets = _unwrap(v, wraps.get(s.metric))
            if resets:
                notes.append(f"{s.metric} went backwards {resets}× without a known wrap range: counted as a "
                             "reset (energy from zero again); the result is a lower bound")
            joules = _interp(t, cumulative, hi) - _interp(t, cumulative, lo)
        else:
            joules = _trapezoid(t, v, lo, hi)
        parts[s.metric] = joules
        n_samples += len(t)
        if len(t) > 1:
            periods.append(median(b - a for a, b in zip(t, t[1:], strict=False)) / 1e9)
    span = covered_hi - covered_lo
    coverage = max(0.0, span) / (t1 - t0)
    if coverage < COVERAGE_MIN:
        lo_s, hi_s = (covered_lo - t0) / 1e9, (t1 - covered_hi) / 1e9
        notes.append(f"samples cover {coverage:.1%} of the window (missing {lo_s:.3g} s at the start, "
                     f"{hi_s:.3g} s at the end): joules are for the covered part only")
    joules = sum(parts.values())
    sources = sorted({series[k].source for k in plan.parts})
    notes += plan.notes
    return {
        "scope": plan.scope, "method": plan.method, "source": "+".join(sources),
        "metrics": [k[1] for k in plan.parts], "joules": joules, "joules_per_inference": None,
        "mean_power_w": joules / (span / 1e9) if span > 0 else None,
        "sample_period_s": max(periods) if periods else None, "samples": n_samples,
        "coverage": coverage, "covered_s": max(0, span) / 1e9,
        "parts": parts if len(parts) > 1 else None, "notes": notes,
    }, ""


def _unwrap(values: list[float], wrap: float | None) -> tuple[list[float], int]:
    """Cumulative energy from counter readings: a decrease is a wrap (``wrap`` known) or a reset."""
    out = [0.0]
    resets = 0
    for a, b in zip(values, values[1:], strict=False):
        step = b - a
        if step < 0:
            if wrap:
                step += wrap
            else:
                step = b  # reset to zero, then counted up to b
                resets += 1
        out.append(out[-1] + step)
    return out, resets


def _trapezoid(t: list[int], y: list[float], lo: int, hi: int) -> float:
    """Integral of the piecewise-linear curve through (t, y) from lo to hi, in J when y is W and t is ns."""
    if hi <= lo:
        return 0.0
    xs = [lo] + [x for x in t if lo < x < hi] + [hi]
    ys = [_interp(t, y, x) for x in xs]
    return sum((xs[k + 1] - xs[k]) * (ys[k] + ys[k + 1]) / 2 for k in range(len(xs) - 1)) / 1e9


def _per_inference(entry: dict[str, Any], inferences: int | None, per: str) -> None:
    if not inferences or inferences <= 0:
        return
    if entry["coverage"] < COVERAGE_MIN:
        entry["notes"].append(f"joules per {per} withheld: the samples do not cover the whole window")
        return
    entry["joules_per_inference"] = entry["joules"] / inferences


def _combine(scopes: list[dict[str, Any]], inferences: int | None, per: str) -> dict[str, Any]:
    methods = {s["method"] for s in scopes}
    assert len(methods) == 1, methods
    sources = sorted({part for s in scopes for part in s["source"].split("+")})
    periods = [s["sample_period_s"] for s in scopes if s["sample_period_s"] is not None]
    entry = {
        "joules": sum(s["joules"] for s in scopes), "joules_per_inference": None, "method": methods.pop(),
        "source": "+".join(sources), "scope": "+".join(s["scope"] for s in scopes),
        "sample_period_s": max(periods) if periods else None, "coverage": min(s["coverage"] for s in scopes),
        "notes": [],
    }
    _per_inference(entry, inferences, per)
    return entry


def _carbon(out: dict[str, Any], grid: float | str | None) -> None:
    if grid is None:
        return
    try:
        g = float(grid)
    except (TypeError, ValueError):
        g = math.nan
    if not (g > 0 and math.isfinite(g)):
        out["notes"].append(f"no carbon figure: grid intensity {grid!r} ({ENV_GRID}) is not a positive number "
                            "of g CO2/kWh")
        return
    if out["joules"] is None:
        out["notes"].append("no carbon figure: no energy figure")
        return
    per_inf = out["joules_per_inference"]
    out["carbon"] = {
        "grid_g_per_kwh": g, "g_co2": out["joules"] / J_PER_KWH * g,
        "g_co2_per_inference": per_inf / J_PER_KWH * g if per_inf is not None else None,
        "scope": out["scope"], "method": out["method"],
    }
