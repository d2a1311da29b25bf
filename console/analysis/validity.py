"""Is a run's measurement valid? MLPerf LoadGen-style rules, each failure with the change that fixes it.

`assess(latency_ns, t_ns, rules)` checks the measured iterations (warm-up excluded) against `ValidityRules`:

- minimum duration and minimum count (LoadGen's min_duration / min_query_count);
- stability: the measurement is cut into equal-time windows; the run is stable when the last `stable_windows`
  medians agree within `stability_tolerance` (largest / smallest − 1), or — given the machine's noise floor —
  when its typical spread of `stable_windows` consecutive windows (the median over every run of them, the floor's
  own statistic) is within max(tolerance, 2 × the floor); and the run must not drift: console.analysis.drift
  tells "latency rose 40% over the run" (INVALID, rule "drift") from "this machine jitters 15% between windows
  and the run stayed inside that" (valid). A run measured until stable is judged by the same rule the engine
  stopped on, and warm-up that settled while it was extended is a note, not a drift (drift.judge);
- percentile sufficiency: each reported percentile needs `stats.min_samples_for_percentile(q)` samples
  (LoadGen's early-stopping bound: p90 64, p99 662 at 99% confidence).

The server scenario is judged as LoadGen judges it, not on stability: Poisson arrivals make the queueing, and so
the window medians, vary from window to window at any load (a steady run at 50% load spreads by well over 10%),
so stability is reported there but never fails the run. Instead, with a latency bound (`--latency-bound-ms`):
the measured p99 (`server_latency_percentile`) must be within it and no query dropped ("latency_bound",
LoadGen's performance constraint), and the queries over the bound must be few enough to show the true p99 is
within it at `percentile_confidence` ("early_stopping", LoadGen's server early stopping). Without a bound only
duration, count and the percentiles' backing are judged, and a note says so.

Every failed rule comes back as {rule, detail, fix}; the fix names the CLI option and the value to use,
estimated from the rate this run achieved. `warmup_stable` is the matching test for ending a warm-up. Qt-free,
numpy only.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from console.analysis import drift
from console.analysis.stats import min_samples_for_percentile, percentile_key
from console.analysis.validity_text import latency_bound_rules


@dataclass(frozen=True)
class ValidityRules:
    """What a valid measurement needs. Defaults suit a desktop lab (LoadGen's own 600 s minimum does not).

    min_duration_s: measured seconds at least this (short runs miss periodic effects: timers, GC, frequency).
    min_count: measured iterations at least this (LoadGen's default min_query_count is 100).
    percentiles: the percentiles the summary reports; each needs min_samples_for_percentile(q,
        percentile_confidence, percentile_tolerance) samples (p50 11, p90 64, p99 662 with the defaults).
    windows: the measurement is cut into this many equal-time windows (fewer when a window would hold fewer
    than
        min_window_count iterations).
    stable_windows, stability_tolerance: stable when the medians of the last `stable_windows` windows agree
        within this fraction (max / min − 1 ≤ 0.10).
    warmup_windows, warmup_tolerance, max_warmup_s: for the warm-up loop: warm-up may end once `warmup_stable`
        holds for the latest iterations, and stops at max_warmup_s whether or not it did (the summary then
        says so).
    server_latency_percentile: the percentile a server run's latency bound applies to (LoadGen's
        target_latency_percentile, 99 for its server benchmarks).
    """

    min_duration_s: float = 2.0
    min_count: int = 100
    percentiles: tuple[float, ...] = (50, 90, 99)
    percentile_confidence: float = 0.99
    percentile_tolerance: float = 0.0
    windows: int = 10
    min_window_count: int = 20
    stable_windows: int = 3
    stability_tolerance: float = 0.10
    warmup_windows: int = 3
    warmup_tolerance: float = 0.10
    max_warmup_s: float = 30.0
    server_latency_percentile: float = 99.0

    def validate(self) -> ValidityRules:
        """Raise ValueError naming the first bad setting; return self."""
        if not self.min_duration_s >= 0:
            raise ValueError(f"min_duration_s must be ≥ 0, got {self.min_duration_s!r}")
        if self.min_count < 0:
            raise ValueError(f"min_count must be ≥ 0, got {self.min_count!r}")
        for q in self.percentiles:
            if not 0 < q < 100:
                raise ValueError(f"percentiles must lie strictly between 0 and 100, got {q!r}")
        if not 0 < self.percentile_confidence < 1:
            raise ValueError(f"percentile_confidence must lie strictly between 0 and 1, got "
                             f"{self.percentile_confidence!r}")
        if self.stable_windows < 2 or self.windows < self.stable_windows:
            raise ValueError(f"need 2 ≤ stable_windows ≤ windows, got stable_windows={self.stable_windows}, "
                             f"windows={self.windows}")
        if self.min_window_count < 1:
            raise ValueError(f"min_window_count must be ≥ 1, got {self.min_window_count!r}")
        if not self.stability_tolerance >= 0 or not self.warmup_tolerance >= 0:
            raise ValueError("tolerances must be ≥ 0")
        if self.warmup_windows < 2:
            raise ValueError(f"warmup_windows must be ≥ 2, got {self.warmup_windows!r}")
        if not self.max_warmup_s >= 0:
            raise ValueError(f"max_warmup_s must be ≥ 0, got {self.max_warmup_s!r}")
        if not 0 < self.server_latency_percentile < 100:
            raise ValueError(f"server_latency_percentile must lie strictly between 0 and 100, got "
                             f"{self.server_latency_percentile!r}")
        return self


# ---- Public API
def assess(latency_ns: Any, t_ns: Any = None, rules: ValidityRules | None = None, *,
           duration_s: float | None = None, warmup_latency_ns: Any = None, scenario: str | None = None,
           latency_bound_ms: float | None = None, dropped: int = 0,
           noise_floor: dict[str, Any] | None = None, base_windows: int | None = None) -> dict[str, Any]:
    """Judge one run's measured iterations.

    latency_ns: each measured iteration's latency; t_ns: each one's start (perf_counter_ns, as the `latencies`
    events carry them; None = back to back, starts from the cumulative latencies). duration_s: the measured
    wall time when known (the `result` event's measured_s), else from the first start to the last end.
    warmup_latency_ns: the warm-up iterations, when recorded (reported under "warmup", never a failure).
    scenario: one whose registration declares LATENCY_BOUND rules (server) is judged on the latency bound instead
    of stability (module docstring); any other, or None, keeps the stability rule. latency_bound_ms, dropped: the
    server run's bound (None: not given) and the queries it issued but never served (each counts as over the
    bound). noise_floor: the machine's noise floor
    (engines.machine.noise; None: not measured): stability is judged against it and tells drift from jitter
    (console.analysis.drift); the floor used is kept under stability.noise_floor. base_windows: for a run
    measured until stable and extended, the windows of its duration (drift.judge: a fall that settled is a note).

    Returns: valid, invalid_reasons [{rule, detail, fix}], stable, stability {spread, tolerance, medians_ms,
    judged}, windows [{index, start_s, end_s, count, median_ms}], percentiles {"p99": {required, have,
    sufficient}}, latency_bound {bound_ms, percentile, value_ms, over, queries, required, met,
    early_stopping_met} | None (server runs with a bound), count, duration_s, rate_per_s, required
    {iterations, duration_s} (the smallest run that meets the count rules at the observed rate), warmup
    {iterations, stable} | None, notes, rules (the settings used).
    """
    rules = (rules or ValidityRules()).validate()
    latency = np.asarray(latency_ns, dtype=np.float64).ravel()
    if t_ns is None:
        starts = np.concatenate([[0.0], np.cumsum(latency)[:-1]]) if latency.size else latency
    else:
        starts = np.asarray(t_ns, dtype=np.float64).ravel()
        if starts.size != latency.size:
            raise ValueError(f"t_ns has {starts.size} starts for {latency.size} latencies")
    n = int(latency.size)
    span_s = float((starts[-1] + latency[-1] - starts[0]) / 1e9) if n else 0.0
    measured_s = float(duration_s) if duration_s is not None else span_s
    rate = n / measured_s if n and measured_s > 0 else None
    reasons: list[dict[str, str]] = []
    notes: list[str] = []

    server = latency_bound_rules(scenario)
    bound = _latency_bound(latency, latency_bound_ms, dropped, rules) if server and n else None
    required_iterations = max([rules.min_count] + [_needed(q, rules) for q in rules.percentiles]
                              + ([bound["required"]] if bound else []))
    # 10% margin on the count-derived time: the rate varies between runs
    required_s = max(rules.min_duration_s, math.ceil(required_iterations / rate * 1.1)) if rate else None

    if n == 0:
        reasons.append({"rule": "min_count", "detail": "no iteration was measured",
                        "fix": f"check the run's error; a valid run needs at least {required_iterations} "
                               f"iterations and {rules.min_duration_s:g} s"})
    if n and measured_s < rules.min_duration_s:
        more = ""
        if rate:
            iterations = math.ceil(rules.min_duration_s * rate)
            more = f" (or --iterations {iterations} at the observed {_rate(rate)})"
        reasons.append({"rule": "min_duration",
                        "detail": f"measured {measured_s:.2f} s, the minimum is {rules.min_duration_s:g} s",
                        "fix": f"raise --duration to at least {_seconds(rules.min_duration_s)}{more}"})
    if n and n < rules.min_count:
        reasons.append({"rule": "min_count",
                        "detail": f"measured {n} iterations, the minimum is {rules.min_count}",
                        "fix": _more_iterations_fix(rules.min_count, rate)})

    percentiles: dict[str, dict[str, Any]] = {}
    for q in rules.percentiles:
        needed = _needed(q, rules)
        key = percentile_key(q)
        percentiles[key] = {"required": needed, "have": n, "sufficient": n >= needed}
        if n and n < needed:
            reasons.append({
                "rule": f"percentile_{key}",
                "detail": f"{key} needs at least {needed} samples (MLPerf early stopping at "
                          f"{rules.percentile_confidence:.0%} confidence) and the run has {n}",
                "fix": _more_iterations_fix(needed, rate)})

    windows = _windows(latency, starts, rules)
    stable, stability, stability_reason = _stability(windows, n, rate, measured_s, rules, noise_floor, base_windows)
    if stability.get("settled") and not server:
        notes.append(f"{stability['settled']['text']}: the percentiles include those first windows; "
                     f"--warmup-until-stable (or a longer --warmup) ends warm-up before measuring")
    stability["judged"] = not server
    if stability_reason and n and server:
        notes.append(f"stability is not judged for the server scenario (Poisson arrivals make queueing vary "
                     f"between windows): {stability_reason['detail']}")
    elif stability_reason and n:
        reasons.append(stability_reason)
    if server and n:
        reason = _latency_bound_reason(bound, rate, rules) if bound else None
        if reason:
            reasons.append(reason)
        if latency_bound_ms is None:
            notes.append(f"no latency bound was given (--latency-bound-ms), so the server run's "
                         f"p{rules.server_latency_percentile:g} was not judged against one; only duration, count "
                         f"and the percentiles' backing were")

    warmup = None
    if warmup_latency_ns is not None:
        warm = np.asarray(warmup_latency_ns, dtype=np.float64).ravel()
        warm_stable = warmup_stable(warm, windows=rules.warmup_windows, tolerance=rules.warmup_tolerance)
        warmup = {"iterations": int(warm.size), "stable": warm_stable}
        if not warm_stable:
            notes.append(f"warm-up ended before its last {rules.warmup_windows} windows agreed within "
                         f"{rules.warmup_tolerance:.0%}")

    return {
        "valid": not reasons, "invalid_reasons": reasons, "stable": stable, "stability": stability,
        "windows": windows, "percentiles": percentiles, "latency_bound": bound, "count": n,
        "duration_s": measured_s,
        "rate_per_s": rate,
        "required": {"iterations": required_iterations,
                     "duration_s": float(required_s) if required_s is not None else None},
        "warmup": warmup, "notes": notes, "rules": dataclasses.asdict(rules),
    }


def warmup_stable(latencies: Any, windows: int = 3, tolerance: float = 0.1,
                  window: int | None = None) -> bool:
    """True when the medians of the last `windows` consecutive windows agree within `tolerance` (max/min − 1).

    `window` is the iterations per window; None splits all the given latencies into `windows` equal windows (a
    remainder at the start is dropped). Fewer than `windows` latencies are never stable. A warm-up loop calls
    this on its recent latencies and stops when it holds, or at ValidityRules.max_warmup_s.
    """
    x = np.asarray(latencies, dtype=np.float64).ravel()
    if windows < 2:
        raise ValueError(f"windows must be ≥ 2, got {windows}")
    if window is None:
        window = x.size // windows
    if window < 1 or x.size < windows * window:
        return False
    recent = x[x.size - windows * window:].reshape(windows, window)
    spread = _spread(np.median(recent, axis=1))
    return spread is not None and spread <= tolerance


# ---- Private API
@functools.lru_cache(maxsize=64)
def _needed_cached(q: float, confidence: float, tolerance: float) -> int:
    return min_samples_for_percentile(q, confidence=confidence, tolerance=tolerance)


def _needed(q: float, rules: ValidityRules) -> int:
    return _needed_cached(float(q), rules.percentile_confidence, rules.percentile_tolerance)


def _latency_bound(latency: np.ndarray, bound_ms: float | None, dropped: int,
                   rules: ValidityRules) -> dict[str, Any] | None:
    """The server run against its bound, as LoadGen's performance constraint and early stopping see it."""
    if bound_ms is None:
        return None
    if not bound_ms > 0:
        raise ValueError(f"latency_bound_ms must be a positive number of milliseconds, got {bound_ms!r}")
    if dropped < 0:
        raise ValueError(f"dropped must be a count ≥ 0, got {dropped!r}")
    q = rules.server_latency_percentile
    dropped = int(dropped)
    over = int(np.count_nonzero(latency > bound_ms * 1e6)) + dropped
    queries = int(latency.size) + dropped
    value_ms = float(np.percentile(latency, q)) / 1e6
    # LoadGen's server early stopping: the fewest queries, with `over` of them over the bound, that show the
    # true percentile is within it at the confidence (the same binomial bound as min_samples_for_percentile)
    required = min_samples_for_percentile(q, confidence=rules.percentile_confidence,
                                          tolerance=rules.percentile_tolerance, overlatency=over)
    met = value_ms <= bound_ms and not dropped
    return {"bound_ms": float(bound_ms), "percentile": percentile_key(q), "value_ms": value_ms, "over": over,
            "queries": queries, "dropped": dropped, "required": required, "met": met,
            "early_stopping_met": queries >= required}


def _latency_bound_reason(bound: dict[str, Any], rate: float | None,
                          rules: ValidityRules) -> dict[str, str] | None:
    key, limit = bound["percentile"], bound["bound_ms"]
    if not bound["met"]:
        dropped = (f"; {bound['dropped']} queries were never served (still queued when the drain ended), "
                   f"which counts as over it") if bound["dropped"] else ""
        served = f" (it served {_rate(rate)})" if rate else ""
        return {"rule": "latency_bound",
                "detail": f"{key} is {bound['value_ms']:.4g} ms against the {limit:g} ms bound: "
                          f"{bound['over']} of {bound['queries']} queries took longer{dropped}",
                "fix": f"lower --qps{served} or raise --latency-bound-ms; --find-peak searches for the highest "
                       f"rate that meets the bound"}
    if not bound["early_stopping_met"]:
        return {"rule": "early_stopping",
                "detail": f"{key} is {bound['value_ms']:.4g} ms, within the {limit:g} ms bound, but with "
                          f"{bound['over']} of {bound['queries']} queries over it the run cannot show the true "
                          f"{key} is within it at {rules.percentile_confidence:.0%} confidence (LoadGen's "
                          f"early stopping needs {bound['required']} queries)",
                "fix": _more_iterations_fix(bound["required"], rate)}
    return None


def _windows(latency: np.ndarray, starts: np.ndarray, rules: ValidityRules) -> list[dict[str, Any]]:
    n = latency.size
    count = min(rules.windows, n // rules.min_window_count)
    if count < 1:
        return []
    t0 = starts[0]
    end = starts[-1] + latency[-1]
    width = max((end - t0) / count, 1.0)
    index = np.minimum(((starts - t0) // width).astype(np.int64), count - 1)
    out = []
    for i in range(count):
        members = latency[index == i]
        out.append({"index": i, "start_s": float(i * width / 1e9), "end_s": float((i + 1) * width / 1e9),
                    "count": int(members.size),
                    "median_ms": float(np.median(members)) / 1e6 if members.size else None})
    return out


def _stability(windows: list[dict[str, Any]], n: int, rate: float | None, measured_s: float,
               rules: ValidityRules, noise_floor: dict[str, Any] | None = None, base_windows: int | None = None
               ) -> tuple[bool, dict[str, Any], dict[str, str] | None]:
    k = rules.stable_windows
    info: dict[str, Any] = {"spread": None, "tolerance": rules.stability_tolerance, "windows_compared": k,
                            "medians_ms": [], "noise_floor": noise_floor, "noise": drift.noise_of(noise_floor, k)}
    if len(windows) < k:
        needed = k * rules.min_window_count
        return False, info, {
            "rule": "stability",
            "detail": f"{n} iterations are too few to compare {k} windows of at least "
                      f"{rules.min_window_count} iterations each",
            "fix": _more_iterations_fix(needed, rate)}
    last = windows[-k:]
    medians = [w["median_ms"] for w in last]
    info["medians_ms"] = medians
    if any(m is None for m in medians):
        return False, info, {
            "rule": "stability",
            "detail": f"one of the last {k} windows completed no iteration: the run stalled",
            "fix": "find what stalled the run (another busy program, swapping, a throttled device) and run "
                   "again"}
    spread = _spread(np.asarray(medians))
    info["spread"] = spread
    every = [w["median_ms"] for w in windows]
    if spread is not None and all(m is not None for m in every):  # drift vs jitter: console.analysis.drift
        verdict = drift.judge(every, k, rules.stability_tolerance, noise_floor, spread, base_windows)
        info.update(verdict=verdict["verdict"], text=verdict["text"], noise=verdict["noise"],
                    settled=verdict["settled"],
                    typical_spread=verdict["typical_spread"], unresolved_change=verdict["unresolved_change"],
                    min_detectable_change=verdict["min_detectable_change"],
                    allowance=verdict["allowance"], trend=verdict["trend"], drift_threshold=verdict["drift_threshold"],
                    wander=verdict["wander"])
        return verdict["valid"], info, drift.reason(verdict, k, every, measured_s)
    if spread is not None and spread <= rules.stability_tolerance:
        return True, info, None
    shown = ", ".join(f"{m:.4g}" for m in medians)
    if all(b < a for a, b in zip(medians, medians[1:], strict=False)):
        trend = "still falling, so warm-up had not finished"
        fix = (f"raise --warmup (by about {_seconds(measured_s)}, the length of this run) so measurement "
               f"starts after latency settles")
    elif all(b > a for a, b in zip(medians, medians[1:], strict=False)):
        trend = "still rising (thermal or power throttling, or a competing program)"
        fix = "let the machine cool or close busy programs, then run again; a longer --warmup lets it settle"
    else:
        trend = "jumping between windows (interference from other programs?)"
        fix = (f"close busy programs and run again; a longer --duration (at least "
               f"{_seconds(2 * measured_s)}) gives steadier windows")
    return False, info, {
        "rule": "stability",
        "detail": f"the medians of the last {k} windows ({shown} ms) differ by {spread:.0%}, more than "
                  f"{rules.stability_tolerance:.0%}: latency was {trend}",
        "fix": fix}


def _spread(medians: np.ndarray) -> float | None:
    low, high = float(np.min(medians)), float(np.max(medians))
    if low <= 0:
        return None if high <= 0 else math.inf
    return high / low - 1.0


def _more_iterations_fix(iterations: int, rate: float | None) -> str:
    if not rate:
        return f"set --iterations {iterations}"
    seconds = iterations / rate * 1.1  # 10% margin: the rate varies between runs
    return (f"raise --duration to at least {_seconds(seconds)} (about {iterations} iterations at the "
            f"observed {_rate(rate)}), or set --iterations {iterations}")


def _seconds(value: float) -> str:
    return f"{math.ceil(value)} s" if value >= 1 else f"{math.ceil(value * 10) / 10:g} s"


def _rate(rate: float) -> str:
    return f"{rate:,.0f}/s" if rate >= 10 else f"{rate:.2g}/s"
