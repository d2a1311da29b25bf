"""Compare two configurations in interleaved rounds (A B B A A B …) until the comparison can answer, or a cap.

Why: one pair of runs measured one after the other carries whatever the machine did between them; on a
2-core VM whose runs spread 20%, no statistic on that pair can tell a 5% slow-down. Alternating short rounds
puts the machine's changes on both sides alike, and pooling the rounds (each round one block of
console.analysis.compare) narrows the interval with every round. Rounds are added until
`compare.answer(result, question)` is no longer "undecided", or `max_rounds` a side have run; at the cap the
result says "undecided" and why, never a guess.

Order: round pair k runs A then B for even k, B then A for odd k, so neither side always goes first (a warm
cache or a cooling CPU favours neither). Judged first after `min_rounds` a side (5: the fewest rounds for
which the block test can reach p < 0.01), then after every further pair. Looking after every pair is a
sequential test: the chance of a false "slower" over all looks is somewhat above `alpha` (each look needs the
interval outside the noise band too, which keeps it small); the result records how many looks were taken.

Qt-free and engine-free: the caller supplies `run_round(side, index) -> latencies in ms` (the CLI re-runs
stored specs through RunSession; the benchmark runs in-process).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from console.analysis.compare import answer, compare

MIN_ROUNDS = 5  # a side: fewer cannot give a block-test p below 0.01 (5 + 5 blocks: 2/252 = 0.008)
MAX_ROUNDS = 12

RoundRunner = Callable[[str, int], Any]
Progress = Callable[[dict[str, Any]], None]


def interleaved(run_round: RoundRunner, question: str | None = None, min_rounds: int = MIN_ROUNDS,
                max_rounds: int = MAX_ROUNDS, noise: float = 0.02, alpha: float = 0.01, seed: int = 0,
                on_progress: Progress | None = None) -> dict[str, Any]:
    """Run rounds of A and B alternately, judge the pooled rounds, stop once `question` is answered.

    question: None (stop on any verdict but "undecided"), or "slower" | "faster" | "different" (what
    `compare --fail-on` asks: stop once the answer is yes or no). on_progress gets {"side", "round", "n"}
    after each round and {"look", "rounds", "result", "answer"} after each judgement.

    Returns compare()'s result over the pooled rounds, plus rounds (a side), max_rounds, looks, order (the
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
        if k + 1 < min_rounds:
            continue
        result = compare(rounds["A"], rounds["B"], noise=noise, alpha=alpha, seed=seed)
        looks += 1
        said = answer(result, question)
        if on_progress is not None:
            on_progress({"look": looks, "rounds": k + 1, "result": result, "answer": said})
        if said != "undecided":
            break
    assert result is not None
    done = len(rounds["A"])
    stopped = "answered" if said != "undecided" else "cap"
    return {**result, "rounds": done, "max_rounds": int(max_rounds), "looks": looks, "order": "".join(order),
            "answer": said, "stopped": stopped, "question": question,
            "decision": decision_text(result, question, said, done, int(max_rounds))}


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
