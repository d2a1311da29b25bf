"""Compare two configurations in interleaved rounds (A B B A A B …) until the comparison can answer, or a cap.

Why: one pair of runs measured one after the other carries whatever the machine did between them; on a
2-core VM whose runs spread 20%, no statistic on that pair can tell a 5% slow-down. Alternating short rounds
puts the machine's changes on both sides alike: round k of A and round k of B run back to back, under the same
state of the machine, so their ratio is free of it even when the state swings 50% from one pair to the next.
So the rounds are judged pair by pair (`compare_paired`): the log ratio of each pair's round medians, a
Student t interval of their mean, and a Wilcoxon signed-rank test on the same log ratios (the paired form of
the Mann-Whitney U that `compare` uses on blocks: every figure from the same pairs). An unpaired comparison of
the pooled rounds would let the pair-to-pair swings back into the interval: measured on this 2-core VM, 20
rounds a side left it 0.65–1.64 wide.

Rounds are added until `compare.answer(result, question)` is no longer "undecided", or `max_rounds` a side
have run; at the cap the result says "undecided" and why, never a guess. Order: pair k runs A then B for even
k, B then A for odd k, so neither side always goes first (a warm cache or a cooling CPU favours neither).
Judged first after `min_rounds` pairs (8: the fewest for which the signed-rank test can reach p < 0.01), then
after every further A B B A group (two pairs, so both orders weigh alike) and at the cap. Looking more than once
is a sequential test: the chance of a false "slower" over all looks is somewhat above `alpha` (each look needs
the interval outside the noise band too, which keeps it small: 1–2% with alpha 0.01, a ±2–5% band and up to 20
pairs, in simulation); the result records how many looks were taken.

Qt-free and engine-free: the caller supplies `run_round(side, index) -> latencies in ms` (the CLI re-runs
stored specs through RunSession; the benchmark runs in-process).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from console.analysis.compare import answer, judgement
from console.analysis.stats import student_t_quantile

MIN_ROUNDS = 8  # pairs: fewer cannot give a two-sided signed-rank p below 0.01 (2 / 2^8 = 0.0078)
MAX_ROUNDS = 16
EXACT_MAX_PAIRS = 50

RoundRunner = Callable[[str, int], Any]
Progress = Callable[[dict[str, Any]], None]
Question = Callable[[dict[str, Any]], str]  # a result → "yes" | "no" | "undecided" (the caller's own question)


def interleaved(run_round: RoundRunner, question: str | Question | None = None, min_rounds: int = MIN_ROUNDS,
                max_rounds: int = MAX_ROUNDS, noise: float = 0.02, alpha: float = 0.01,
                on_progress: Progress | None = None) -> dict[str, Any]:
    """Run rounds of A and B alternately, judge the pooled rounds, stop once `question` is answered.

    question: None (stop on any verdict but "undecided"), or "slower" | "faster" | "different" (what
    `compare --fail-on` asks: stop once the answer is yes or no), or a callable that answers from the result
    ("yes" | "no" | "undecided": a confirmation asks whether the interval lies inside a predicted range, or
    wholly outside it; the decision sentence is then the caller's to write). on_progress gets {"side", "round", "n"}
    after each round and {"look", "rounds", "result", "answer"} after each judgement.

    Returns compare_paired()'s result over the rounds, plus rounds (a side), max_rounds, looks, order (the
    sides in the order they ran), answer ("yes" | "no" | "undecided"), stopped ("answered" | "cap") and
    decision (one sentence: the answer, or "undecided after N rounds a side (the cap): …")."""
    if int(min_rounds) != min_rounds or min_rounds < 2:
        raise ValueError(f"min_rounds must be a whole number ≥ 2, got {min_rounds!r}")
    if int(max_rounds) != max_rounds or max_rounds < min_rounds:
        raise ValueError(f"max_rounds must be a whole number ≥ min_rounds ({min_rounds}), got {max_rounds!r}")
    rounds: dict[str, list[np.ndarray]] = {"A": [], "B": []}
    order: list[str] = []
    looks = 0
    result: dict[str, Any] | None = None
    said = "undecided"
    for k in range(int(max_rounds)):
        for side in ("AB" if k % 2 == 0 else "BA"):
            values = np.asarray(run_round(side, k), dtype=np.float64).ravel()
            if values.size < 1:
                raise ValueError(f"round {k + 1} of {side} measured no iterations")
            rounds[side].append(values)
            order.append(side)
            if on_progress is not None:
                on_progress({"side": side, "round": k, "n": int(values.size)})
        if k + 1 < min_rounds or ((k + 1 - min_rounds) % 2 and k + 1 < max_rounds):
            continue  # judged after min_rounds pairs, then after each A B B A group (both orders alike), and at the cap
        result = compare_paired(rounds["A"], rounds["B"], noise=noise, alpha=alpha)
        looks += 1
        said = question(result) if callable(question) else answer(result, question)
        if on_progress is not None:
            on_progress({"look": looks, "rounds": k + 1, "result": result, "answer": said})
        if said != "undecided":
            break
    assert result is not None
    done = len(rounds["A"])
    stopped = "answered" if said != "undecided" else "cap"
    asked = None if callable(question) else question
    return {**result, "rounds": done, "max_rounds": int(max_rounds), "looks": looks, "order": "".join(order),
            "answer": said, "stopped": stopped, "question": asked,
            "decision": decision_text(result, asked, said, done, int(max_rounds))}


def decision_text(result: dict[str, Any], question: str | None, said: str, rounds: int, cap: int) -> str:
    """One sentence: what the pooled rounds answer, in the verdict's own words and figures."""
    where = f"after {rounds} interleaved round{'s' if rounds != 1 else ''} a side"
    if said == "undecided":
        return f"undecided {where} (the cap is {cap}): {result['resolved']}; {result['mde_text']}"
    asked = {"slower": "B slower", "faster": "B faster", "different": "B different from A"}.get(question or "")
    if question is None or said == "yes":
        return f"{result['headline']} {where}" + (f" — {asked}: yes" if asked else "")
    within = f"±{result['noise']:.0%}" if question == "different" else f"{result['noise']:.0%}"
    return (f"{asked}: no, not beyond {within}, {where} ({result['resolved']})")


