"""Each ceiling is measured several times and reported as the median with its spread — and, with
`until_precise`, repeated until the median's 95% interval is inside the goal or a time cap is reached.

Why the median: one preempted repeat on a shared machine must not move the ceiling; the spread (min, max,
coefficient of variation, count) tells the reader how far the figure can be trusted.

Why repeat adaptively (issue 18): on a noisy machine five repeats leave the median's interval wider than the
figure's own use can bear (cv between repeats of 20–25% for call floors, 14% for memory bandwidth and 31% for a
storage read were seen on a 2-core VM). So, as Triton perf_analyzer keeps adding measurement windows until they
agree, a figure keeps adding repeats until its interval is within ±`goal` of the median, up to `max_s` seconds
and `max_repeats`. When the cap comes first, the figure keeps the interval it reached and a note says the machine's
noise is why, with the cv — a wide interval is then a property of the machine, stated, not hidden.
The interval is distribution-free (order statistics of the median, binomial coverage ≥ 95%), since repeats on a
shared machine are skewed (a preempted repeat is slow, never fast). Checking after every repeat makes the
coverage a little optimistic (optional stopping), which the minimum of six repeats keeps small.
"""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable, Sequence

GOAL = 0.05  # the median's 95% interval within ±5% of it
LEVEL = 0.95
MAX_REPEATS = 200


def spread(values: Sequence[float]) -> dict[str, float | int | None]:
    """min, max, cv (sample standard deviation / mean; None with fewer than two values) and n."""
    if not values:
        raise ValueError("no values to describe: a ceiling needs at least one measurement")
    mean = statistics.fmean(values)
    cv = statistics.stdev(values) / mean if len(values) > 1 and mean else None
    return {"min": min(values), "max": max(values), "cv": cv, "n": len(values)}


def repeated(once: Callable[[], float], repeats: int,
             on_repeat: Callable[[int], None] | None = None) -> tuple[float, dict, list[float]]:
    """Call `once` `repeats` times: (median, spread, values)."""
    if repeats < 1:
        raise ValueError(f"repeats must be at least 1, got {repeats}")
    values = []
    for i in range(repeats):
        if on_repeat is not None:
            on_repeat(i)
        values.append(float(once()))
    return statistics.median(values), spread(values), values


def median_interval(values: Sequence[float], level: float = LEVEL) -> tuple[float, float, float]:
    """(low, high, coverage): the order-statistic interval of the median with the highest k such that
    P(X(k) ≤ median ≤ X(n−k+1)) ≥ `level`; with too few values for `level` (fewer than 6 for 95%), min–max
    and its lower coverage."""
    ordered = sorted(values)
    n = len(ordered)
    if n == 0:
        raise ValueError("no values: a median interval needs at least one")
    k, coverage = 1, 1.0 - 2.0 * 0.5 ** n
    for candidate in range(2, (n + 1) // 2 + 1):
        tail = sum(math.comb(n, i) for i in range(candidate)) / 2.0 ** n  # P(Binom(n, ½) < candidate)
        if 1.0 - 2.0 * tail < level:
            break
        k, coverage = candidate, 1.0 - 2.0 * tail
    return ordered[k - 1], ordered[n - k], coverage


def until_precise(once: Callable[[], float], minimum: int, goal: float = GOAL, max_s: float = 10.0,
                  max_repeats: int = MAX_REPEATS, on_repeat: Callable[[int], None] | None = None,
                  clock: Callable[[], float] = time.monotonic,
                  explain: Callable[[dict], str | None] | None = None) -> tuple[float, dict, list[float]]:
    """Call `once` at least `minimum` times, then until the median's 95% interval is within ±`goal` of it, or
    `max_s` seconds or `max_repeats` calls have passed: (median, spread, values). The spread adds "interval"
    [low, high], "level" (its coverage), "half_width" (relative), "goal", "within_goal", "stopped" ("goal",
    "time" or "repeats"), "seconds" and "note" (why the interval is wider than the goal; None when it is not).
    `explain(spread)` may give that note from what the measurement itself saw (the storage read names the
    device's own variation); when it returns None the note is the machine's noise, as without it."""
    if minimum < 1:
        raise ValueError(f"repeats must be at least 1, got {minimum}")
    if max_repeats < minimum:
        raise ValueError(f"max_repeats ({max_repeats}) must be at least the minimum repeats ({minimum})")
    started = clock()
    values: list[float] = []
    while True:
        if on_repeat is not None:
            on_repeat(len(values))
        values.append(float(once()))
        if len(values) < minimum:
            continue
        precision = _precision(values, goal)
        if precision["within_goal"]:
            stopped = "goal"
        elif len(values) >= max_repeats:
            stopped = "repeats"
        elif clock() - started >= max_s:
            stopped = "time"
        else:
            continue
        break
    result = spread(values)
    seconds = clock() - started
    result.update(precision, goal=goal, stopped=stopped, seconds=round(seconds, 3))
    explained = explain(result) if explain is not None and stopped != "goal" else None
    result["note"] = None if stopped == "goal" else explained or _note(result, goal, stopped, max_s, max_repeats)
    return statistics.median(values), result, values


# ---- Private API
def _precision(values: list[float], goal: float) -> dict:
    low, high, coverage = median_interval(values)
    median = statistics.median(values)
    half_width = (high - low) / (2.0 * abs(median)) if median else None  # None, not inf: the card is JSON
    return {"interval": [low, high], "level": round(coverage, 4), "half_width": half_width,
            "within_goal": coverage >= LEVEL and half_width is not None and half_width <= goal}


def _note(result: dict, goal: float, stopped: str, max_s: float, max_repeats: int) -> str:
    cap = f"the {max_s:g} s cap" if stopped == "time" else f"the cap of {max_repeats} repeats"
    cv = result.get("cv")
    noise = f"cv {cv * 100:.1f}% between repeats" if cv is not None else "cv not defined for one repeat"
    width = "of unknown width (median 0)" if result["half_width"] is None else f"±{result['half_width'] * 100:.1f}%"
    return (f"interval {width} is wider than the ±{goal * 100:g}% goal after "
            f"{result['n']} repeats ({cap}) because of this machine's noise ({noise})")
