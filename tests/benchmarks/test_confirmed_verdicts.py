"""Verdicts held to account by their own confirmation: the synthetic suite and catalog models at several sizes
and thread counts, each run through the product's path — a profiled run, the verdict `analyze` gives
(console.analysis.finished_run.analysis_verdict against this machine's card), then the product's confirmation
(console.analysis.confirm.plan_for + run_confirmation: the interventions that tell the verdict from its runner-up,
interleaved A B B A with the original until each interval answers or the cap) — and the label the experiments
established (bench_confusion: a confirmed class, what refuted data says instead, or nothing when undecided).

Printed: the confusion matrix (verdict × established label), the outcome counts per verdict class and, for the
synthetic suite, per expected class; then each case with its two repeats' verdicts and its experiments.
Figures: badly wrong (a prediction of the verdict's class that failed by ×2 or more; goal 0, exact), confirmed
share (of the cases whose confirmation ran; goal ≥ 0.5, Wilson interval), refuted share (goal ≤ 0.25, Wilson),
verdict agreement between repeats (the two profiled runs of a case name the same class; goal ≥ 0.7, Wilson) and the
confidence's calibration: of the cases whose confirmation decided, the confirmed share (Wilson) against the mean
confidence shown, goal within ±0.15 of it — the confidence (verdict_stability: the share of resamples of the
profiled iterations that give the class) claims to be how often the verdict holds, and the experiments say how
often it did; with a few dozen cases the interval is wide, so it is mostly undecided, and says so.
A decided miss while other processes used more than a quarter of a core (during the card or the cases,
bench_load) is undecided with how busy it was, as in test_verdicts: the card's roofs and the rounds both measure
the neighbours then.

Rounds run in this process (engines.worker.run_spec of the A or B spec, ROUND_ITERATIONS timed calls) rather than
as RunSessions: a worker's start-up per round would cost most of the budget. `make bench` runs the short form
(the synthetic suite and the MLP at two batch sizes, one thread, at most 6 rounds a side: about 90 s of cases on
a busy 2-core VM, plus the one-thread card that test_verdicts shares, 20–110 s);
CONFIRMED_VERDICTS=long (`make bench-long`) adds resnet18 and bert at two sizes each, every catalog case at 1 and
2 threads (2 only where the worker has two physical cores), analyze's 10 profiled iterations and 10 rounds a side.
CONFIRMED_VERDICTS_ROUNDS, _REPEATS and _ENGINES (default torch) override either; _CASES=mlp,synth-gemm runs
only the cases whose names contain one of those.
"""

from __future__ import annotations

import dataclasses
import os
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest
from bench_confusion import (
    agreement,
    badly_wrong,
    calibration,
    calibration_lines,
    established,
    matrix_lines,
    outcome_lines,
)
from bench_load import cpu_clock, other_percent
from bench_stats import wilson_interval
from bench_verdict import FAIL, UNDECIDED, Goal, judge
from test_verdicts import ITERATIONS, _busy, cases, measured_card

from console.analysis.confirm import MIN_ROUNDS, plan_for, run_confirmation
from console.analysis.finished_run import analysis_verdict
from engines.spec import RunSpec
from engines.worker import run_spec

LONG = os.environ.get("CONFIRMED_VERDICTS", "short") == "long"
ENGINES = os.environ.get("CONFIRMED_VERDICTS_ENGINES", "torch").split(",")
MAX_ROUNDS = int(os.environ.get("CONFIRMED_VERDICTS_ROUNDS", 10 if LONG else 6))
REPEATS = int(os.environ.get("CONFIRMED_VERDICTS_REPEATS", 2))
ONLY = os.environ.get("CONFIRMED_VERDICTS_CASES")  # comma-separated substrings of case names: run only those
PROFILE_ITERATIONS = 10 if LONG else 5  # analyze's own in the long form; 5 is the fewest the verdict resamples
ROUND_ITERATIONS = 5  # timed calls a round; interleave takes each round's median
ROUND_WARMUP_S = 0.05


@dataclass(frozen=True)
class BenchCase:
    model: str
    params: dict = field(default_factory=dict)
    batch: int = 1
    threads: int = 1
    engine: str = "torch"
    expected: str | None = None  # the synthetic suite's class by construction; a catalog model has none

    @property
    def name(self) -> str:
        params = ",".join(f"{k}={v}" for k, v in self.params.items() if k in ("image_size", "seq_len", "hidden"))
        return (f"{self.model}" + (f"[{params}]" if params and not self.expected else "")
                + (f" b{self.batch}" if self.batch != 1 else "") + f" t{self.threads}"
                + (f" {self.engine}" if len(ENGINES) > 1 else ""))

    def spec(self, profile: bool) -> RunSpec:
        return RunSpec(model=self.model, engine=self.engine, model_params=dict(self.params), batch=self.batch,
                       iterations=ITERATIONS, warmup_s=0.1, threads=self.threads,
                       profile_iterations=PROFILE_ITERATIONS if profile else None).validate()


