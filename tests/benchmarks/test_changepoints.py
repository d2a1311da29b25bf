"""Change-point detection: does `labconsole regressions` find a 10% step, and stay quiet on a flat series?

Synthetic: series of 50 runs whose per-run medians carry realistic run-to-run noise (log-normal, 3% spread, and
one run in 25 hit 15% slower by a neighbour), a 10% step at a random place in half of them; found = a slow-down
reported within ±2 runs of where it was made (the exact-run share is reported beside it). Goals (issue 11):
found in ≥ 9 of 10 stepped series, a false alarm in ≤ 1 of 10 flat ones — judged as rates with their exact
(Clopper-Pearson) 95% interval over SERIES series of each kind, so the verdict can be decided.
Real: REAL_RUNS runs of the mlp catalog model measured here in one process, one after another (1 s each, long
enough that a 60 ms burst from a neighbour, common on this shared machine, moves a run's median by little).
ARRANGEMENTS series are made of them: each a seeded random order of the measured runs (so the machine's own drift
during the measurement neither fakes nor cancels a step), stored in a temporary history; in the stepped copy the
stored latencies from a random run on are multiplied by 1.10 (the slow-down is injected into the stored data, not
produced by the machine). Found = `regressions.find` names a slow-down within ±2 runs of it; judged as rates with
their exact interval, like the synthetic series. Whether a 10% step can be found at all depends on the machine's
own run-to-run noise: so the detector's power at this machine's spread (robust: 1.4826 × MAD ÷ median of the run
medians) is computed on synthetic series of the same length and spread; where even those find the step less often
than the goal asks, a miss is the machine's noise, reported undecided with both rates, not failed. False alarms
are judged whatever the noise: a random order is exchangeable, so the permutation test holds them to its rate.
"""

from __future__ import annotations

import dataclasses
import os

import numpy as np
from bench_stats import rate_interval
from bench_verdict import FAIL, UNDECIDED, Goal, judge

from console.analysis import changepoints, regressions
from console.history import HistoryStore
from engines.spec import RunSpec
from engines.worker import run_spec

SERIES = int(os.environ.get("CHANGEPOINT_SERIES", 200))
PLACED_WITHIN = 2  # runs: a step is "found" when a slow-down is reported this close to where it was made
RUNS = 50
STEP = 1.10
REAL_RUNS = 30
REAL_RUN_S = 1.0
ARRANGEMENTS = int(os.environ.get("CHANGEPOINT_ARRANGEMENTS", 40))
POWER_SERIES = 60  # synthetic series at this machine's spread, for the detector's power here
DETECT_GOAL = Goal.at_least(0.9, "")
FALSE_ALARM_GOAL = Goal.at_most(0.1, "")


def realistic_series(rng: np.random.Generator, step_at: int | None, runs: int = RUNS,
                     spread: float = 0.03) -> np.ndarray:
    values = 2.0 * rng.lognormal(0, spread, runs) * np.where(rng.random(runs) < 0.04, 1.15, 1.0)
    if step_at is not None:
        values[step_at:] *= STEP
    return values


def test_synthetic_series(bench):
    rng = np.random.default_rng(11)
    found = exact = alarms = 0
    for _ in range(SERIES):
        step_at = int(rng.integers(10, 41))
        slower = [p["index"] for p in changepoints.detect(realistic_series(rng, step_at)) if p["direction"] == "up"]
        found += any(abs(index - step_at) <= PLACED_WITHIN for index in slower)
        exact += step_at in slower
        alarms += bool(changepoints.detect(realistic_series(rng, None)))
    print(f"\n[benchmark] change points, {SERIES} stepped and {SERIES} flat series of {RUNS} runs: 10% step found "
          f"within ±{PLACED_WITHIN} runs in {found} (at the exact run in {exact}), a false alarm in {alarms}")
    bench.record(judge("change points: 10% step found", found / SERIES, rate_interval(found, SERIES), DETECT_GOAL,
                       samples=SERIES, exact_run=exact / SERIES))
    bench.record(judge("change points: false alarms on flat series", alarms / SERIES, rate_interval(alarms, SERIES),
                       FALSE_ALARM_GOAL, samples=SERIES))


