"""Jitter is not drift, on this machine: steady `mlp` runs end VALID, runs slowed by 20% half-way are a drift.

Issue 18: on a 2-core VM every steady run was INVALID under the fixed 10% stability rule, because the machine
itself jitters 10–17% between windows. Here each run goes the product's way — a RunSession with a spawned worker,
judged in the console against the machine's noise floor (console.machine.noise: draws pooled over the last hour, one
before each of the first three runs a minute apart, then every 10 minutes, and one right after each run the floor
made INVALID, which is then judged again) — in interleaved ABBA order (steady, drifting, drifting, steady, …)
so that a neighbour's load weighs on both kinds alike:

- steady: catalog `mlp`, 1 intra-op thread, batch 1, 0.5 s warm-up; goal: ≥ 90% end VALID;
- drifting: the same spec through `bench_drift.slowed_worker_main`, a test-only worker entry that busy-waits 20% of
  the model's median latency on every call after half the measuring phase; goal: ≥ 95% are reported as a drift
  (an invalid reason with rule "drift").

- honest: each slowed run either reports the drift or states that drifts of 20% are below what it could resolve
  (console.analysis.drift.min_detectable_change, the step its windows find 19 times in 20); goal ≥ 95%. On this
  VM the machine's own speed wanders 16–25% between seconds with a long memory, so a 20% step inside an 8-s run
  cannot be found at 95% by any window statistic without false alarms (the drift module's docstring gives the
  simulation); what the product owes then is not to claim "no drift".

Each rate is judged by its 95% Wilson interval (bench_stats.wilson_interval) through bench_verdict: with 20 runs,
20 of 20 gives 83.9–100%, which straddles a 90% goal — undecided, not passed: proving ≥ 90% needs about 35 clean
runs and ≥ 95% about 75 (DRIFT_RUNS sets the count). A decided miss while other processes used more than a
quarter of a core (bench_load) is reported undecided with how busy the machine was.

Why 6-s runs (DRIFT_DURATION_S; the issue names 8 s): the rule judges the same 10 windows whatever the duration
(0.6 s instead of 0.8 s each), and 40 runs with their worker start-up then take about 7 minutes instead of 9 (on a
busy 2-core VM up to 17 s a run: no new pair starts after DRIFT_BUDGET_S, 540 s (make bench stays under 30 minutes), and the rates are of the pairs run).
"""

from __future__ import annotations

import math
import os
import statistics
import time

import pytest
from bench_drift import SLOWDOWN, slowed_worker_main
from bench_load import QUIET_OTHER_PERCENT, cpu_clock, other_percent
from bench_stats import wilson_interval
from bench_verdict import FAIL, UNDECIDED, Goal, judge

from console.history import HistoryWriter
from console.machine import noise
from console.run.session import RunSession
from engines.spec import RunSpec
from engines.worker import worker_main

RUNS = int(os.environ.get("DRIFT_RUNS", 20))
DURATION_S = float(os.environ.get("DRIFT_DURATION_S", 6.0))
WARMUP_S = 0.5
BUDGET_S = float(os.environ.get("DRIFT_BUDGET_S", 540.0))  # no new pair after this: make bench < 30 min
STEADY_GOAL = Goal.at_least(0.90, "of runs")
DRIFT_GOAL = Goal.at_least(0.95, "of runs")


def run_once(writer: HistoryWriter, db, slowed: bool) -> dict:
    spec = RunSpec(model="mlp", engine="torch", duration_s=DURATION_S, warmup_s=WARMUP_S, threads=1)
    floor = noise.noise_floor_for(spec.target, db)  # recent, or measured again (the machine's noise now)
    session = RunSession(spec, writer, telemetry_hz=None, noise_floor=floor,
                         worker_entry=slowed_worker_main if slowed else worker_main)
    session.start()
    record = session.wait(DURATION_S + 120)
    assert record is not None and record["status"] == "completed", record and record["message"]
    summary = record["summary"]
    stability = (summary.get("validity") or {}).get("stability") or {}
    return {"valid": summary["valid"], "rules": [r["rule"] for r in summary["invalid_reasons"]],
            "verdict": stability.get("verdict"), "text": stability.get("text"), "noise": stability.get("noise"),
            "spread": stability.get("spread"), "change": (stability.get("trend") or {}).get("change"),
            "p": (stability.get("trend") or {}).get("p_value"),
            "resolvable": stability.get("min_detectable_change")}