def bench_cases(llc: int, physical_cores: int) -> list[BenchCase]:
    """The synthetic suite (test_verdicts' cases, at one thread) and the catalog models: the MLP at batch 1 and 64;
    in the long form also resnet18 (width 16) at 64 and 128 pixels and bert (hidden 128) at 64 and 128 tokens,
    every catalog case at 1 and 2 threads where the worker has two physical cores."""
    out = [BenchCase(c.model, c.params, engine=engine, expected=c.expected) for engine in ENGINES
           for c in cases(llc)]
    catalog = [BenchCase("mlp"), BenchCase("mlp", batch=64)]
    if LONG:
        catalog += [BenchCase("resnet18", {"image_size": size, "width": 16}) for size in (64, 128)]
        catalog += [BenchCase("bert", {"seq_len": seq, "hidden": 128, "heads": 2}) for seq in (64, 128)]
    threads = (1, 2) if LONG and physical_cores >= 2 else (1,)
    out += [dataclasses.replace(c, threads=t, engine=engine) for engine in ENGINES for t in threads for c in catalog]
    if ONLY:
        out = [c for c in out if any(part.strip() in c.name for part in ONLY.split(","))]
    return out


@pytest.fixture(scope="module")
def cards():
    """The machine card per thread count the cases use (test_verdicts.measured_card, measured once a session and
    shared with test_verdicts): the verdict of a two-thread run is judged against two-thread roofs."""
    return {threads: measured_card(threads) for threads in ((1, 2) if LONG else (1,))}


def run_events(spec: RunSpec) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = []
    run_spec(spec.to_dict(), events.append)
    errors = [e for e in events if e["type"] == "error"]
    if errors:
        raise RuntimeError(errors[0]["message"])
    return events


def latencies_ms(events: list[dict[str, Any]]) -> np.ndarray:
    return np.concatenate([e["latency_ns"] for e in events if e["type"] == "latencies"]) / 1e6


