"""Tell a jittery machine from a drifting workload, from a run's window medians and the machine's noise floor.

The stability rule used to ask one thing: do the medians of the last K windows agree within a tolerance (10%)?
On a shared or virtual machine they often do not — a bare loop jitters 10–17% between 1-s windows there — so every
run was INVALID, and a run whose latency rose steadily by 40% could still pass if its last K windows happened to
agree. Two different questions are asked instead:

1. **Drift** — did latency move over the run, beyond what its own window-to-window jitter explains? The windows of
   the first half are compared with those of the second half (the middle one is left out when the count is odd) by
   an exact two-sided Mann–Whitney test on the window medians, and the change is the ratio of the two halves'
   medians. A drift needs both p ≤ ALPHA and a change larger than the tolerance. The test is what "beyond the
   noise" means here: it judges the change against this run's own window-to-window jitter, which is the machine's
   noise as the run met it. Its windows, though, share the machine's slow wander (neighbouring windows' medians
   correlate 0.5–0.6 on a VM), which the rank test, assuming independent windows, reads as a trend: 3 of 20 steady
   runs were called a drift. So the change must also exceed the machine's own wander — the largest change between
   the halves that the noise floor's reference kernel, work that cannot drift, showed in its recent draws
   (console.machine.noise pools them): a smaller change cannot be told from the machine, and the run says so.
   Why halves and a rank test: the windows' jitter on a shared machine is neither normal nor small, so a test on
   ranks keeps its false-alarm rate (≤ 3.2% at 5 + 5 windows) whatever the jitter's size; and both shapes of drift
   that matter — a steady rise (throttling, a leak) and a step (a competing program, a frequency change) — put the
   second half's windows above the first half's. A Mann–Kendall trend test is weaker against a step (a perfect step
   at 5 + 5 windows only reaches p ≈ 0.03). The Theil–Sen slope (the median of all pairwise slopes, robust to a
   stalled window) is reported beside it as the end-to-end trend.
   It runs on the stability rule's windows, not finer ones: finer windows would give the test more power, but a
   machine's jitter lasts longer than a short window (neighbouring windows share it), and the rank test, which
   assumes independent windows, then raises false alarms (measured on synthetic 0.5-s jitter: 5 of 40 steady runs
   called a drift at 20 windows, ≤ 2 at 10).
2. **Jitter** — without a drift, did the run stay inside what this machine does anyway? The run's typical spread
   of K consecutive windows (the median over every run of K windows, the noise floor's own statistic) must be
   within max(tolerance, NOISE_MULTIPLIER × noise), where noise is the noise floor's typical spread of K
   consecutive windows of a fixed reference kernel (engines.machine.noise): the same statistic, measured on work
   that cannot drift. The typical spread and not the last K windows alone: those are one draw of a long-tailed
   max/min statistic, and judging one draw failed half the steady runs on a 2-core VM (measured: 11 of 20).
   Twice the floor, because the reference kernel is not the workload (a model's calls meet the machine's jitter
   in their own way) — or, for a floor pooled from several draws, the noisiest draw's own typical spread when that
   is larger: on a shared VM the machine's noise changes within seconds (draws read 1% and 37% minutes apart, and
   a draw right after a run that jittered 60% read 4%), so what the machine itself did within the last hour is
   its noise too. A typical spread beyond all of that is interference beyond the noise, and the run is unsteady.

3. **What the run could resolve** — a drift test that finds nothing has not shown that nothing moved. The smallest
   step it finds in 95% of runs at this run's own window jitter (min_detectable_change: the pooled spread of the
   log window medians within each half, times the exact test's detectable shift for that many windows) is
   stated whenever it is above the tolerance ("no drift shown, but drifts under 38% cannot be resolved by 10
   windows that jitter 15%"). Measured on the project's 2-core VM, whose speed wanders with a long memory (1-s
   window medians spread 19–25%, still 16% at 3-s windows, neighbouring windows correlate 0.5–0.6), no window
   count resolves a 20% step within an 8-s run without false alarms (simulated on 150 s of real latencies:
   10 windows find 36% at 16% false alarms; 20 windows 54% at 33%), so the run says what it could not resolve
   instead of calling it INVALID: the steady runs' halves differ by as much (up to 32%).

Verdicts: "stable" (within the tolerance, no drift), "jittery" (beyond the tolerance, inside the noise, no drift:
valid, the noise stated with the figures), "drift" (INVALID, with the fix), "unsteady" (beyond the noise without a
trend: INVALID). Without a noise floor the rule is the old one plus the drift test, and the result says the noise
was not measured. Pure Python, Qt-free.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import Any

from console.analysis import compare
from engines.machine import noise

ALPHA = 0.05  # the drift test's two-sided significance level
DETECT_POWER = 0.95  # min_detectable_change: the step the test finds in 19 runs of 20
NOISE_MULTIPLIER = 2.0  # the last K windows may spread this many times the machine's typical spread
EXACT_MAX_WINDOWS = 25  # a half's windows up to which the exact U distribution is counted
MIN_TREND_WINDOWS = 6  # fewer windows cannot show a drift (3 + 3 windows: the smallest exact p is 0.1)

STABLE, JITTERY, DRIFT, UNSTEADY = "stable", "jittery", "drift", "unsteady"


# ---- Public API
def noise_of(floor: Mapping[str, Any] | None, k: int) -> float | None:
    """The noise floor's typical spread of `k` consecutive windows (a fraction), None when there is no floor.

    Recomputed from the floor's window medians for this `k` when they are stored — one draw's, or several draws'
    pooled (console.machine.noise.pooled) — since the rules may compare another number of windows than the 3 the floor was
    summarised for; else its stored spread."""
    if not isinstance(floor, Mapping):
        return None
    draws = floor.get("pooled_medians_us")
    if not isinstance(draws, Sequence) or isinstance(draws, str):
        draws = [floor.get("medians_us")]
    groups = [g for medians in draws
              if isinstance(medians, Sequence) and len(medians) >= k >= 2 and all(_positive(m) for m in medians)
              for g in noise.group_spreads(list(medians), k)]
    if groups:
        return statistics.median(groups)
    spread = floor.get("spread")
    return float(spread) if _finite(spread) and spread >= 0 else None


def wander_of(floor: Mapping[str, Any] | None) -> float | None:
    """How far the machine alone moved the halves of steady work (the floor's `wander`, or its one draw's
    |halves_change|); None when the floor does not say (an older floor, or none)."""
    if not isinstance(floor, Mapping):
        return None
    for key in ("wander", "halves_change"):
        if _finite(floor.get(key)):
            return abs(float(floor[key]))
    return None


def allowance_for(floor: Mapping[str, Any] | None, k: int, tolerance: float) -> float | None:
    """max(tolerance, NOISE_MULTIPLIER × the floor's typical spread of k windows, the noisiest recent draw's typical
    spread): what `judge` allows the run's typical spread; None without a floor (then only the tolerance on the
    last k windows applies). A run measured until stable aims for it (console.analysis.rules_file.aim), so the
    engine stops where the verdict is valid."""
    noise = noise_of(floor, k)
    return None if noise is None else max(float(tolerance), NOISE_MULTIPLIER * noise, worst_of(floor, k) or 0.0)


def worst_of(floor: Mapping[str, Any] | None, k: int) -> float | None:
    """The noisiest draw of a pooled floor: the largest of its draws' typical spreads of k windows (None for a
    floor of one draw, or none). Why it widens the allowance: on a shared VM the machine's noise changes within
    seconds (draws a minute apart read 1% and 37%), so a run that jittered as much as the machine itself did
    within the last hour is the machine's, not interference beyond it."""
    if not isinstance(floor, Mapping):
        return None
    draws = floor.get("pooled_medians_us")
    if not isinstance(draws, Sequence) or isinstance(draws, str) or len(draws) < 2:
        return None
    spreads = [noise.spread_of(list(m), k) for m in draws
               if isinstance(m, Sequence) and len(m) >= k >= 2 and all(_positive(x) for x in m)]
    spreads = [x for x in spreads if x is not None]
    return max(spreads) if spreads else None