def measured_latencies() -> np.ndarray:
    spec = RunSpec(model="mlp", duration_s=REAL_RUN_S, warmup_s=0.1)
    events: list[dict] = []
    run_spec(spec.to_dict(), events.append)
    errors = [e for e in events if e["type"] == "error"]
    assert not errors, errors[0]["message"]
    return np.concatenate([e["latency_ns"] for e in events if e["type"] == "latencies"])


def power_at(spread: float) -> float:
    """How often the detector finds a 10% step in synthetic series of REAL_RUNS runs with this run-to-run spread."""
    rng = np.random.default_rng(23)
    found = 0
    for _ in range(POWER_SERIES):
        step_at = int(rng.integers(REAL_RUNS // 3, 2 * REAL_RUNS // 3 + 1))
        values = realistic_series(rng, step_at, REAL_RUNS, max(spread, 1e-4))
        found += any(abs(p["index"] - step_at) <= PLACED_WITHIN
                     for p in changepoints.detect(values) if p["direction"] == "up")
    return found / POWER_SERIES


def stored_series(path, runs: list[np.ndarray], step_at: int | None) -> tuple[list[dict], list[str]]:
    """The runs stored as one configuration's series (a slow-down injected from `step_at` on), and what
    `labconsole regressions` finds in it."""
    with HistoryStore(path) as store:
        ids = []
        for index, latency in enumerate(runs):
            factor = STEP if step_at is not None and index >= step_at else 1.0
            stored = (latency * factor).astype(np.int64)
            run_id = store.create_run({"model": "mlp", "engine": "torch", "target": "cpu", "batch": 1})
            store.finish_run(run_id, "completed", summary={
                "valid": True, "latency_ms": {"p50": float(np.median(stored)) / 1e6}})
            ids.append(run_id)
        return regressions.find(store), ids


def test_real_series_with_an_injected_slow_down(tmp_path, bench):
    measured = [measured_latencies() for _ in range(REAL_RUNS)]
    medians = np.array([float(np.median(latency)) / 1e6 for latency in measured])
    spread = float(1.4826 * np.median(np.abs(medians - np.median(medians))) / np.median(medians))
    rng = np.random.default_rng(7)
    found = exact = alarms = 0
    for n in range(ARRANGEMENTS):
        runs = [measured[i] for i in rng.permutation(REAL_RUNS)]
        step_at = int(rng.integers(REAL_RUNS // 3, 2 * REAL_RUNS // 3 + 1))
        stepped, ids = stored_series(tmp_path / f"stepped-{n}.db", runs, step_at)
        places = [ids.index(item["first_bad_run"]) for item in stepped if item["direction"] == "slower"]
        found += any(abs(place - step_at) <= PLACED_WITHIN for place in places)
        exact += step_at in places
        alarms += bool(stored_series(tmp_path / f"flat-{n}.db", runs, None)[0])
    print(f"\n[benchmark] {ARRANGEMENTS} series of {REAL_RUNS} real mlp runs of {REAL_RUN_S:g} s (run-to-run spread "
          f"{spread:.1%}, medians {medians.min():.4f}–{medians.max():.4f} ms): injected 10% step found within "
          f"±{PLACED_WITHIN} runs in {found} (at the exact run in {exact}); a false alarm in {alarms} untouched copies")
    result = judge("change points: real series, injected 10% step found", found / ARRANGEMENTS,
                   rate_interval(found, ARRANGEMENTS), DETECT_GOAL, samples=ARRANGEMENTS,
                   exact_run=exact / ARRANGEMENTS, run_to_run_spread=spread)
    power = power_at(spread)
    if result.verdict == FAIL and power < DETECT_GOAL.low:
        result = dataclasses.replace(result, verdict=UNDECIDED, reason=(
            f"this machine's runs spread {spread:.1%} from run to run (robust): at that spread even synthetic "
            f"series of {REAL_RUNS} runs show the 10% step in only {power:.0%}, so a miss here is the machine's "
            f"noise; {result.reason}; rerun on a quieter machine"))
    bench.record(result)
    bench.record(judge("change points: real series, false alarms", alarms / ARRANGEMENTS,
                       rate_interval(alarms, ARRANGEMENTS), FALSE_ALARM_GOAL, samples=ARRANGEMENTS))
