"""Distribution-free 95% intervals for benchmark figures: a median or other quantile (order statistics) and a
success rate (Clopper-Pearson). Pure Python, no numpy or scipy: the verdict logic is unit-tested without them.

Why order statistics: round-to-round timings on a shared machine are skewed and bursty, so an interval that
assumes a normal distribution would be too narrow exactly when the machine is noisy. The interval
[x_(l), x_(u)] of sorted samples holds the true quantile q with probability P(l ≤ B < u), B ~ Binomial(n, q),
whatever the distribution. With too few samples a side cannot be bounded and is reported as ±infinity.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence

CONFIDENCE = 0.95


# ---- Public API
def quantile_interval(values: Sequence[float], q: float,
                      confidence: float = CONFIDENCE) -> tuple[float, float]:
    """The `confidence` interval for the q-quantile from order statistics; ±inf where n cannot bound a side."""
    if not 0 < q < 1:
        raise ValueError(f"quantile {q} must lie strictly between 0 and 1")
    ordered = sorted(values)
    n = len(ordered)
    tail = (1 - confidence) / 2
    cdf = _binomial_cdf(n, q)  # cdf[r] = P(B ≤ r)
    # lower rank l: the largest with P(B < l) ≤ tail; upper rank u: the smallest with P(B ≥ u) ≤ tail.
    lower_rank = max((r for r in range(1, n + 1) if cdf[r - 1] <= tail), default=0)
    upper_rank = min((r for r in range(1, n + 1) if cdf[r - 1] >= 1 - tail), default=n + 1)
    low = ordered[lower_rank - 1] if lower_rank >= 1 else -math.inf
    high = ordered[upper_rank - 1] if upper_rank <= n else math.inf
    return low, high


def median_interval(values: Sequence[float], confidence: float = CONFIDENCE) -> tuple[float, float]:
    """The distribution-free interval for the median (ranks k and n+1−k, k from Binomial(n, ½))."""
    return quantile_interval(values, 0.5, confidence)


def median_with_interval(values: Sequence[float],
                         confidence: float = CONFIDENCE) -> tuple[float, tuple[float, float]]:
    """The median of `values` and its interval: the figure and the noise around it, from the same samples."""
    if not values:
        raise ValueError("no samples: a benchmark round produced nothing to take a median of")
    return statistics.median(values), median_interval(values, confidence)


def paired_ratios(ours: Sequence[float], theirs: Sequence[float]) -> list[float]:
    """Per-round ratios ours/theirs of interleaved rounds: each pair saw the same machine state."""
    if len(ours) != len(theirs):
        raise ValueError(f"paired rounds differ in number: {len(ours)} against {len(theirs)}")
    return [a / b for a, b in zip(ours, theirs, strict=True)]


def balanced_ratios(ours: Sequence[float], theirs: Sequence[float]) -> list[float]:
    """Ratios ours/theirs of interleaved rounds run in ABBA order (ours first in even rounds, second in odd ones),
    one per block of two rounds: the geometric mean of the block's two ratios.

    Why blocks: going first or second has an effect of its own on a shared machine (a neighbour's timer, caches
    warm from the run before), and with an odd number of rounds, or a median that lands among one order's rounds,
    that effect reads as a difference between the two sides; within a block of one round of each order it cancels
    exactly. An odd last round is dropped."""
    ratios = paired_ratios(ours, theirs)
    return [math.sqrt(ratios[i] * ratios[i + 1]) for i in range(0, len(ratios) - 1, 2)]


def rate_interval(successes: int, trials: int, confidence: float = CONFIDENCE) -> tuple[float, float]:
    """Clopper-Pearson (exact) interval for a success rate: never narrower than the trials allow."""
    if not 0 <= successes <= trials or trials < 1:
        raise ValueError(f"{successes} successes in {trials} trials is not a rate")
    tail = (1 - confidence) / 2

    def at_least(p: float) -> float:  # P(B ≥ successes), rising with p
        return 1 - (_binomial_cdf(trials, p)[successes - 1] if successes else 0.0)

    def at_most(p: float) -> float:  # P(B ≤ successes), falling with p
        return _binomial_cdf(trials, p)[successes]

    low = 0.0 if successes == 0 else _bisect(lambda p: at_least(p) - tail, rising=True)
    high = 1.0 if successes == trials else _bisect(lambda p: at_most(p) - tail, rising=False)
    return low, high


def wilson_interval(successes: int, trials: int, confidence: float = CONFIDENCE) -> tuple[float, float]:
    """Wilson score interval for a success rate: near the nominal coverage at small n and never outside [0, 1]
    (the normal interval collapses to a point at 20 of 20; Clopper-Pearson is wider than it needs to be)."""
    if not 0 <= successes <= trials or trials < 1:
        raise ValueError(f"{successes} successes in {trials} trials is not a rate")
    z = statistics.NormalDist().inv_cdf(1 - (1 - confidence) / 2)
    p = successes / trials
    centre = (p + z * z / (2 * trials)) / (1 + z * z / trials)
    half = z / (1 + z * z / trials) * math.sqrt(p * (1 - p) / trials + z * z / (4 * trials * trials))
    return max(0.0, centre - half), min(1.0, centre + half)


# ---- Private API
def _binomial_cdf(n: int, p: float) -> list[float]:
    """[P(B ≤ 0), …, P(B ≤ n)] for B ~ Binomial(n, p)."""
    total, out = 0.0, []
    for k in range(n + 1):
        total += math.comb(n, k) * p ** k * (1 - p) ** (n - k)
        out.append(min(total, 1.0))
    return out


def _bisect(f, rising: bool, steps: int = 60) -> float:
    """The p in [0, 1] where the monotonic f crosses zero."""
    low, high = 0.0, 1.0
    for _ in range(steps):
        mid = (low + high) / 2
        if (f(mid) < 0) == rising:
            low = mid
        else:
            high = mid
    return (low + high) / 2