def trend(medians: Sequence[float]) -> dict[str, Any] | None:
    """The drift test on window medians (module docstring): change of the second half's median against the first
    half's, its exact two-sided Mann–Whitney p, and the Theil–Sen end-to-end change; None below MIN_TREND_WINDOWS
    windows or with a non-positive median."""
    values = [float(m) for m in medians]
    n = len(values)
    if n < MIN_TREND_WINDOWS or not all(_positive(m) for m in values):
        return None
    half = n // 2
    first, second = values[:half], values[n - half:]
    before, after = statistics.median(first), statistics.median(second)
    slope = statistics.median((values[j] - values[i]) / (j - i) for i in range(n) for j in range(i + 1, n))
    spread = window_spread(first, second)
    return {"change": after / before - 1.0, "p_value": mann_whitney_p(first, second),
            "first_half_ms": before, "second_half_ms": after, "windows_per_half": half,
            "theil_sen_change": slope * (n - 1) / before,
            "window_spread": spread, "min_detectable_change": min_detectable_change(half, spread),
            "method": f"window medians of the first {half} windows against the last {half}: exact two-sided "
                      f"Mann–Whitney p, change = ratio of the halves' medians − 1; Theil–Sen slope × "
                      f"{n - 1} windows for the end-to-end trend"}


