"""Training at scale (issue 23): 2 gloo ranks of the catalog MLP run through the product path (engines.worker.run_spec
→ engines.ddp.driver → local rank processes), judged against what the issue asks of them.

a. Predicted vs measured all-reduce. The prediction (engines.ddp.predict) is t = 2(n−1)/n · B / busbw(B) from the
   run's own all-reduce probe at the bucket's size; the measurement is the median rank's all-reduce busy time per
   step (comm hook stamps). --bucket-mb is set larger than the gradients, so there is one bucket: its all-reduce
   starts when backward's compute has ended, alone on the cores, as the probe timed it. With small buckets (e.g.
   --bucket-mb 1) the early buckets' all-reduces run during backward on the same two cores and are slowed by it,
   which the probe (run with nothing beside it) cannot know: a real effect, not a defect of the prediction, and this
   benchmark keeps it out. Goal: median ratio measured / predicted within 0.8–1.2, held
   with its distribution-free 95% interval; 8 runs (with 8 the interval is their whole range).
b. Straggler. --inject-straggler 30 (rank 1 sleeps 30 ms before each forward), 10 runs: the breakdown must name
   rank 1 (straggler.named) in at least 9, and the delay it reports must be 30 ms ± 30% (median over runs with its
   interval).
c. The waterfall adds up. Every run of a and b, and their 1-rank partner (same MLP and global batch, --ranks 1):
   each breakdown's parts explain its measured mean step within 5% (|1 − closure| ≤ 0.05), and the waterfall built
   from it and the partner's ends at the measured step. Goal: all of them; the worst closure is the figure.

Each run: MLP 512→1024×3→10 (2.6 M parameters, 10.5 MB of fp32 gradients), global batch 64 (32 per rank),
strong scaling, 40 measured steps after a short warm-up: a 2-rank gloo step is ~20–50 ms on a 2-core VM. The
whole file has a budget of 150 s on CI's 2-core machine (19 runs; most of each run is starting its rank processes,
which import torch); its seconds are recorded. Measured on the shared 2-core VM with other work running (1-minute
load 3.6–6.0): 228 s in all (8.7–14 s a run); named 10 of 10 with 30.1 ms [28.7, 31.8]; measured ÷ predicted
1.74 [1.19, 3.83] (undecided); worst closure 0.898 (a one-bucket run; median deviation 3.9%), undecided under that
load; a second run (load ≤ 5.0) took 165 s, ratio 1.41 [1.13, 2.23], 2-rank closures 0.876–0.968. A miss while the
load exceeds the cores + 1 is undecided (see `held`).
"""

from __future__ import annotations

import os
import statistics
import time

import pytest
from bench_stats import median_with_interval
from bench_verdict import FAIL, Goal, Result, judge, undecided

MLP = {"in_features": 512, "hidden": 1024, "layers": 3, "out_features": 10}
BATCH = 64
STEPS = 40
ONE_BUCKET_MB = 64.0  # above the 10.5 MB of gradients: one bucket
PREDICT_RUNS = 8
STRAGGLER_RUNS = 10
STRAGGLER_MS = 30.0
RATIO = Goal(0.8, 1.2, "×")
NAMED = Goal.at_least(9, f"of {STRAGGLER_RUNS}")
DELAY = Goal.within(STRAGGLER_MS, 0.3 * STRAGGLER_MS, "ms")
CLOSURE = Goal.at_most(5.0, "%")

_BREAKDOWNS: list[tuple[str, dict]] = []  # every 2-rank run's breakdown, for c
_SECONDS: dict[str, float] = {}
_LOADS: list[float] = []  # the 1-minute load average after each run
BUSY = (os.cpu_count() or 1) + 1.0  # our two ranks hold every core (load ≈ cores); beyond that, someone else runs

dist = pytest.importorskip("torch.distributed")
pytestmark = pytest.mark.skipif(not dist.is_available() or not dist.is_gloo_available(),
                                reason="this torch has no gloo backend")


def ddp_result(ranks: int, *, bucket_mb: float = 25.0, straggler_ms: float = 0.0) -> dict:
    """The result event of one run of the MLP on `ranks` gloo ranks, through run_spec as the worker runs it."""
    from engines.spec import RunSpec
    from engines.worker import run_spec

    spec = RunSpec.from_dict({
        "model": "mlp", "model_params": dict(MLP), "engine": "torch", "target": "cpu", "mode": "training",
        "batch": BATCH, "iterations": STEPS, "warmup_s": 0.2,
        "engine_options": {"torch": {"ranks": ranks, "bucket_mb": bucket_mb, "inject_straggler_ms": straggler_ms}}})
    events: list[dict] = []
    run_spec(spec.to_dict(), events.append)
    _LOADS.append(os.getloadavg()[0])
    errors = [e for e in events if e["type"] == "error"]
    if errors:
        raise RuntimeError(errors[0]["message"])
    return next(e for e in events if e["type"] == "result")


def held(result: Result) -> Result:
    """A miss measured while other work held the cores is undecided, not failed (bench_verdict's rule: a noisy
    machine can make a benchmark undecided, never failed): the ranks each need a core of their own."""
    load = max(_LOADS, default=0.0)
    if result.verdict != FAIL or load <= BUSY:
        return result
    return undecided(result.name, result.goal, f"{result.reason}, but the 1-minute load average reached {load:.1f} "
                     f"on {os.cpu_count()} cores while the ranks ran (other work shared their cores): rerun on a "
                     "quiet machine", value=result.value, samples=result.samples, **result.details)