def compare_paired(rounds_a: list[Any], rounds_b: list[Any], noise: float = 0.02, alpha: float = 0.01,
                   confidence: float = 0.95) -> dict[str, Any]:
    """B against A over interleaved rounds, pair by pair (round k of A ran next to round k of B).

    d_k = log(median of B's round k / median of A's round k). ratio = exp(mean d) (the geometric mean of the
    pairs' ratios); ci95 = exp(mean d ± t_{n−1} · sd/√n); p: two-sided Wilcoxon signed-rank on the d_k (exact
    up to 50 pairs without ties). Returns console.analysis.compare.judgement's keys plus interval_method,
    blocks [n, n], pairs, pair_ratios, n_a, n_b, median_a, median_b (of the pooled rounds)."""
    if len(rounds_a) != len(rounds_b) or len(rounds_a) < 2:
        raise ValueError(f"a paired comparison needs as many rounds of A as of B, at least 2 (got "
                         f"{len(rounds_a)} and {len(rounds_b)})")
    sides = [[np.asarray(r, dtype=np.float64).ravel() for r in rounds] for rounds in (rounds_a, rounds_b)]
    for name, rounds in zip("AB", sides, strict=True):
        if any(r.size == 0 or not np.isfinite(r).all() for r in rounds):
            raise ValueError(f"every round of {name} needs finite latencies")
    medians_a = np.array([np.median(r) for r in sides[0]])
    medians_b = np.array([np.median(r) for r in sides[1]])
    if (medians_a <= 0).any() or (medians_b <= 0).any():
        raise ValueError("a ratio of medians needs positive latencies (a round's median is zero or negative)")
    d = np.log(medians_b) - np.log(medians_a)
    n = d.size
    mean, sd = float(d.mean()), float(d.std(ddof=1))
    half = student_t_quantile((1 + confidence) / 2, n - 1) * sd / math.sqrt(n)
    test = signed_rank(d)
    test.update(label="paired test p", method=f"Wilcoxon signed-rank on the {n} pairs' log ratios ({test['how']})")
    pooled_a, pooled_b = np.concatenate(sides[0]), np.concatenate(sides[1])
    return {**judgement(math.exp(mean), math.exp(mean - half), math.exp(mean + half), test, noise, alpha,
                        confidence),
            "interval_method": f"Student t interval of the mean log ratio over {n} interleaved pairs of rounds",
            "blocks": [n, n], "pairs": n, "pair_ratios": [float(x) for x in np.exp(d)],
            "n_a": int(pooled_a.size), "n_b": int(pooled_b.size),
            "median_a": float(np.median(pooled_a)), "median_b": float(np.median(pooled_b))}


