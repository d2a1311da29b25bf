"""Step changes in a series of per-run figures: where a configuration got slower (or faster) and stayed so.

Method (binary segmentation with a permutation test, as asv-style detectors do, but with a stated error rate):
1. Within a segment of at least 2 × `min_size` runs, every split point is scored by the Mann-Whitney U statistic
   of the runs before against the runs after (ranks: robust to one wild run), standardised to z.
2. The segment's best |z| is compared with the best |z| of `permutations` random reorderings of the same values;
   the p-value is the share that score as high (the search over split points is inside the test, so looking at
   every split does not inflate false alarms). The step is placed where the total absolute deviation from each
   side's median is least (robust least cost: it places a step more precisely than the rank statistic).
3. A split is a change point when p < `alpha` AND the ratio of the segments' medians is at least `min_effect`
   away from 1 (default 5%): significance alone would flag 1% shifts in long quiet series, which no one acts on.
4. The halves are searched again, so a series may hold several steps; each step is then placed again between
   its neighbours (a segment holding two steps can be split first between them) and described on the
   segments it separates.
The ratio's 95% interval is a bootstrap of the two segments' medians. Deterministic (seeded). Numpy only.
"""

from __future__ import annotations

from typing import Any

import numpy as np

MIN_EFFECT = 0.05
ALPHA = 0.01
MIN_SIZE = 3
PERMUTATIONS = 1999
BOOTSTRAP = 2000


def detect(values: Any, min_effect: float = MIN_EFFECT, alpha: float = ALPHA, min_size: int = MIN_SIZE,
           permutations: int = PERMUTATIONS, seed: int = 0) -> list[dict[str, Any]]:
    """Change points of `values` (one figure per run, oldest first, e.g. median latency in ms), in order.

    Each: {index (first value after the step), before, after (segment medians), ratio (after / before), ci95,
    p_value, z, direction ("up" | "down")}.
    """
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must lie strictly between 0 and 1, got {alpha!r}")
    if not 0 <= min_effect < 1:
        raise ValueError(f"min_effect must be a fraction from 0 to 1 (0.05 = 5%), got {min_effect!r}")
    if min_size < 2:
        raise ValueError(f"min_size must be at least 2, got {min_size!r}")
    data = np.asarray(values, dtype=np.float64)
    if data.ndim != 1 or not np.all(np.isfinite(data)) or np.any(data <= 0):
        raise ValueError("values must be one positive, finite figure per run")
    rng = np.random.default_rng(seed)
    found: list[dict[str, Any]] = []
    _search(data, 0, data.size, min_effect, alpha, min_size, permutations, rng, found)
    points = _refined(data, sorted(point["index"] for point in found), min_size, permutations, rng)
    return [p for p in points if p["p_value"] < alpha and abs(p["ratio"] - 1) >= min_effect]


