"""Each ceiling is measured several times and reported as the median with its spread.

Why the median: one preempted repeat on a shared machine must not move the ceiling; the spread (min, max,
coefficient of variation, count) tells the reader how far the figure can be trusted.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Sequence


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
