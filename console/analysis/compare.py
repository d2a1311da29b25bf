"""Is run B faster or slower than run A, or equally fast, or can these runs not tell? With the smallest
difference they could have resolved.

Every figure is computed over the same units: blocks of consecutive iterations (or the rounds a side is given
as). Consecutive iterations share the machine's state (a neighbour busy, a frequency step), so they are not
independent; the interval resamples whole blocks, and the p-value is a Mann-Whitney U test on the blocks'
medians, so both widen together when a run jitters, and a p-value never claims a certainty the interval does not.
(A U test over single iterations finds p = 1e-8 between two runs whose interval spans 0.70-1.11; that
disagreement is what this module no longer prints.) When a side is too small to cut into blocks, both resample
single iterations and say so.

Four verdicts, said of B (DESIGN.md §5: a difference needs the ratio beyond noise AND the U test):
- "slower" / "faster": the ratio's interval lies wholly outside the noise band 1 ± `noise`, and the block test
  gives p < `alpha`;
- "equivalent": the whole interval lies inside the band (equally fast within ±noise; a p-value says nothing
  about equivalence, the interval does);
- "undecided": anything else. The explanation says what was resolved ("B is between 32% faster and 1% slower")
  and why no verdict, never "equally fast": "could not tell apart" when the interval holds no difference, "not
  shown beyond the noise" when it reaches into the band, "not shown slower" when only the test held it back.

The minimum detectable effect (`mde`) is the smallest slow-down this pair would call "slower" with 80%
probability at the spread its interval shows: the band plus (z_conf + z_power) standard errors of the log
ratio. When the blocks are too few for the U test ever to reach p < alpha, nothing is detectable and `mde` is
None with the reason. Qt-free, numpy only; 1e5 samples per side take well under a second.

What the numbers cover: neither the interval nor the test can see how much a second run of the same
configuration would differ: on a busy machine two back-to-back runs differ by a few percent, and that
difference is real in the data. Interleaving the two configurations in rounds (a side given as its list of
rounds; console.analysis.interleave) keeps the machine's changes out of the ratio; `run_to_run_noise` measures
the band from repeated runs of one configuration.
"""

from __future__ import annotations

import math
from statistics import NormalDist
from typing import Any

import numpy as np

from console.analysis.stats import bootstrap_percentiles, student_t_quantile

EXACT_MAX_SIZE = 50  # "auto": exact U distribution when both samples are this small and there are no ties
VERDICTS = ("slower", "faster", "equivalent", "undecided")
POWER = 0.8  # the minimum detectable effect is detected this often
QUESTIONS = ("slower", "faster", "different")  # what `answer` can be asked (compare --fail-on)


