"""Run one planned intervention against the original configuration in interleaved rounds, until the ratio's
interval answers the prediction or a cap is reached.

Why interleaved (A B B A …, console.analysis.interleave): the machine's state changes between rounds; paired
rounds put each change on both sides, so the ratio of a pair is free of it. The loop, the pairing and the t
interval are interleave's; only the question is this module's: does the interval of the time ratio (changed ÷
original) lie inside the tested class's predicted range ("as predicted"), wholly outside it ("not as
predicted"), or neither yet (more rounds, up to the cap: "undecided", with the interval it reached)? A runner
that watched the machine (console.run.round_load: other processes busy on the worker's CPUs during a threads ×2
experiment) can hold any answer at "undecided", with its reason, since the ratio then is not the machine's.

Judged first after MIN_ROUNDS pairs — fewer than interleave's 8, because this question needs only the t interval,
not a signed-rank p below 0.01, and the ranges a plan compares lie ≥ 10% apart — then after each A B B A group.
Qt-free and engine-free: `run_round(side, k) -> latencies in ms` is the caller's ("A" the original, "B" the
changed configuration): the CLI runs RunSession rounds, tests a model of the class.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from console.analysis.confirm.plan import Planned
from console.analysis.confirm.predictions import Prediction
from console.analysis.interleave import RoundRunner, interleaved

MIN_ROUNDS = 4  # pairs before the first look: a t interval on 3 degrees of freedom
MAX_ROUNDS = 10  # pairs at most, by default (`--confirm-max-rounds`)
AS_PREDICTED, NOT_AS_PREDICTED, UNDECIDED = "as predicted", "not as predicted", "undecided"


def question_for(prediction: Prediction) -> Callable[[dict[str, Any]], str]:
    """interleave's stopping question: "yes" when the ratio's interval lies inside the range, "no" when wholly
    outside, else "undecided"."""
    def ask(result: dict[str, Any]) -> str:
        low, high = result["ci95"]
        if prediction.holds(low, high):
            return "yes"
        if prediction.fails(low, high):
            return "no"
        return "undecided"
    return ask


def run_experiment(planned: Planned, run_round: RoundRunner, min_rounds: int = MIN_ROUNDS,
                   max_rounds: int = MAX_ROUNDS,
                   on_progress: Callable[[dict[str, Any]], None] | None = None) -> dict[str, Any]:
    """The experiment's record (plain data): the plan's fields plus ratio, ci95, rounds, max_rounds, pair_ratios,
    median_a_ms, median_b_ms, outcome (as predicted | not as predicted | undecided) and one sentence."""
    min_rounds = min(int(min_rounds), int(max_rounds))
    result = interleaved(run_round, question_for(planned.tested), min_rounds=max(2, min_rounds),
                         max_rounds=max(2, int(max_rounds)), on_progress=on_progress)
    said = result["answer"]
    outcome = AS_PREDICTED if said == "yes" else NOT_AS_PREDICTED if said == "no" else UNDECIDED
    low, high = result["ci95"]
    record = {**planned.to_dict(), "ratio": _r(result["ratio"]), "ci95": [_r(low), _r(high)],
              "rounds": result["rounds"], "max_rounds": result["max_rounds"], "looks": result["looks"],
              "pair_ratios": [_r(x) for x in result["pair_ratios"]], "median_a_ms": _r(result["median_a"]),
              "median_b_ms": _r(result["median_b"]), "outcome": outcome}
    # a runner that watched the machine while its rounds ran (console.run.round_load) may say they cannot speak for it
    interference = getattr(run_round, "interference", None)
    why = interference() if callable(interference) else None
    if callable(getattr(run_round, "load", None)):
        record["other_load"] = run_round.load()
    if why:
        record.update(outcome=UNDECIDED, interference=why, measured_outcome=outcome)
    record["sentence"] = sentence(record)
    return record


def sentence(experiment: dict[str, Any]) -> str:
    """"batch ×4: ×1.03 [0.98, 1.09] over 6 rounds a side; host-overhead predicted ≤ ×1.25 — as predicted"."""
    low, high = experiment["ci95"]
    predicted = experiment["predicted"]
    measured = f"×{experiment['ratio']:.3g} [{low:.3g}, {high:.3g}] over {experiment['rounds']} rounds a side"
    tail = "" if experiment["outcome"] != UNDECIDED else \
        f" ({experiment['interference']})" if experiment.get("interference") else \
        f" (the cap is {experiment['max_rounds']})"
    return (f"{experiment['intervention']}: {measured}; {predicted['class']} predicted "
            f"{range_text(predicted['range'])} — {experiment['outcome']}{tail}")


def range_text(bounds: list[Any]) -> str:
    """[0.8, 1.25] → "×0.8–1.25"; [1.3, None] → "≥ ×1.3"."""
    low, high = bounds
    if high is None or (isinstance(high, float) and math.isinf(high)):
        return f"≥ ×{low:.3g}"
    return f"×{low:.3g}–{high:.3g}"


def _r(x: float) -> float:
    return round(float(x), 4)