# ---- Private helpers
def _refined(data: np.ndarray, indexes: list[int], min_size: int, permutations: int,
             rng: np.random.Generator) -> list[dict[str, Any]]:
    """Each step placed again between its neighbours (binary segmentation places the first split of a segment
    holding two steps between them), then described on the segments it separates."""
    for _ in range(3):
        moved = False
        for i, index in enumerate(indexes):
            lo = indexes[i - 1] if i else 0
            hi = indexes[i + 1] if i + 1 < len(indexes) else data.size
            split = _locate(data[lo:hi], min(min_size, (hi - lo) // 2))
            if lo + split != index:
                indexes[i], moved = lo + split, True
        if not moved:
            break
    points = []
    for i, index in enumerate(indexes):
        lo = indexes[i - 1] if i else 0
        hi = indexes[i + 1] if i + 1 < len(indexes) else data.size
        points.append(_describe(data[lo:hi], index - lo, lo, min_size, permutations, rng))
    return points


def _describe(segment: np.ndarray, split: int, offset: int, min_size: int, permutations: int,
              rng: np.random.Generator) -> dict[str, Any]:
    before, after = segment[:split], segment[split:]
    ratio = float(np.median(after) / np.median(before))
    z, p_value = _significance(segment, split, min_size, permutations, rng)
    return {"index": offset + split, "before": float(np.median(before)), "after": float(np.median(after)),
            "ratio": ratio, "ci95": _ratio_interval(before, after, rng), "p_value": p_value, "z": z,
            "direction": "up" if ratio > 1 else "down"}


def _significance(segment: np.ndarray, split: int, min_size: int, permutations: int,
                  rng: np.random.Generator) -> tuple[float, float]:
    """|z| of Mann-Whitney U at the split, and the permutation p-value of the segment's largest |z| over every
    split (the search is inside the test: looking at every split does not inflate false alarms)."""
    ranks = _ranks(segment)
    size = min(min_size, segment.size // 2)
    k, n = split, segment.size
    z = abs(ranks[:k].sum() - k * (k + 1) / 2 - k * (n - k) / 2) / np.sqrt(k * (n - k) * (n + 1) / 12)
    best = float(_best_split(ranks[None, :], size)[1][0])
    shuffled = np.array([rng.permutation(n) for _ in range(permutations)])
    _, null_z = _best_split(ranks[shuffled], size)
    return float(z), (1 + int(np.sum(null_z >= best - 1e-12))) / (permutations + 1)


def _search(data: np.ndarray, lo: int, hi: int, min_effect: float, alpha: float, min_size: int,
            permutations: int, rng: np.random.Generator, found: list[dict[str, Any]]) -> None:
    segment = data[lo:hi]
    if segment.size < 2 * min_size:
        return
    split = _locate(segment, min_size)
    _, p_value = _significance(segment, split, min_size, permutations, rng)
    ratio = float(np.median(segment[split:]) / np.median(segment[:split]))
    if p_value < alpha and abs(ratio - 1) >= min_effect:
        found.append({"index": lo + split})
        _search(data, lo, lo + split, min_effect, alpha, min_size, permutations, rng, found)
        _search(data, lo + split, hi, min_effect, alpha, min_size, permutations, rng, found)


def _locate(segment: np.ndarray, min_size: int) -> int:
    """Where the step is: the split with the least total absolute deviation from each side's median (the robust
    least-cost location; the rank statistic tests for a step well but places it less precisely)."""
    logs = np.log(segment)
    splits = range(min_size, segment.size - min_size + 1)
    costs = [np.abs(logs[:k] - np.median(logs[:k])).sum() + np.abs(logs[k:] - np.median(logs[k:])).sum()
             for k in splits]
    return int(splits[int(np.argmin(costs))])


def _ranks(values: np.ndarray) -> np.ndarray:
    """Mid-ranks (ties share their average rank)."""
    order = np.argsort(values, kind="stable")
    ranks = np.empty(values.size, dtype=np.float64)
    ranks[order] = np.arange(1, values.size + 1)
    for value in np.unique(values[np.diff(np.sort(values), prepend=np.nan) == 0]):
        tied = values == value
        ranks[tied] = ranks[tied].mean()
    return ranks


def _best_split(ranks: np.ndarray, min_size: int) -> tuple[np.ndarray, np.ndarray]:
    """For each row of ranks: the split k (first index after) maximising |z| of Mann-Whitney U, and that |z|."""
    n = ranks.shape[1]
    k = np.arange(min_size, n - min_size + 1)
    left_sums = np.cumsum(ranks, axis=1)[:, k - 1]
    u = left_sums - k * (k + 1) / 2
    z = np.abs(u - k * (n - k) / 2) / np.sqrt(k * (n - k) * (n + 1) / 12)
    best = np.argmax(z, axis=1)
    return k[best], z[np.arange(ranks.shape[0]), best]


def _ratio_interval(before: np.ndarray, after: np.ndarray, rng: np.random.Generator) -> list[float]:
    b = np.median(rng.choice(before, (BOOTSTRAP, before.size)), axis=1)
    a = np.median(rng.choice(after, (BOOTSTRAP, after.size)), axis=1)
    low, high = np.quantile(a / b, [0.025, 0.975])
    return [float(low), float(high)]