def window_spread(first: Sequence[float], second: Sequence[float]) -> float:
    """The windows' own jitter: the pooled standard deviation of the log window medians around each half's mean
    (the step between the halves taken out), so a drift does not inflate the jitter it is judged against."""
    logs = [[math.log(v) for v in half] for half in (first, second)]
    squares = sum((x - statistics.fmean(half)) ** 2 for half in logs for x in half)
    freedom = sum(len(half) for half in logs) - 2
    return math.sqrt(squares / freedom) if freedom > 0 else math.inf


def min_detectable_change(windows_per_half: int, spread: float) -> float:
    """The smallest step between the halves (a fraction) that the drift test finds in DETECT_POWER of runs with
    `windows_per_half` windows a half whose log medians jitter by `spread` (window_spread); inf when no step can
    reach p ≤ ALPHA with so few windows.

    Why it is stated: on a machine whose windows jitter 20%, ten windows cannot resolve a 20% drift (measured on
    this project's 2-core VM: 9 of 20 runs slowed 20% half-way were found), so "no drift" alone claimed more than
    the run resolved. It is a lower bound: it assumes independent windows, and windows that share the machine's
    slow wander (neighbouring windows' medians correlate 0.5–0.6 on a VM) resolve less."""
    if not math.isfinite(spread):
        return math.inf
    shift = _detectable_shift(windows_per_half)
    return math.exp(shift * spread) - 1.0 if math.isfinite(shift) else math.inf