# ---- Public API
def compare(a_ms: Any, b_ms: Any, noise: float = 0.02, alpha: float = 0.01, confidence: float = 0.95,
            seed: int = 0, n_boot: int = 2000, blocks: int | None = 10) -> dict[str, Any]:
    """Compare latencies of B against A (same unit, e.g. ms).

    a_ms, b_ms: each run's latencies in the order they were measured, or a list of arrays (the rounds or runs
    that make up one side, e.g. interleaved rounds); the ratio uses all values of a side.

    A side given as one array is cut into `blocks` consecutive blocks (at least 5 values each; blocks=None or
    1 keeps single iterations); a side given as a list of arrays keeps those arrays as its blocks. When both
    sides have two blocks or more, the interval resamples blocks and the test ranks block medians; otherwise
    both work on single iterations (and `p_method` says that this assumes them independent).

    Returns: ratio (median B / median A: > 1 means B takes longer), ci95 [low, high] (bootstrap percentile
    interval of the ratio at `confidence`), confidence, interval_method, blocks [a, b], p_value (two-sided
    Mann-Whitney U over the same units the interval resamples), p_label (how to name it beside a figure:
    "block test p"), u_statistic, p_method, p_floor (the smallest
    p these many units can give), verdict (one of VERDICTS, said of B), resolved ("B is between 32% faster
    and 1% slower"), headline (the verdict in a few words), mde (smallest detectable slow-down as a fraction,
    or None), mde_power, mde_text, n_a, n_b, median_a, median_b, noise, alpha, explanation (one sentence or
    two, with every figure it rests on).
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
    by_blocks = len(groups_a) > 1 and len(groups_b) > 1
    if not by_blocks:  # one side too small to cut: both sides work on single iterations, alike
        groups_a, groups_b = [a], [b]

    rng = np.random.default_rng(seed)
    boot_a = _bootstrap_medians(a, groups_a, n_boot, rng)
    boot_b = _bootstrap_medians(b, groups_b, n_boot, rng)
    with np.errstate(divide="ignore", invalid="ignore"):
        boot_ratio = boot_b / boot_a
    boot_ratio = boot_ratio[np.isfinite(boot_ratio) & (boot_ratio > 0)]
    tail = (1.0 - confidence) / 2
    low, high = (float(v) for v in np.quantile(boot_ratio, [tail, 1 - tail]))

    test = block_test(groups_a, groups_b) if by_blocks else _iteration_test(a, b)
    if by_blocks:
        interval_method = ("bootstrap percentile interval resampling whole blocks of consecutive iterations "
                           f"({len(groups_a)} for A, {len(groups_b)} for B)")
    else:
        interval_method = "bootstrap percentile interval resampling single iterations"
    return {**judgement(ratio, low, high, test, noise, alpha, confidence), "interval_method": interval_method,
            "blocks": [len(groups_a), len(groups_b)], "u_statistic": test["u"],
            "n_a": int(a.size), "n_b": int(b.size), "median_a": median_a, "median_b": median_b}


def judgement(ratio: float, low: float, high: float, test: dict[str, Any], noise: float, alpha: float,
              confidence: float = 0.95) -> dict[str, Any]:
    """The verdict and its words from a ratio, its interval and a test of the same units (test: p_value,
    p_floor, label, method): ratio, ci95, confidence, p_value, p_method, p_label, p_floor, verdict,
    unresolved (why undecided: unresolved_kind), resolved, headline, mde, mde_power, mde_text, noise, alpha, explanation. Shared by `compare` and the paired
    comparison of interleaved rounds (console.analysis.interleave), so both speak alike."""
    verdict = _verdict(low, high, test["p_value"], noise, alpha)
    mde = minimum_detectable_effect(low, high, noise, alpha, test["p_floor"], confidence)
    resolved = resolved_text(low, high)
    kind = unresolved_kind(verdict, low, high, noise)
    headline = _headline(verdict, ratio, resolved, noise, kind)
    return {"ratio": ratio, "ci95": [low, high], "confidence": confidence, "p_value": test["p_value"],
            "p_method": test["method"], "p_label": test["label"], "p_floor": test["p_floor"], "verdict": verdict,
            "unresolved": kind, "resolved": resolved, "headline": headline, **mde, "noise": noise, "alpha": alpha,
            "explanation": _explain(verdict, ratio, low, high, confidence, test, alpha, noise, headline, mde)}


def block_test(groups_a: list[Any], groups_b: list[Any]) -> dict[str, Any]:
    """Two-sided Mann-Whitney U on the medians of each side's blocks: the p-value of the block family.

    Blocks (or rounds) are the units the interval resamples, so they are the units the test counts: 10 blocks
    a side can give p down to 1.1e-5 (exact), 3 a side no lower than 0.1 — `p_floor` says which, so a verdict
    held back by too few blocks says that, not "no difference". Returns u, p_value, method, p_floor."""
    medians_a = [float(np.median(g)) for g in groups_a]
    medians_b = [float(np.median(g)) for g in groups_b]
    test = mann_whitney_u(medians_a, medians_b)
    return {"u": test["u"], "p_value": test["p_value"], "p_floor": p_floor(len(medians_a), len(medians_b)),
            "label": "block test p", "method": (f"Mann-Whitney U on block medians ({len(medians_a)} for A, {len(medians_b)} for B; "
                       f"{'exact' if test['method'] == 'exact' else 'normal approximation'})")}


def p_floor(n1: int, n2: int) -> float:
    """The smallest two-sided U p-value samples of these sizes can give (every value of one above the other)."""
    if n1 < 1 or n2 < 1:
        return 1.0
    return float(mann_whitney_u(np.arange(n1, dtype=float), np.arange(n1, n1 + n2, dtype=float))["p_value"])


def minimum_detectable_effect(low: float, high: float, noise: float, alpha: float, floor: float,
                              confidence: float = 0.95, power: float = POWER) -> dict[str, Any]:
    """The smallest slow-down (B/A − 1) that a pair with this interval's spread calls "slower" `power` of the
    time: log(1 + noise) + (z_conf + z_power) · se, with se the log ratio's standard error read off the interval.

    Returns mde (a fraction, or None when the blocks cannot reach p < alpha at all), mde_power, mde_text."""
    if floor >= alpha:
        return {"mde": None, "mde_power": power,
                "mde_text": (f"no difference can be resolved here: with these few blocks the test cannot reach "
                             f"p < {alpha:g} (the least it can give is {floor:.2g}); measure longer or in more rounds")}
    normal = NormalDist()
    z_conf = normal.inv_cdf((1 + confidence) / 2)
    se = max(0.0, math.log(high) - math.log(low)) / (2 * z_conf)
    mde = math.expm1(math.log1p(noise) + (z_conf + normal.inv_cdf(power)) * se)
    return {"mde": mde, "mde_power": power,
            "mde_text": f"differences under {_percent(mde)} cannot be resolved here"}


def resolved_text(low: float, high: float) -> str:
    """What the interval resolved, in words: "B is between 32% faster and 1% slower" (time per call)."""
    if low >= 1.0:
        return f"B is between {_percent(low - 1)} and {_percent(high - 1)} slower"
    if high <= 1.0:
        return f"B is between {_percent(1 - high)} and {_percent(1 - low)} faster"
    return f"B is between {_percent(1 - low)} faster and {_percent(high - 1)} slower"


def answer(result: dict[str, Any], question: str | None) -> str:
    """"yes" | "no" | "undecided": what a comparison says to the question `compare --fail-on` asks.

    question "slower": yes when the verdict is slower; no when the interval rules out a slow-down beyond the
    band (high ≤ 1 + noise), even if it cannot tell faster from equal. "faster" alike, mirrored. "different":
    yes when slower or faster, no when equivalent. None: any verdict but "undecided" is an answer ("yes")."""
    verdict, (low, high), noise = result["verdict"], result["ci95"], result["noise"]
    if question is None:
        return "undecided" if verdict == "undecided" else "yes"
    if question not in QUESTIONS:
        raise ValueError(f"question must be one of {', '.join(QUESTIONS)}, got {question!r}")
    if question == "slower":
        return "yes" if verdict == "slower" else "no" if high <= 1 + noise else "undecided"
    if question == "faster":
        return "yes" if verdict == "faster" else "no" if low >= 1 - noise else "undecided"
    return "yes" if verdict in ("slower", "faster") else "no" if verdict == "equivalent" else "undecided"


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


def _verdict(low: float, high: float, p_value: float, noise: float, alpha: float) -> str:
    significant = p_value < alpha
    if significant and low > 1 + noise:
        return "slower"
    if significant and high < 1 - noise:
        return "faster"
    if 1 - noise <= low and high <= 1 + noise:
        return "equivalent"
    return "undecided"


def _iteration_test(a: np.ndarray, b: np.ndarray) -> dict[str, Any]:
    test = mann_whitney_u(a, b)
    return {"u": test["u"], "p_value": test["p_value"], "p_floor": p_floor(a.size, b.size),
            "label": "U test p (single iterations)", "method": (f"Mann-Whitney U on single iterations ({test['method']}; too few values to cut into "
                       "blocks, so it assumes them independent)")}


def unresolved_kind(verdict: str, low: float, high: float, noise: float) -> str | None:
    """Why an undecided comparison is undecided: "overlap" (the interval holds no difference: could not tell
    apart), "noise" (it excludes no difference but reaches into the band: not shown beyond the noise), "test"
    (wholly outside the band, but the test's p is not below alpha: not shown). None when decided."""
    if verdict != "undecided":
        return None
    if low <= 1.0 <= high:
        return "overlap"
    return "test" if (low > 1 + noise or high < 1 - noise) else "noise"


def _headline(verdict: str, ratio: float, resolved: str, noise: float, kind: str | None) -> str:
    if verdict == "slower":
        return f"B is {_percent(ratio - 1)} slower"
    if verdict == "faster":
        return f"B is {_percent(1 - ratio)} faster"
    if verdict == "equivalent":
        return f"equally fast within ±{_percent(noise)}"
    if kind == "test":
        return f"not shown {'slower' if ratio > 1 else 'faster'}: {resolved}"
    if kind == "noise":
        return f"not shown beyond the ±{_percent(noise)} noise: {resolved}"
    return "could not tell apart: " + resolved


def _explain(verdict: str, ratio: float, low: float, high: float, confidence: float, test: dict[str, Any],
             alpha: float, noise: float, headline: str, mde: dict[str, Any]) -> str:
    interval = f"{confidence:.0%} interval {low:.3f}–{high:.3f}"
    p_value = test["p_value"]
    p_text = f"{test['label']} {'< 1e-300' if p_value == 0 else f'= {p_value:.2g}'}"
    band = f"the noise band 1 ± {noise:.0%}"
    if verdict in ("slower", "faster"):
        side = "above" if verdict == "slower" else "below"
        return (f"B is {verdict}: the ratio of medians is {ratio:.3f} ({ratio - 1:+.1%}; {interval}, wholly "
                f"{side} {band}) and the {p_text} < {alpha:g}.")
    if verdict == "equivalent":
        return (f"Equally fast within ±{_percent(noise)}: the whole {interval} lies inside {band} "
                f"({resolved_text(low, high)}); {mde['mde_text']}.")
    reasons = []
    if not (low > 1 + noise or high < 1 - noise):
        reasons.append(f"the {interval} reaches into {band}")
    if p_value >= alpha:
        reasons.append(f"the {p_text} is not below {alpha:g}")
    return (f"{headline[0].upper()}{headline[1:]} (ratio {ratio:.3f}); no verdict because "
            + " and ".join(reasons) + f"; {mde['mde_text']}.")


def _percent(fraction: float) -> str:
    """0.315 → "32%", 0.009 → "0.9%": whole percent from 10% up, one decimal below."""
    value = abs(fraction) * 100
    return f"{value:.0f}%" if value >= 9.95 else f"{value:.1f}%"
