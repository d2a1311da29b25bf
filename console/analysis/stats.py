"""Descriptive statistics with their confidence, and MLPerf LoadGen's early-stopping sample bound.

Qt-free, numpy only. Percentiles use numpy's default definition (`np.percentile`, linear interpolation), and
percentiles are given in percent (50, 90, 99, 99.9), as everywhere in the console.

- `percentile_ci`: a confidence interval for a percentile. `method="order"` (default) is the distribution-free
  interval from order statistics: O(1) in the number of resamples, exact coverage ≥ the confidence level for
  any continuous distribution. `method="bootstrap"` is the bootstrap percentile interval, drawn exactly and in
  O(n_boot) (see `bootstrap_percentiles`), so 1e5+ samples cost no more than 100.
- `describe`: n, mean, std, CV, min, max, p50/p90/p99 with intervals, IQR and Tukey outliers.
- `min_samples_for_percentile`: how many samples a percentile needs (p90: 64, p99: 662, p99.9: 6636).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

DESCRIBE_PERCENTILES = (50, 90, 99)


# ---- Public API
def percentile_ci(samples_ms: Any, q: float, confidence: float = 0.95, n_boot: int = 2000, seed: int = 0,
                  method: str = "order") -> tuple[float | None, float | None]:
    """A two-sided `confidence` interval `(low, high)` for the population's q-th percentile (q in percent).

    `method="order"`: the distribution-free interval [x_(l), x_(u)] from the sorted sample. With B ~
    Binomial(n, q/100) (how many samples fall below the true percentile), l is the largest rank with P[B < l]
    ≤ α/2 and u the smallest with P[B ≥ u] ≤ α/2, so the coverage P[l ≤ B < u] is at least the confidence for
    any continuous distribution; no resampling, O(n) for the sort only. When the sample is too small to bound
    a side at this confidence (a 95% upper bound for p99 needs n ≥ 368: 0.99^n ≤ 2.5%), that side is None.

    `method="bootstrap"`: the bootstrap percentile interval over `n_boot` resamples (`seed` fixes them), each
    resample's percentile drawn exactly without building the resample (`bootstrap_percentiles`).
    """
    x = _sorted_samples(samples_ms)
    p = _fraction(q)
    _check_confidence(confidence)
    if method == "order":
        return _order_statistic_ci(x, p, confidence)
    if method == "bootstrap":
        if x.size == 1:
            return float(x[0]), float(x[0])
        boot = bootstrap_percentiles(x, q, n_boot=n_boot, rng=np.random.default_rng(seed), presorted=True)
        alpha = 1.0 - confidence
        low, high = np.quantile(boot, [alpha / 2, 1 - alpha / 2])
        return float(low), float(high)
    raise ValueError(f"method must be 'order' or 'bootstrap', got {method!r}")


def bootstrap_percentiles(samples: Any, q: float, n_boot: int = 2000, rng: np.random.Generator | None = None,
                          presorted: bool = False) -> np.ndarray:
    """The q-th percentile of each of `n_boot` bootstrap resamples (size n, with replacement), in O(n_boot).

    Equivalent in distribution to drawing n indices with `rng.integers(0, n, n)` per resample and taking
    `np.percentile` of the resample, without the n × n_boot work: a resample's index is floor(n·U) with U
    uniform, and floor is monotone, so the resample's k-th smallest value is x_(floor(n·U_(k))) where U_(k) is
    the k-th smallest of n uniforms, U_(k) ~ Beta(k, n − k + 1). `np.percentile` interpolates between the k-th
    and (k+1)-th smallest: given U_(k) = u, U_(k+1) = u + (1 − u)·Beta(1, n − k). `tests/unit/test_stats.py`
    checks this against literal resampling.
    """
    x = np.asarray(samples, dtype=np.float64) if presorted else _sorted_samples(samples)
    n = x.size
    if n_boot < 1:
        raise ValueError(f"n_boot must be at least 1, got {n_boot}")
    rng = rng if rng is not None else np.random.default_rng(0)
    h = (n - 1) * _fraction(q)
    j = int(math.floor(h))  # 0-based rank of the lower neighbour
    frac = h - j
    u_low = rng.beta(j + 1, n - j, size=n_boot)
    low = x[np.minimum((u_low * n).astype(np.int64), n - 1)]
    if frac == 0.0 or j + 1 >= n:
        return low
    u_high = u_low + (1.0 - u_low) * rng.beta(1, n - j - 1, size=n_boot)
    high = x[np.minimum((u_high * n).astype(np.int64), n - 1)]
    return low + frac * (high - low)


def describe(samples_ms: Any, percentiles: Sequence[float] = DESCRIBE_PERCENTILES, confidence: float = 0.95,
             method: str = "order") -> dict[str, Any]:
    """Summary statistics of latencies (any unit; the console passes ms), each percentile with its interval.

    Keys: n, mean, std (sample, ddof=1), cv (std/mean), min, max, one key per percentile ("p50", "p90", "p99";
    p99.9 is "p99.9"), ci95 {"p50": [low, high], …} (at `confidence`; a side is None when the sample cannot
    bound it), ci_method, q1, q3, iqr, outliers {count, fraction, low_fence, high_fence} (Tukey: beyond
    1.5 × IQR from the quartiles). With no samples every number is None and n is 0.
    """
    names = [percentile_key(q) for q in percentiles]
    x = np.asarray(samples_ms, dtype=np.float64).ravel()
    if x.size == 0:
        return {"n": 0, "mean": None, "std": None, "cv": None, "min": None, "max": None,
                **{name: None for name in names}, "ci95": {name: [None, None] for name in names},
                "ci_method": _ci_method_text(method, confidence), "q1": None, "q3": None, "iqr": None,
                "outliers": {"count": 0, "fraction": None, "low_fence": None, "high_fence": None}}
    x = _sorted_samples(x)
    n = int(x.size)
    mean = float(x.mean())
    std = float(x.std(ddof=1)) if n > 1 else 0.0
    values = np.percentile(x, list(percentiles)) if len(percentiles) else []
    q1, q3 = (float(v) for v in np.percentile(x, [25, 75]))
    iqr = q3 - q1
    low_fence, high_fence = q1 - 1.5 * iqr, q3 + 1.5 * iqr
    below = np.searchsorted(x, low_fence, side="left")
    above = n - np.searchsorted(x, high_fence, side="right")
    outliers = int(below + above)
    ci = {}
    for name, q in zip(names, percentiles, strict=True):
        low, high = percentile_ci(x, q, confidence=confidence, method=method)
        ci[name] = [low, high]
    return {
        "n": n, "mean": mean, "std": std, "cv": std / mean if mean else None,
        "min": float(x[0]), "max": float(x[-1]),
        **{name: float(v) for name, v in zip(names, values, strict=True)},
        "ci95": ci, "ci_method": _ci_method_text(method, confidence),
        "q1": q1, "q3": q3, "iqr": iqr,
        "outliers": {"count": outliers, "fraction": outliers / n, "low_fence": low_fence,
                     "high_fence": high_fence},
    }


def min_samples_for_percentile(q: float, confidence: float = 0.99, tolerance: float = 0.0,
                               overlatency: int = 1) -> int:
    """The fewest samples that back the q-th percentile (q in percent), by MLPerf LoadGen's early stopping.

    LoadGen (`loadgen/early_stopping.cc`, `PerformanceSummary::EarlyStopping`) asks: with n queries of which t
    are "overlatency" (at or above the reported percentile), is P[Binomial(n, 1 − (p − d)) ≤ t] < 1 − c? That
    is the chance that a system whose true p-quantile were worse would still show so few slow queries. It
    computes it as BetaRegularized(p − d, n − t, 1 + t); single-stream and multi-stream start from t = 1 (the
    reported estimate is the largest latency) with c = 0.99 and tolerance d = 0, and report "need to process
    at least h + 1 queries". So this returns the smallest n with

        sum_{x=0..t} C(n, x) · (1 − p + d)^x · (p − d)^(n − x)  <  1 − confidence,   t = `overlatency`

    which gives p50: 11, p90: 64, p99: 662, p99.9: 6636 with the defaults (t = 0 would give 44 and 459). A
    tolerance d > 0 loosens the bound, as in LoadGen: it then vouches only for the (p − d) quantile.
    """
    p = _fraction(q) - tolerance
    if not 0.0 < p < 1.0:
        raise ValueError(f"percentile minus tolerance must lie strictly between 0 and 1, got {p}")
    _check_confidence(confidence)
    if overlatency < 0 or int(overlatency) != overlatency:
        raise ValueError(f"overlatency must be a whole number ≥ 0, got {overlatency!r}")
    t = int(overlatency)
    limit = 1.0 - confidence

    def passes(n: int) -> bool:
        return binomial_cdf(t, n, 1.0 - p) < limit

    low = max(t + 1, math.ceil(math.log(limit) / math.log(p)))  # the t = 0 bound: no fewer can pass
    if passes(low):
        return low
    high = low * 2
    while not passes(high):
        low, high = high, high * 2
    while high - low > 1:  # passes(high), not passes(low); the tail only shrinks as n grows
        mid = (low + high) // 2
        if passes(mid):
            high = mid
        else:
            low = mid
    return high


def binomial_cdf(k: int, n: int, p: float) -> float:
    """P[X ≤ k] for X ~ Binomial(n, p), summed in log space (exact to rounding, no scipy)."""
    if k < 0:
        return 0.0
    if k >= n:
        return 1.0
    if p <= 0.0:
        return 1.0
    if p >= 1.0:
        return 0.0
    x = np.arange(k + 1, dtype=np.float64)
    log_pmf = _binomial_log_pmf(x, n, p)
    top = log_pmf.max()
    return float(min(1.0, math.exp(top) * np.exp(log_pmf - top).sum()))


@functools.lru_cache(maxsize=256)
def student_t_quantile(p: float, df: float) -> float:
    """The p-quantile of Student's t with `df` degrees of freedom (no scipy): bisection on the CDF, which is
    the integral of the density from 0 (Simpson's rule on 4001 points; accurate to ~1e-10 for df ≥ 1)."""
    if not 0.0 < p < 1.0:
        raise ValueError(f"p must lie strictly between 0 and 1, got {p!r}")
    if not df > 0:
        raise ValueError(f"degrees of freedom must be positive, got {df!r}")
    if p < 0.5:
        return -student_t_quantile(1.0 - p, df)
    if p == 0.5:
        return 0.0
    log_scale = math.lgamma((df + 1) / 2) - math.lgamma(df / 2) - 0.5 * math.log(df * math.pi)

    def cdf(t: float) -> float:
        x = np.linspace(0.0, t, 4001)
        y = np.exp(log_scale - (df + 1) / 2 * np.log1p(x * x / df))
        step = t / 4000
        return 0.5 + step / 3 * (y[0] + y[-1] + 4 * y[1:-1:2].sum() + 2 * y[2:-1:2].sum())

    low, high = 0.0, 1.0
    while cdf(high) < p:
        low, high = high, high * 2
        if high > 1e7:
            return math.inf
    for _ in range(100):
        mid = (low + high) / 2
        if cdf(mid) < p:
            low = mid
        else:
            high = mid
        if high - low <= 1e-12 * high:
            break
    return (low + high) / 2


def percentile_key(q: float) -> str:
    """50 → "p50", 99.9 → "p99.9"."""
    return f"p{q:g}"


# ---- Private API
def _sorted_samples(samples: Any) -> np.ndarray:
    x = np.asarray(samples, dtype=np.float64).ravel()
    if x.size == 0:
        raise ValueError("no samples")
    if not np.isfinite(x).all():
        raise ValueError("samples must be finite numbers (found NaN or infinity)")
    return np.sort(x)


def _fraction(q: float) -> float:
    if not isinstance(q, (int, float, np.integer, np.floating)) or not 0.0 < float(q) < 100.0:
        raise ValueError(f"percentile must be a number strictly between 0 and 100, got {q!r}")
    return float(q) / 100.0


def _check_confidence(confidence: float) -> None:
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must lie strictly between 0 and 1, got {confidence!r}")


def _binomial_log_pmf(x: np.ndarray, n: int, p: float) -> np.ndarray:
    lgamma = np.vectorize(math.lgamma, otypes=[np.float64])
    return (math.lgamma(n + 1) - lgamma(x + 1) - lgamma(n - x + 1)
            + x * math.log(p) + (n - x) * math.log1p(-p))


def _binomial_cdf_window(n: int, p: float) -> tuple[int, np.ndarray]:
    """(first k, P[B ≤ k] for k = first … last) over the ranks that carry all but ~1e-40 of Binomial(n, p).

    The pmf is built from the mode outwards by the ratio pmf(k+1)/pmf(k) = (n−k)/(k+1) · p/(1−p), vectorised,
    so n = 1e7 costs a few thousand operations, not n.
    """
    sd = math.sqrt(n * p * (1 - p))
    reach = int(math.ceil(14 * sd + 30))
    mode = min(n, int(math.floor((n + 1) * p)))
    first, last = max(0, mode - reach), min(n, mode + reach)
    log_mode = float(_binomial_log_pmf(np.array([float(mode)]), n, p)[0])
    log_odds = math.log(p) - math.log1p(-p)
    up = np.arange(mode, last, dtype=np.float64)  # ratios mode→mode+1 … last−1→last
    down = np.arange(mode - 1, first - 1, -1, dtype=np.float64)  # ratios mode→mode−1 … first+1→first
    log_up = log_mode + np.cumsum(np.log((n - up) / (up + 1)) + log_odds)
    log_down = log_mode - np.cumsum(np.log((n - down) / (down + 1)) + log_odds)
    log_pmf = np.concatenate([log_down[::-1], [log_mode], log_up])
    return first, np.cumsum(np.exp(log_pmf))


def _order_statistic_ci(x: np.ndarray, p: float, confidence: float) -> tuple[float | None, float | None]:
    n = x.size
    alpha = 1.0 - confidence
    first, cdf = _binomial_cdf_window(n, p)  # cdf[i] = P[B ≤ first + i]
    # Lower: the largest l (1-based rank) with P[B ≤ l − 1] ≤ α/2. P[B ≤ first − 1] is negligible, so l ≥
    # first.
    below = np.flatnonzero(cdf <= alpha / 2)
    l_rank = first + 1 + int(below[-1]) if below.size else first
    # Upper: the smallest u with P[B ≤ u − 1] ≥ 1 − α/2.
    above = np.flatnonzero(cdf >= 1 - alpha / 2)
    u_rank = first + 1 + int(above[0]) if above.size else n + 1
    low = float(x[l_rank - 1]) if l_rank >= 1 else None
    high = float(x[u_rank - 1]) if u_rank <= n else None
    return low, high


def _ci_method_text(method: str, confidence: float) -> str:
    if method == "order":
        return f"{confidence:.0%} distribution-free interval from order statistics (binomial ranks)"
    return f"{confidence:.0%} bootstrap percentile interval"