def judge(medians: Sequence[float], k: int, tolerance: float, floor: Mapping[str, Any] | None = None,
          spread: float | None = None, base_windows: int | None = None) -> dict[str, Any]:
    """The stability verdict of a run from its window medians (all of them, in order; none missing).

    k, tolerance: the rules' stable_windows and stability_tolerance; floor: the machine's noise floor (None: not
    measured); spread: the last k windows' largest / smallest − 1 (computed when None). base_windows: for a run
    measured until stable and extended past its duration, the windows of one duration: a FALL over the whole run
    whose last `base_windows` windows show no drift is warm-up that settled while the engine extended the run
    (`settled`, valid, with a note), not a drift. Why only a fall: an until-stable run is extended precisely
    because its first windows were still settling (caches, allocator, clock ramp-up: latency falls), and the
    engine then stopped on steady windows, so "drift: latency fell" beside "stable after N windows" told the
    user two opposite things about one run. A rise is never warm-up (throttling, a competing program, growing
    state): it stays a drift however the run ended.

    Returns verdict (STABLE | JITTERY | DRIFT | UNSTEADY), valid, text (the one-line answer), spread, typical_spread
    (the median spread of every k consecutive windows), tolerance, noise (fraction or None), allowance
    (max(tolerance, NOISE_MULTIPLIER × noise)), trend (see `trend`, or None), drift_threshold, alpha.
    """
    values = [float(m) for m in medians]
    if spread is None:
        last = values[-k:]
        spread = max(last) / min(last) - 1.0 if last and min(last) > 0 else math.inf
    typical = typical_spread(values, k)
    noise = noise_of(floor, k)
    worst = worst_of(floor, k)
    allowance = max(tolerance, NOISE_MULTIPLIER * noise, worst or 0.0) if noise is not None else tolerance
    wander = wander_of(floor)
    threshold = max(tolerance, wander) if wander is not None else tolerance
    found = trend(values)
    if found is not None and threshold > max(tolerance, found["min_detectable_change"]):  # no smaller drift is called
        found = {**found, "min_detectable_change": threshold, "machine_wander": wander}
    result = {"spread": spread, "typical_spread": typical, "tolerance": tolerance, "noise": noise,
              "allowance": allowance, "trend": found, "drift_threshold": threshold, "alpha": ALPHA,
              "noise_multiplier": NOISE_MULTIPLIER, "wander": wander, "worst_noise": worst, "settled": None,
              "unresolved_change": None,
              "min_detectable_change": found["min_detectable_change"] if found is not None else None}
    if _drifts(found, threshold):
        final = trend(values[-base_windows:]) if base_windows and len(values) > base_windows else None
        if found["change"] < 0 and final is not None and not _drifts(final, threshold):
            result["settled"] = {"change": found["change"], "p_value": found["p_value"],
                                 "final_windows": int(base_windows), "final_trend": final,
                                 "text": f"latency fell {abs(found['change']):.0%} while the run was extended "
                                         f"(warm-up still settling); no drift over the last {base_windows} "
                                         f"windows"}
        else:
            direction = "rose" if found["change"] > 0 else "fell"
            return {**result, "verdict": DRIFT, "valid": False,
                    "text": f"drift: latency {direction} {abs(found['change']):.0%} over the run"}
    settled = f"; {result['settled']['text']}" if result["settled"] else ""
    # what the drift test could not resolve is said, never a bare "no drift": on a VM whose windows jitter 20%,
    # ten windows miss a real 20% step half the time
    unresolved = _unresolved(found, threshold, len(values)) if found is not None and not result["settled"] else None
    settled += unresolved or ""
    result["unresolved_change"] = found["change"] if unresolved and abs(found["change"]) > threshold else None
    result["min_detectable_change"] = found["min_detectable_change"] if found is not None else None
    if spread <= tolerance:
        return {**result, "verdict": STABLE, "valid": True, "text": "stable" + settled}
    if noise is not None and typical is not None and typical <= allowance:
        upto = f", up to {worst:.0%} in recent draws" if worst is not None and worst > NOISE_MULTIPLIER * noise else ""
        return {**result, "verdict": JITTERY, "valid": True,
                "text": f"jittery machine (noise {noise:.0%}{upto})" + (settled if unresolved else
                                                                       ", no drift" + settled)}
    if noise is not None and typical is not None:
        return {**result, "verdict": UNSTEADY, "valid": False,
                "text": f"unsteady: {k} windows in a row typically differ by {typical:.0%}, more than "
                        f"{NOISE_MULTIPLIER:g}× this machine's noise ({noise:.0%})"
                        + (f" and more than its noisiest recent draw ({worst:.0%})" if worst is not None else "")}
    return {**result, "verdict": UNSTEADY, "valid": False,
            "text": f"unsteady: the last {k} windows differ by {spread:.0%}, and the machine's noise was not "
                    f"measured"}


def typical_spread(medians: Sequence[float], k: int) -> float | None:
    """The median over every k consecutive windows of largest / smallest − 1 (None below k windows or with a
    non-positive median): engines.machine.noise's statistic, so a run's jitter and the machine's floor are the same
    kind of number."""
    return noise.spread_of(list(medians), k)