@pytest.fixture(scope="module")
def partner() -> dict:
    """The 1-rank partner every waterfall starts from (same MLP, same global batch)."""
    started = time.perf_counter()
    result = ddp_result(1, bucket_mb=ONE_BUCKET_MB)
    _SECONDS["partner"] = time.perf_counter() - started
    return result


def test_predicted_allreduce_matches_the_measured_one(bench, partner):
    started = time.perf_counter()
    ratios, buckets, pairs = [], [], []
    for _ in range(PREDICT_RUNS):
        ddp = ddp_result(2, bucket_mb=ONE_BUCKET_MB)["ddp"]
        _BREAKDOWNS.append(("prediction", ddp["breakdown"]))
        buckets.append(len(ddp["bucket_bytes"]))
        prediction = ddp["prediction"]
        if prediction.get("predicted_s") and prediction.get("measured_s"):
            ratios.append(prediction["measured_s"] / prediction["predicted_s"])
            pairs.append([round(prediction["measured_s"] * 1e3, 2), round(prediction["predicted_s"] * 1e3, 2)])
    _SECONDS["prediction"] = time.perf_counter() - started
    name = f"scaling: gloo all-reduce per step, measured ÷ predicted (2 ranks, one bucket, {PREDICT_RUNS} runs)"
    details = {"runs": PREDICT_RUNS, "buckets": buckets, "ratios": [round(r, 4) for r in ratios],
               "measured_predicted_ms": pairs, "max_load": round(max(_LOADS), 2),
               "seconds": round(_SECONDS["prediction"], 1),
               "setup": f"MLP {MLP}, global batch {BATCH}, {STEPS} measured steps, --bucket-mb {ONE_BUCKET_MB:g}: "
                        "one bucket, its all-reduce alone on the core after backward's compute"}
    if len(ratios) < PREDICT_RUNS // 2:
        bench.record(undecided(name, RATIO, f"only {len(ratios)} of {PREDICT_RUNS} runs gave a prediction and a "
                                            "measurement (the probe or the comm stamps were missing)", **details))
        return
    median, interval = median_with_interval(ratios)
    bench.record(held(judge(name, median, interval, RATIO, samples=len(ratios), **details)))
    assert all(count == 1 for count in buckets), f"--bucket-mb {ONE_BUCKET_MB:g} should give one bucket: {buckets}"


def test_an_injected_straggler_is_named_with_its_delay(bench, partner):
    started = time.perf_counter()
    named, delays_ms, ranks, whys = 0, [], [], []
    for _ in range(STRAGGLER_RUNS):
        breakdown = ddp_result(2, bucket_mb=ONE_BUCKET_MB, straggler_ms=STRAGGLER_MS)["ddp"]["breakdown"]
        _BREAKDOWNS.append(("straggler", breakdown))
        straggler = breakdown["straggler"]
        ranks.append(straggler.get("rank"))
        whys.append(straggler.get("why"))
        named += bool(straggler.get("named")) and straggler.get("rank") == 1
        if straggler.get("rank") == 1 and straggler.get("delay_s") is not None:
            delays_ms.append(straggler["delay_s"] * 1e3)
    _SECONDS["straggler"] = time.perf_counter() - started
    runs = f"{STRAGGLER_RUNS} runs of {STEPS} steps, --inject-straggler {STRAGGLER_MS:g} on rank 1"
    bench.record(held(judge(f"scaling: injected straggler named as rank 1 ({runs})", float(named), (named, named),
                            NAMED, samples=STRAGGLER_RUNS, slowest_ranks=ranks, why=whys,
                            max_load=round(max(_LOADS), 2), seconds=round(_SECONDS["straggler"], 1))))
    if len(delays_ms) < 3:
        bench.record(undecided(f"scaling: straggler delay reported ({runs})", DELAY,
                               f"rank 1 was the slowest in only {len(delays_ms)} runs: no delay to hold"))
        return
    median, interval = median_with_interval(delays_ms)
    bench.record(held(judge(f"scaling: straggler delay reported, ms ({runs})", median, interval, DELAY,
                            samples=len(delays_ms), delays_ms=[round(d, 2) for d in delays_ms])))


def test_every_waterfall_adds_up(bench, partner):
    from console.analysis.scaling_waterfall import waterfall

    base = partner["ddp"]["breakdown"]
    if not _BREAKDOWNS:
        pytest.skip("no 2-rank run to check: run the whole file (the prediction and straggler benchmarks make them)")
    deviations, ends, worst = [], [], None
    for what, breakdown in [("1-rank partner", base)] + _BREAKDOWNS:
        deviation = abs(1.0 - float(breakdown["closure"])) * 100
        deviations.append(deviation)
        if worst is None or deviation > worst[1]:
            worst = (what, deviation, breakdown["closure"])
        if breakdown is not base:
            ends.append(bool(waterfall(breakdown, base, 2, "strong")["ends_at_measured"]))
    value = max(deviations)
    seconds = sum(_SECONDS.values())
    name = (f"scaling: waterfall closure, worst |1 − Σparts/step| of {len(deviations)} runs ({len(_BREAKDOWNS)} at "
            "2 ranks + the 1-rank partner)")
    bench.record(held(judge(name, value, (value, value), CLOSURE, samples=len(deviations), worst_run=worst[0],
                            worst_closure=round(worst[2], 4),
                            closures=[round(float(b["closure"]), 4) for _, b in [("", base)] + _BREAKDOWNS],
                            median_deviation_pct=round(statistics.median(deviations), 3),
                            all_end_at_measured=all(ends), file_seconds=round(seconds, 1),
                            max_load=round(max(_LOADS), 2))))
    assert all(ends), "a waterfall did not end at its run's measured step"