def profiled(case: BenchCase, card: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """(the finished record, as RunSession keeps it, in the fields the verdict and the plan read; the verdict)."""
    spec = case.spec(profile=True)
    events = run_events(spec)
    latency = latencies_ms(events)
    profile = next((e for e in events if e["type"] == "profile"), None) or {}
    loaded = next((e for e in events if e["type"] == "loaded"), {})
    record = {"status": "completed", "spec": spec.to_dict(),
              "summary": {"cv": float(np.std(latency) / np.mean(latency)),
                          "latency_ms": {"p50": float(np.median(latency))}, "scenario": {}, "telemetry": {}},
              "ops": profile.get("ops") or [], "profile": {k: v for k, v in profile.items() if k != "ops"},
              "environment": {"engine": {"versions": loaded.get("versions", {}), **(loaded.get("details") or {})},
                              "hygiene": next((e["hygiene"] for e in events if e["type"] in ("loaded", "result")
                                               and e.get("hygiene")), None)}}
    return record, analysis_verdict(record, card)


def in_process_rounds(case: BenchCase):
    """make_runner(planned) for run_confirmation: round k of side A runs the case's spec, of side B the planned
    change of it, each ROUND_ITERATIONS timed calls in this process; a round that fails raises RuntimeError (the
    confirmation then says "failed" and why)."""
    base = dataclasses.replace(case.spec(profile=False), iterations=ROUND_ITERATIONS, warmup_s=ROUND_WARMUP_S)

    def make_runner(planned):
        sides = {"A": base, "B": planned.axis.apply(base)}
        return lambda side, k: latencies_ms(run_events(sides[side]))
    return make_runner


def confirmed_case(case: BenchCase, card: dict[str, Any]) -> dict[str, Any]:
    """One case through the product's path: REPEATS profiled runs and verdicts, the first confirmed."""
    started, clock = time.perf_counter(), cpu_clock()
    runs = [profiled(case, card) for _ in range(max(1, REPEATS))]
    record, verdict = runs[0]
    if verdict is None:
        block = {"outcome": "untestable", "sentence": "not tested: the run has no op table", "experiments": []}
    else:
        block = run_confirmation(plan_for(verdict, case.spec(profile=False), record, card),
                                 in_process_rounds(case), MIN_ROUNDS, MAX_ROUNDS)
    return {"case": case.name, "expected": case.expected,
            "verdicts": [v["class"] if v else "none" for _, v in runs],
            "confidence": round(float(verdict["confidence"]), 3) if verdict else None,
            "outcome": block["outcome"], "established": established(block), "sentence": block["sentence"],
            "experiments": [e["sentence"] for e in block.get("experiments") or []],
            "badly_wrong": badly_wrong(block), "seconds": round(time.perf_counter() - started, 1),
            "others_percent": round(other_percent(clock, cpu_clock()))}


@pytest.mark.timeout(1800 if LONG else 900)  # the long form: two cards and 18 cases on a busy 2-core VM
def test_verdicts_confirmed_by_their_experiments(cards, bench):
    from console.analysis.confirm.axes import physical_worker_cores

    before = cpu_clock()
    rows = [confirmed_case(case, cards[case.threads])
            for case in bench_cases(cards[1].get("llc_bytes") or 8 << 20, physical_worker_cores(None) or 1)]
    suite_other = other_percent(before, cpu_clock())
    show(rows, suite_other, cards)

    tested = [r for r in rows if r["outcome"] in ("confirmed", "refuted", "undecided")]
    bad = sum(1 for r in rows if r["badly_wrong"])
    confirmed = sum(1 for r in tested if r["outcome"] == "confirmed")
    refuted = sum(1 for r in tested if r["outcome"] == "refuted")
    same, pairs = agreement(r["verdicts"] for r in rows)
    mode = "long" if LONG else "short"
    results = [judge(f"badly wrong verdicts, confirmed by experiment ({mode})", bad, (bad, bad),
                     Goal.at_most(0, "cases"), samples=len(rows), table=rows)]
    for name, hits, trials, goal in (("confirmed share", confirmed, len(tested), Goal.at_least(0.5, "")),
                                     ("refuted share", refuted, len(tested), Goal.at_most(0.25, "")),
                                     ("verdict agreement between repeats", same, pairs, Goal.at_least(0.7, ""))):
        if trials:
            results.append(judge(f"{name} ({mode})", hits / trials, wilson_interval(hits, trials), goal,
                                 samples=trials))
    shown = [(r["confidence"], r["outcome"]) for r in rows]
    decided = [(c, o) for c, o in shown if c is not None and o in ("confirmed", "refuted")]
    if decided:
        mean = sum(c for c, _ in decided) / len(decided)
        hits = sum(o == "confirmed" for _, o in decided)
        results.append(judge(f"confirmed share of decided verdicts against their mean confidence {mean:.2f} "
                             f"({mode})", hits / len(decided), wilson_interval(hits, len(decided)),
                             Goal.within(round(mean, 3), 0.15, ""), samples=len(decided),
                             bins=calibration(shown)))
    busy = _busy(cards[1], suite_other)
    for result in results:
        if busy and result.verdict == FAIL:
            result = dataclasses.replace(result, verdict=UNDECIDED, reason=f"{busy}; {result.reason}")
        bench.record(result)


def show(rows: list[dict[str, Any]], suite_other: float, cards: dict[int, dict[str, Any]]) -> None:
    measured = ", ".join(f"{t} thread{'s' if t > 1 else ''} in {c['measured_s']:.0f} s ({c['other_cpu_percent']:.0f}% "
                         "of a core used by others)" for t, c in cards.items())
    print(f"\nconfirmed verdicts ({'long' if LONG else 'short'} form: {len(rows)} cases, {REPEATS} repeats, "
          f"≤ {MAX_ROUNDS} rounds a side; other processes used {suite_other:.0f}% of a core meanwhile; "
          f"cards: {measured})")
    print("\nconfusion matrix: the verdict against the label its experiments established")
    for line in matrix_lines((r["verdicts"][0], r["established"]) for r in rows):
        print(f"  {line}")
    print()
    for line in outcome_lines([(r["verdicts"][0], r["outcome"]) for r in rows], "verdict"):
        print(f"  {line}")
    expected = [(r["expected"], r["outcome"]) for r in rows if r["expected"]]
    if expected:
        print()
        for line in outcome_lines(expected, "expected (synthetic)"):
            print(f"  {line}")
    print()
    width = max(len(r["case"]) for r in rows)
    print(f"  {'case':{width}} {'expected':16} {'verdicts (repeats)':35} {'conf':>5} {'outcome':10} "
          f"{'established':16} {'s':>5} others")
    for r in rows:
        conf = "—" if r["confidence"] is None else f"{r['confidence']:.2f}"
        print(f"  {r['case']:{width}} {r['expected'] or '—':16} {' / '.join(r['verdicts']):35} {conf:>5} "
              f"{r['outcome']:10} {r['established']:16} {r['seconds']:5g} {r['others_percent']}%")
    print("\n  calibration: the confidence shown against what the experiments found (decided cases)")
    for line in calibration_lines(calibration((r["confidence"], r["outcome"]) for r in rows)):
        print(f"    {line}")
    for r in rows:
        print(f"  {r['case']}: {r['sentence']}")
        for line in r["badly_wrong"]:
            print(f"    BADLY WRONG: {line}")