def reason(verdict: Mapping[str, Any], k: int, medians: Sequence[float], measured_s: float) -> dict[str, str] | None:
    """The failed rule {rule, detail, fix} of an INVALID verdict from `judge`, None for a valid one."""
    if verdict["valid"]:
        return None
    shown = ", ".join(f"{m:.4g}" for m in medians)
    noise = verdict["noise"]
    noise_text = (f"this machine's noise floor is {noise:.0%} between windows" if noise is not None
                  else "this machine's noise floor was not measured (labconsole machine measures it)")
    seconds = f"{math.ceil(measured_s)} s" if measured_s >= 1 else f"{measured_s:.1f} s"
    if verdict["verdict"] == DRIFT:
        found = verdict["trend"]
        rose = found["change"] > 0
        cause = ("thermal or power throttling, a competing program that started, or state that grows with each "
                 "iteration" if rose else "warm-up had not finished")
        fix = ("find what slowed the run half-way (labconsole doctor names busy programs and throttling), let the "
               "machine cool or close busy programs, and run again" if rose else
               f"raise --warmup (by about {seconds}, the length of this run) so measurement starts after latency "
               f"settles, or use --warmup-until-stable")
        return {"rule": "drift",
                "detail": f"latency {'rose' if rose else 'fell'} {abs(found['change']):.0%} from the first half of "
                          f"the run to the second ({found['first_half_ms']:.4g} → {found['second_half_ms']:.4g} ms, "
                          f"exact Mann–Whitney p = {found['p_value']:.2g} over the window medians {shown} ms; "
                          f"Theil–Sen trend {found['theil_sen_change']:+.0%} end to end), more than "
                          f"{verdict['drift_threshold']:.0%}; {noise_text}: {cause}",
                "fix": fix}
    typical = verdict.get("typical_spread")
    last = f"the medians of the last {k} windows ({', '.join(f'{m:.4g}' for m in medians[-k:])} ms) differ by " \
           f"{verdict['spread']:.0%}"
    if noise is not None and typical is not None:  # judged on the typical spread; the last k are one draw of it
        judged = (f"{k} windows in a row typically differ by {typical:.0%}, more than the "
                  f"{verdict['allowance']:.0%} allowed (the largest of the {verdict['tolerance']:.0%} tolerance, "
                  f"{NOISE_MULTIPLIER:g}× the noise floor and its noisiest recent draw); {last}")
    else:
        judged = f"{last}, more than the {verdict['tolerance']:.0%} tolerance"
    return {"rule": "stability",
            "detail": f"{judged}; {noise_text}; no drift over the run: latency was jumping between windows "
                      f"(interference from other programs?)",
            "fix": f"close busy programs (labconsole doctor names them) and run again; a longer --duration (at least "
                   f"{math.ceil(2 * measured_s)} s) gives steadier windows"}


def mann_whitney_p(first: Sequence[float], second: Sequence[float]) -> float:
    """Exact two-sided p of the Mann–Whitney U test (ties count a half), by the permutation distribution of U.

    Exact because the samples are window counts (5 + 5 by default), where the normal approximation is poor; above
    EXACT_MAX_WINDOWS a half (an until-stable run's many windows) the tie-corrected normal approximation, which is
    good there and needs no table; with
    ties the distribution assumes none, slightly conservative for the few ties window medians can have."""
    a, b = len(first), len(second)
    if not a or not b:
        raise ValueError("both halves need at least one window")
    if max(a, b) > EXACT_MAX_WINDOWS:  # the exact table grows as (a·b)²: a long until-stable run has hundreds
        return float(compare.mann_whitney_u(list(second), list(first), "asymptotic")["p_value"])
    u = sum(1.0 if y > x else 0.5 if y == x else 0.0 for x in first for y in second)
    low = min(u, a * b - u)
    counts = _u_counts(a, b)
    total = sum(counts)
    tail = sum(counts[i] for i in range(len(counts)) if i <= low + 1e-9)
    return min(1.0, 2.0 * tail / total)