def test_jitter_is_valid_and_a_half_way_slowdown_is_a_drift(bench, tmp_path):
    db = tmp_path / "history.db"
    writer = HistoryWriter.open(db)
    steady, drifting = [], []
    before, started = cpu_clock(), time.perf_counter()
    try:
        for index in range(RUNS):
            if time.perf_counter() - started > BUDGET_S:
                break
            for slowed in ((False, True) if index % 2 == 0 else (True, False)):
                outcome = run_once(writer, db, slowed)
                (drifting if slowed else steady).append(outcome)
                print(f"[drift benchmark] {'slowed' if slowed else 'steady'} {index + 1}/{RUNS}: {outcome}",
                      flush=True)
    finally:
        writer.close()
    busy = other_percent(before, cpu_clock())
    elapsed = time.perf_counter() - started
    runs = min(len(steady), len(drifting))
    steady, drifting = steady[:runs], drifting[:runs]
    valid = sum(o["valid"] for o in steady)
    caught = sum("drift" in o["rules"] for o in drifting)
    # honest: found the drift, or said that a drift of this size was below what the run could resolve
    honest = sum("drift" in o["rules"] or (o["resolvable"] or 0) > SLOWDOWN for o in drifting)
    could = [o for o in drifting if o["resolvable"] is not None and o["resolvable"] <= SLOWDOWN]
    details = {"runs_each": runs, "runs_asked": RUNS, "duration_s": DURATION_S, "slowdown": SLOWDOWN,
               "elapsed_s": round(elapsed, 1),
               "other_cpu_percent": round(busy, 1),
               "steady_verdicts": _count(o["verdict"] for o in steady),
               "drifting_verdicts": _count(o["verdict"] for o in drifting),
               "noise_seen": sorted({round(o["noise"], 3) for o in steady + drifting if o["noise"] is not None}),
               "resolvable_drift_median": _median([o["resolvable"] for o in steady + drifting]),
               "slowed_runs_that_could_resolve_it": len(could),
               "of_those_caught": sum("drift" in o["rules"] for o in could),
               # per run: verdict, last-windows spread, halves' change, Mann-Whitney p (for tuning the rule later)
               "steady_runs": [_brief(o) for o in steady], "drifting_runs": [_brief(o) for o in drifting]}
    for name, hits, goal in (("steady mlp runs ending VALID", valid, STEADY_GOAL),
                             (f"runs slowed {SLOWDOWN:.0%} half-way reported as a drift", caught, DRIFT_GOAL),
                             (f"runs slowed {SLOWDOWN:.0%} half-way: drift reported or stated unresolvable", honest,
                              DRIFT_GOAL)):
        result = judge(name, hits / runs, wilson_interval(hits, runs), goal, samples=runs, hits=hits, **details)
        if result.verdict == FAIL and busy > QUIET_OTHER_PERCENT:
            result = type(result)(name, result.value, result.interval, goal, UNDECIDED,
                                  f"{result.reason}, but other processes used {busy:.0f}% of a core meanwhile (more "
                                  f"than {QUIET_OTHER_PERCENT:g}%): the neighbours' load, not the rule; rerun on a "
                                  f"quiet machine", result.samples, result.details)
        elif result.verdict == UNDECIDED and hits / runs >= goal.low:  # the point meets it; too few runs to prove it
            budget = f" (only {runs} of {RUNS} pairs fitted the {BUDGET_S:g}-s budget)" if runs < RUNS else ""
            result = type(result)(name, result.value, result.interval, goal, UNDECIDED,
                                  f"{result.reason.split(':')[0]}: {hits} of {runs} runs meet the goal{budget}, but "
                                  f"{runs} runs cannot bound the rate above it (at 100% the Wilson lower bound needs "
                                  f"about {_runs_needed(goal.low)} runs); set DRIFT_RUNS to decide", result.samples,
                                  result.details)
        bench.record(result)


def _runs_needed(goal: float) -> int:
    """The fewest runs whose 95% Wilson interval at n of n successes lies above `goal`."""
    n = 1
    while wilson_interval(n, n)[0] < goal:
        n += 1
    return n


def _brief(outcome: dict) -> list:
    def rounded(x):
        return None if x is None or not math.isfinite(x) else round(x, 3)

    return [outcome["verdict"], rounded(outcome["spread"]), rounded(outcome["change"]), rounded(outcome["p"]),
            rounded(outcome["resolvable"])]


def _median(values) -> float | None:
    finite = [v for v in values if v is not None and math.isfinite(v)]
    return round(statistics.median(finite), 3) if finite else None


def _count(values) -> dict:
    counts: dict = {}
    for value in values:
        counts[str(value)] = counts.get(str(value), 0) + 1
    return counts


if RUNS < 1:  # pragma: no cover — a misconfigured environment, said plainly
    pytest.skip(f"DRIFT_RUNS={RUNS}: nothing to measure", allow_module_level=True)
