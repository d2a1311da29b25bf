"""MLPerf Training's score over several time-to-train runs: drop the fastest and the slowest run, average the rest.

Why this rule: a single run's time-to-train swings with its seed (initial weights, sample order), so MLPerf asks for
several runs with different seeds and scores their trimmed mean; dropping both ends keeps one lucky or unlucky seed
from deciding it. A run that did not reach the target counts as infinitely slow: it can only be the dropped
slowest run, and with two such runs there is no score (one would remain among the averaged). Fewer than 3 runs
leave nothing after dropping two, so there is no score either, and the answer says how many runs to give.
The energy score averages the same runs' energy-to-train (MLPerf Power scores energy over the same runs); when any
of them has no energy counter reading it is None, with the reason. Pure Python, Qt- and torch-free.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

MIN_RUNS = 3
RULE = ("MLPerf Training: each run timed from its first step to the evaluation that reaches the target; the fastest "
        "and the slowest run dropped, the score the mean of the rest; a run that did not reach the target counts as "
        "infinitely slow (it may only be the dropped slowest); every run has its own seed")

__all__ = ["score", "MIN_RUNS", "RULE"]


# ---- Public API
def score(results: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """{"runs", "used" [indices], "dropped" {"fastest", "slowest"} (indices), "score_s", "energy_score_j",
    "energy_why", "rule", "why", "fix"} for time-to-train results (reached, time_to_train_s, energy_j); score_s None
    with `why` and `fix` when the rule gives none."""
    times = [_time_of(result) for result in results]
    out: dict[str, Any] = {"runs": len(results), "used": [], "dropped": {"fastest": None, "slowest": None},
                           "score_s": None, "energy_score_j": None, "energy_why": None, "rule": RULE,
                           "why": None, "fix": None, "reached": sum(1 for t in times if math.isfinite(t))}
    if len(results) < MIN_RUNS:
        out["why"] = (f"{len(results)} run{'s' if len(results) != 1 else ''}: the score drops the fastest and the "
                      f"slowest, so it needs at least {MIN_RUNS}")
        out["fix"] = f"give --runs {max(MIN_RUNS, 5)} (MLPerf uses 5 or more for most benchmarks)"
        return out
    order = sorted(range(len(times)), key=lambda i: (times[i], i))
    fastest, slowest = order[0], order[-1]
    used = sorted(order[1:-1])
    out["dropped"] = {"fastest": fastest, "slowest": slowest}
    out["used"] = used
    missed = [i for i, t in enumerate(times) if not math.isfinite(t)]
    if len(missed) > 1:
        out["why"] = (f"{len(missed)} runs (#{', #'.join(str(i + 1) for i in missed)}) did not reach the target: one "
                      "may be dropped as the slowest, the others would be averaged as infinitely slow")
        out["fix"] = ("raise --max-steps, or lower --target; a target a run often misses is too close to what the "
                      "task can reach in that many steps")
        return out
    out["score_s"] = sum(times[i] for i in used) / len(used)
    energies = [results[i].get("energy_j") for i in used]
    if all(isinstance(e, (int, float)) and math.isfinite(e) for e in energies):
        out["energy_score_j"] = sum(energies) / len(energies)
    else:
        reasons = [str(results[i].get("energy_method") or "no energy reading") for i, e in zip(used, energies,
                                                                                              strict=True)
                   if not isinstance(e, (int, float))]
        why = reasons[0] if reasons else "an energy is not finite"
        out["energy_why"] = why if why.startswith("not available") else f"not available: {why}"
    return out


# ---- Private API
def _time_of(result: Mapping[str, Any]) -> float:
    """A run's time-to-train, infinity when it did not reach the target (or says no time)."""
    value = result.get("time_to_train_s")
    if result.get("reached") is not True or isinstance(value, bool) or not isinstance(value, (int, float)) \
            or not math.isfinite(value):
        return math.inf
    return float(value)