# ---- Private API
@lru_cache(maxsize=64)
def _u_counts(a: int, b: int) -> tuple[int, ...]:
    """How many of the C(a + b, a) orderings give each U = 0 … a·b (the recursion of Mann and Whitney, 1947)."""
    table: dict[tuple[int, int], list[int]] = {}

    def counts(m: int, n: int) -> list[int]:
        if m == 0 or n == 0:
            return [1]
        if (m, n) not in table:
            # the largest value belongs to the second sample (adds m to U) or to the first (adds nothing)
            with_second, with_first = counts(m, n - 1), counts(m - 1, n)
            out = [0] * (m * n + 1)
            for u, c in enumerate(with_second):
                out[u + m] += c
            for u, c in enumerate(with_first):
                out[u] += c
            table[(m, n)] = out
        return table[(m, n)]

    return tuple(counts(a, b))


@lru_cache(maxsize=64)
def _detectable_shift(h: int, simulations: int = 4000) -> float:
    """The shift, in standard deviations of independent normal windows, that the exact test at ALPHA on h + h
    windows detects in DETECT_POWER of runs: bisection over a seeded simulation (the same answer every call).
    Above EXACT_MAX_WINDOWS a half, the normal-theory value (Mann–Whitney's efficiency 3/π against the t-test)."""
    if h > EXACT_MAX_WINDOWS:
        z_alpha, z_power = statistics.NormalDist().inv_cdf(1 - ALPHA / 2), statistics.NormalDist().inv_cdf(DETECT_POWER)
        return (z_alpha + z_power) * math.sqrt(2.0 / h) / math.sqrt(3.0 / math.pi)
    counts = _u_counts(h, h)
    total, tail, critical = sum(counts), 0, -1
    for u, c in enumerate(counts):  # the largest U (fewest inversions) whose two-sided p is within ALPHA
        tail += c
        if 2.0 * tail / total > ALPHA + 1e-12:
            break
        critical = u
    if critical < 0:
        return math.inf
    import numpy as np

    noise = np.random.default_rng(1947)
    first, second = noise.standard_normal((simulations, h, 1)), noise.standard_normal((simulations, 1, h))

    def power(shift: float) -> float:
        gap = first - (second + shift)  # U counts first-half windows above second-half ones: few when it rose
        u = (gap > 0).sum(axis=(1, 2)) + 0.5 * (gap == 0).sum(axis=(1, 2))
        return float(np.mean(u <= critical + 1e-9))

    low, high = 0.0, 1.0
    while power(high) < DETECT_POWER:
        low, high = high, high * 2
    for _ in range(20):
        middle = (low + high) / 2
        low, high = (middle, high) if power(middle) < DETECT_POWER else (low, middle)
    return high


def _unresolved(found: Mapping[str, Any], threshold: float, windows: int) -> str | None:
    """The clause for a run whose drift test found nothing it could not have missed: the halves moved beyond the
    tolerance without a significant test, or the smallest drift it resolves is above the tolerance; None when
    "no drift" is what the run showed."""
    smallest = found["min_detectable_change"]
    reach = (f"drifts under {smallest:.0%} cannot be told from this machine's own wander (steady work's halves "
             f"moved {smallest:.0%})" if found.get("machine_wander") is not None else
             f"drifts under {smallest:.0%} cannot be resolved by {windows} windows that jitter "
             f"{found['window_spread']:.0%}" if math.isfinite(smallest) else f"{windows} windows cannot show a drift")
    if abs(found["change"]) > threshold:
        return (f"; no drift shown, but the halves differ by {found['change']:+.0%} (p = {found['p_value']:.2g}), "
                f"which this run's {windows} windows cannot tell from jitter ({reach})")
    return f"; no drift shown, but {reach}" if smallest > threshold or "machine_wander" in found else None


def _drifts(found: Mapping[str, Any] | None, threshold: float) -> bool:
    return found is not None and found["p_value"] <= ALPHA and abs(found["change"]) > threshold


def _finite(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _positive(value: Any) -> bool:
    return isinstance(value, (int, float)) and math.isfinite(value) and value > 0
