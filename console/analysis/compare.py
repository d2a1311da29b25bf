"""Is run B faster or slower than run A? Ratio of medians with a bootstrap interval, and Mann-Whitney U.

A difference is claimed only when both agree (DESIGN.md §5): the ratio's interval lies wholly outside the
noise band 1 ± `noise`, AND the two-sided Mann-Whitney U p-value is below `alpha`. Anything else is "no
difference", and the explanation says which condition held it back. Qt-free, numpy only; 1e5 samples per side
take well under a second (ranks by one argsort; bootstrap medians without building the resamples).

What the numbers cover: the interval resamples blocks of consecutive iterations, so drift within a run widens
it; the U test treats iterations as independent, so with thousands of them it finds even a 1% shift. Neither
can see how much a second run of the same configuration would differ: on a busy machine two back-to-back runs
differ by a few percent (a neighbour's load changes between them, caches and memory bandwidth are shared), and
that difference is real in the data. The noise band is what absorbs it: 2% suits a quiet machine;
`run_to_run_noise` measures the band from repeated runs of one configuration, and interleaving the two
configurations in rounds (a side given as its list of rounds) keeps the machine's changes out of the ratio.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from console.analysis.stats import bootstrap_percentiles, student_t_quantile

EXACT_MAX_SIZE = 50  # "auto": exact U distribution when both samples are this small and there are no ties


# ---- Public API
def compare(a_ms: Any, b_ms: Any, noise: float = 0.02, alpha: float = 0.01, confidence: float = 0.95,
            seed: int = 0, n_boot: int = 2000, blocks: int | None = 10) -> dict[str, Any]:
    """Compare latencies of B against A (same unit, e.g. ms).

    a_ms, b_ms: each run's latencies in the order they were measured, or a list of arrays (the rounds or runs
    that make up one side, e.g. interleaved rounds); the ratio and the U test use all values of a side.

    The interval resamples whole blocks, not single iterations: consecutive iterations share the machine's
    state (another program busy, a frequency step), so they are not independent, and an interval over single
    iterations would be far too narrow on a busy machine. A side given as one array is cut into `blocks`
    consecutive blocks (at least 5 values each; blocks=None or 1 resamples single iterations); a side given as
    a list of arrays resamples those arrays.

    Returns: ratio (median B / median A: > 1 means B takes longer), ci95 [low, high] (bootstrap percentile
    interval of the ratio at `confidence`, `n_boot` resamples of each side, fixed by `seed`), confidence,
    interval_method, blocks [a, b] (how many blocks each side was resampled by), p_value (two-sided
    Mann-Whitney U over all values), u_statistic (U of A), p_method, verdict ("faster" | "slower" |
    "no difference", said of B), n_a, n_b, median_a, median_b, noise, alpha, explanation (one sentence).
    """
    if not 0.0 <= noise < 1.0:
        raise ValueError(f"noise must be a fraction from 0 to 1 (0.02 = 2%), got {noise!r}")
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must lie strictly between 0 and 1, got {alpha!r}")
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must lie strictly between 0 and 1, got {confidence!r}")
    if blocks is not None and (int(blocks) != blocks or blocks < 1):
        raise ValueError(f"blocks must be a whole number ≥ 1 or None, got {blocks!r}")
    groups_a = _groups("a", a_ms, blocks)
    groups_b = _groups("b", b_ms, blocks)
    a = np.sort(np.concatenate(groups_a))
    b = np.sort(np.concatenate(groups_b))
    median_a, median_b = float(np.median(a)), float(np.median(b))
    if median_a <= 0 or median_b <= 0:
        raise ValueError("a ratio of medians needs positive latencies (a median is zero or negative)")
    ratio = median_b / median_a

    rng = np.random.default_rng(seed)
    boot_a = _bootstrap_medians(a, groups_a, n_boot, rng)
    boot_b = _bootstrap_medians(b, groups_b, n_boot, rng)
    with np.errstate(divide="ignore", invalid="ignore"):
        boot_ratio = boot_b / boot_a
    boot_ratio = boot_ratio[np.isfinite(boot_ratio)]
    tail = (1.0 - confidence) / 2
    low, high = (float(v) for v in np.quantile(boot_ratio, [tail, 1 - tail]))

    test = mann_whitney_u(a, b)
    p_value = test["p_value"]
    significant = p_value < alpha
    if significant and low > 1 + noise:
        verdict = "slower"
    elif significant and high < 1 - noise:
        verdict = "faster"
    else:
        verdict = "no difference"
    if len(groups_a) > 1 or len(groups_b) > 1:
        interval_method = ("bootstrap percentile interval resampling whole blocks of consecutive iterations "
                           f"({len(groups_a)} for A, {len(groups_b)} for B)")
    else:
        interval_method = "bootstrap percentile interval resampling single iterations"
    return {
        "ratio": ratio, "ci95": [low, high], "confidence": confidence, "interval_method": interval_method,
        "blocks": [len(groups_a), len(groups_b)], "p_value": p_value,
        "u_statistic": test["u"], "p_method": test["method"], "verdict": verdict,
        "n_a": int(a.size), "n_b": int(b.size), "median_a": median_a, "median_b": median_b,
        "noise": noise, "alpha": alpha,
        "explanation": _explain(verdict, ratio, low, high, confidence, p_value, alpha, noise),
    }


def mann_whitney_u(a: Any, b: Any, method: str = "auto") -> dict[str, Any]:
    """Two-sided Mann-Whitney U test of A against B.

    Returns u (U of A: pairs with a > b, plus half the ties), p_value, method, z (None when exact).
    `method`: "exact" (the null distribution of U, counted exactly; needs no ties), "asymptotic" (normal
    approximation with tie correction and a 0.5 continuity correction, as scipy's default), or "auto": exact
    when both samples have at most 50 values and there are no ties, else asymptotic. Ranks come from one
    argsort of the pooled sample (ties get their average rank), so 1e5 + 1e5 values take milliseconds.
    """
    x = _samples("a", a)
    y = _samples("b", b)
    n1, n2 = x.size, y.size
    pooled = np.concatenate([x, y])
    order = np.argsort(pooled, kind="stable")
    values = pooled[order]
    starts = np.flatnonzero(np.concatenate([[True], values[1:] != values[:-1]]))
    sizes = np.diff(np.append(starts, values.size))
    average_rank = starts + (sizes + 1) / 2.0  # 1-based average rank of each group of equal values
    ranks = np.empty(values.size, dtype=np.float64)
    ranks[order] = np.repeat(average_rank, sizes)
    u1 = float(ranks[:n1].sum() - n1 * (n1 + 1) / 2.0)
    ties = bool((sizes > 1).any())

    if method == "auto":
        method = "exact" if not ties and max(n1, n2) <= EXACT_MAX_SIZE else "asymptotic"
    if method == "exact":
        if ties:
            raise ValueError("the exact U distribution assumes no ties; use method='asymptotic'")
        return {"u": u1, "p_value": _exact_p(int(round(u1)), n1, n2), "method": "exact", "z": None}
    if method != "asymptotic":
        raise ValueError(f"method must be 'auto', 'exact' or 'asymptotic', got {method!r}")
    n = n1 + n2
    mean = n1 * n2 / 2.0
    tie_term = float(np.sum(sizes.astype(np.float64) ** 3 - sizes)) / (n * (n - 1)) if n > 1 else 0.0
    variance = n1 * n2 / 12.0 * ((n + 1) - tie_term)
    if variance <= 0:  # every value equal: no evidence of any difference
        return {"u": u1, "p_value": 1.0, "method": "normal approximation (tie-corrected)", "z": 0.0}
    z = max(0.0, abs(u1 - mean) - 0.5) / math.sqrt(variance)
    p_value = min(1.0, math.erfc(z / math.sqrt(2.0)))
    return {"u": u1, "p_value": p_value, "z": z,
            "method": "normal approximation (tie-corrected, continuity 0.5)"}


def run_to_run_noise(runs_ms: Any, confidence: float = 0.99) -> dict[str, Any]:
    """The noise band for `compare`, from k ≥ 3 repeated runs of one configuration (their samples or medians).

    With s the standard deviation of the runs' log medians (k − 1 degrees of freedom), two further runs of the
    configuration differ in log median by at most t_{k−1, (1+c)/2} · √2 · s with probability `confidence` (a
    prediction interval: the difference of two new runs has variance 2σ²). Returns noise (that bound as a
    fraction: exp(bound) − 1), runs (k), median_ms (of the run medians), sd_log (s), t, confidence,
    explanation.
    """
    medians = []
    for run in runs_ms:
        values = np.asarray(run, dtype=np.float64).ravel()
        if values.size == 0 or not np.isfinite(values).all():
            raise ValueError("every run needs finite samples")
        medians.append(float(np.median(values)))
    if len(medians) < 3:
        raise ValueError(f"run-to-run noise needs at least 3 runs of the configuration, got {len(medians)}")
    if min(medians) <= 0:
        raise ValueError("run medians must be positive")
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must lie strictly between 0 and 1, got {confidence!r}")
    logs = np.log(medians)
    sd = float(logs.std(ddof=1))
    t = student_t_quantile((1 + confidence) / 2, len(medians) - 1)
    noise = math.expm1(t * math.sqrt(2.0) * sd)
    explanation = (f"{len(medians)} runs of one configuration: medians vary by {sd:.1%} (sd of log), so two "
                   f"further runs differ by up to {noise:.1%} with {confidence:.0%} confidence")
    return {"noise": noise, "runs": len(medians), "median_ms": float(np.median(medians)), "sd_log": sd,
            "t": t, "confidence": confidence, "explanation": explanation}


# ---- Private API
MIN_BLOCK = 5  # values per block when a run is cut into blocks


def _groups(name: str, values: Any, blocks: int | None) -> list[np.ndarray]:
    """One side as a list of 1-D arrays (time order kept): the given arrays, or one run cut into blocks."""
    if isinstance(values, (list, tuple)) and values and all(np.ndim(v) >= 1 for v in values):
        groups = [np.asarray(v, dtype=np.float64).ravel() for v in values]
        groups = [g for g in groups if g.size]
        if not groups:
            raise ValueError(f"run {name} has no samples")
        for g in groups:
            if not np.isfinite(g).all():
                raise ValueError(f"run {name} has samples that are not finite numbers")
        return groups
    x = np.asarray(values, dtype=np.float64).ravel()
    if x.size == 0:
        raise ValueError(f"run {name} has no samples")
    if not np.isfinite(x).all():
        raise ValueError(f"run {name} has samples that are not finite numbers")
    count = min(int(blocks or 1), x.size // MIN_BLOCK)
    return np.array_split(x, count) if count >= 2 else [x]


def _bootstrap_medians(pooled: np.ndarray, groups: list[np.ndarray], n_boot: int,
                       rng: np.random.Generator) -> np.ndarray:
    """Medians of n_boot bootstrap resamples: of single values for one group, of whole groups for several."""
    if len(groups) == 1:
        return bootstrap_percentiles(pooled, 50, n_boot=n_boot, rng=rng, presorted=True)
    k = len(groups)
    weights = rng.multinomial(k, np.full(k, 1.0 / k), size=n_boot)
    return _weighted_group_medians([np.sort(g) for g in groups], weights)


def _weighted_group_medians(sorted_groups: list[np.ndarray], weights: np.ndarray) -> np.ndarray:
    """np.median of each resample that takes group g weights[r, g] times, without building the resamples.

    The value of 0-based rank m in resample r is the smallest pooled value v with Σ_g weights[r, g]·#(group g
    ≤ v) > m; a bisection over the pooled sorted values finds it for all resamples at once, O(groups ·
    resamples · log n) — 1e5 values cost no more than 1e3.
    """
    pooled = np.sort(np.concatenate(sorted_groups))
    sizes = np.array([g.size for g in sorted_groups], dtype=np.int64)
    totals = weights @ sizes

    def value_at(rank: np.ndarray) -> np.ndarray:
        low = np.zeros(rank.size, dtype=np.int64)
        high = np.full(rank.size, pooled.size - 1, dtype=np.int64)
        while (low < high).any():
            mid = (low + high) // 2
            values = pooled[mid]
            at_or_below = np.zeros(rank.size, dtype=np.int64)
            for g, group in enumerate(sorted_groups):
                at_or_below += weights[:, g] * np.searchsorted(group, values, side="right")
            enough = at_or_below > rank
            high = np.where(enough, mid, high)
            low = np.where(enough, low, mid + 1)
        return pooled[low]

    return (value_at((totals - 1) // 2) + value_at(totals // 2)) / 2.0


def _samples(name: str, values: Any) -> np.ndarray:
    x = np.asarray(values, dtype=np.float64).ravel()
    if x.size == 0:
        raise ValueError(f"run {name} has no samples")
    if not np.isfinite(x).all():
        raise ValueError(f"run {name} has samples that are not finite numbers")
    return np.sort(x)


def _exact_p(u: int, n1: int, n2: int) -> float:
    """Two-sided exact p: 2 · P[U ≥ max(u, n1·n2 − u)] under H0 (the U distribution is symmetric).

    The counts of U = 0 … n1·n2 over all C(n1 + n2, n1) orderings are the coefficients of the Gaussian
    binomial coefficient [n1 + n2, n1]_q = Π_{i=1..m} (1 − q^(k+i)) / (1 − q^i), m = min, k = max; computed
    with Python integers, so exactly.
    """
    m, k = min(n1, n2), max(n1, n2)
    coefficients = [1] + [0] * (m * k)
    degree = 0
    for i in range(1, m + 1):
        shift = k + i
        degree_after = degree + k
        # multiply by (1 − q^shift)
        for d in range(degree + shift, shift - 1, -1):
            if d <= m * k:
                coefficients[d] -= coefficients[d - shift]
        # divide by (1 − q^i): c_new[d] = c[d] + c_new[d − i]; exact, so terms above degree_after end at 0
        for d in range(i, min(degree + shift, m * k) + 1):
            coefficients[d] += coefficients[d - i]
        degree = degree_after
    total = math.comb(n1 + n2, n1)
    upper = max(u, n1 * n2 - u)
    tail = sum(coefficients[upper:])
    return min(1.0, 2.0 * tail / total)


def _explain(verdict: str, ratio: float, low: float, high: float, confidence: float, p_value: float,
             alpha: float, noise: float) -> str:
    interval = f"{confidence:.0%} interval {low:.3f}–{high:.3f}"
    p_text = "Mann-Whitney p < 1e-300" if p_value == 0 else f"Mann-Whitney p = {p_value:.2g}"
    band = f"the noise band 1 ± {noise:.0%}"
    if verdict == "slower":
        return (f"B is slower: its median is {ratio:.3f}× A's ({ratio - 1:+.1%}; {interval}, wholly above "
                f"{band}) and {p_text} < {alpha:g}.")
    if verdict == "faster":
        return (f"B is faster: its median is {ratio:.3f}× A's ({ratio - 1:+.1%}; {interval}, wholly below "
                f"{band}) and {p_text} < {alpha:g}.")
    reasons = []
    if not (low > 1 + noise or high < 1 - noise):
        reasons.append(f"the ratio's {interval} overlaps {band}")
    if p_value >= alpha:
        reasons.append(f"{p_text} is not below {alpha:g}")
    return (f"No difference shown: B's median is {ratio:.3f}× A's ({ratio - 1:+.1%}), but "
            + " and ".join(reasons) + ".")