def signed_rank(d: Any) -> dict[str, Any]:
    """Two-sided Wilcoxon signed-rank test that the differences `d` are centred on 0.

    Zeros are dropped (Wilcoxon's rule); |d| ranked with ties averaged; W = the sum of the positive ranks.
    Exact up to 50 differences (the distribution of W over all 2^n sign patterns of these ranks, counted; ties
    included, as doubled integer ranks), else the normal approximation with tie correction and continuity 0.5. Returns w, p_value, p_floor (the least
    p that len(d) differences can give), how ("exact" | "normal approximation")."""
    values = np.asarray(d, dtype=np.float64).ravel()
    total = values.size
    floor = _signed_rank_p(total * (total + 1), list(range(2, 2 * total + 1, 2))) if 0 < total <= EXACT_MAX_PAIRS else \
        (math.erfc((total * (total + 1) / 4 - 0.5) / math.sqrt(total * (total + 1) * (2 * total + 1) / 24)
                   / math.sqrt(2)) if total else 1.0)
    values = values[values != 0]
    n = values.size
    if n == 0:
        return {"w": 0.0, "p_value": 1.0, "p_floor": floor, "how": "every pair equal"}
    magnitudes = np.abs(values)
    order = np.argsort(magnitudes, kind="stable")
    sorted_values = magnitudes[order]
    starts = np.flatnonzero(np.concatenate([[True], sorted_values[1:] != sorted_values[:-1]]))
    sizes = np.diff(np.append(starts, n))
    ranks = np.empty(n)
    ranks[order] = np.repeat(starts + (sizes + 1) / 2.0, sizes)
    w = float(ranks[values > 0].sum())
    if n <= EXACT_MAX_PAIRS:
        doubled = [int(round(2 * r)) for r in ranks]
        return {"w": w, "p_value": _signed_rank_p(int(round(2 * w)), doubled), "p_floor": floor, "how": "exact"}
    mean = n * (n + 1) / 4
    variance = n * (n + 1) * (2 * n + 1) / 24 - float(np.sum(sizes.astype(float) ** 3 - sizes)) / 48
    z = max(0.0, abs(w - mean) - 0.5) / math.sqrt(variance) if variance > 0 else 0.0
    return {"w": w, "p_value": min(1.0, math.erfc(z / math.sqrt(2))), "p_floor": floor,
            "how": "normal approximation"}


def _signed_rank_p(w: int, ranks: list[int]) -> float:
    """Exact two-sided p of W = w for these integer ranks: 2 · min(P[W ≤ w], P[W ≥ w]) over all sign patterns
    (each rank counted positive or not with probability ½ under no difference)."""
    top = sum(ranks)
    counts = [1] + [0] * top
    for rank in ranks:
        for s in range(top, rank - 1, -1):
            counts[s] += counts[s - rank]
    below, above = sum(counts[:w + 1]), sum(counts[w:])
    return min(1.0, 2 * min(below, above) / 2 ** len(ranks))
