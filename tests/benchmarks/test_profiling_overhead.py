"""Profiling never disturbs the timed numbers: the measuring phase's median with and without `profile_iterations`.

Each pair is two complete runs through `engines.worker.run_spec` (model load, warm-up, measurement, and for one of
them the profiling phase with the engine's profiler and a Chrome trace), each in a fresh worker process as the
console runs it (bench_runs: in one process, what one run left behind reached the next), on the catalog MLP with
one thread; who goes first alternates, so drift and the neighbours' load weigh on both sides alike. The figure is
the median of the per-pair ratios (median latency with profiling ÷ without) with its distribution-free 95%
interval (bench_stats), held against 1 ± 1%. The ratios are taken per block of two pairs, one of each order
(bench_stats.balanced_ratios): with 15 alternating pairs the median fell among the pairs where the profiled run
went first, and that order's own effect read as profiling making runs 4–6% faster: pass when the interval lies inside, fail when wholly outside,
undecided when the machine's noise makes it straddle. PROFILE_PAIRS and PROFILE_ROUND_S trade time for a
narrower interval.

What it guards: the profile runs after the measurement by design (engines/worker.py); a change that let the
profiler, its hook or the trace writing reach into the measured loop would show here as a ratio above 1.
"""

import os
import statistics

import pytest
from bench_runs import worker_median_ms
from bench_stats import balanced_ratios, median_with_interval
from bench_verdict import Goal, judge

from engines.spec import RunSpec

PAIRS = int(os.environ.get("PROFILE_PAIRS", 20))  # even: ABBA blocks (bench_stats.balanced_ratios)
ROUND_S = float(os.environ.get("PROFILE_ROUND_S", 0.5))
GOAL = Goal.within(1.0, 0.01)


@pytest.mark.parametrize("engine", ["torch", "onnxruntime"])
def test_profiling_leaves_the_measured_median_alone(engine, bench):
    plain = RunSpec(model="mlp", engine=engine, duration_s=ROUND_S, warmup_s=0.1, threads=1)
    profiled = RunSpec(**{**plain.to_dict(), "profile_iterations": 10})
    worker_median_ms(profiled)  # first load (export cache) outside the pairs
    with_profile, without = [], []
    for k in range(PAIRS):
        for side in ("with", "without") if k % 2 == 0 else ("without", "with"):
            (with_profile if side == "with" else without).append(
                worker_median_ms(profiled if side == "with" else plain))
    ratios = balanced_ratios(with_profile, without)
    ratio, interval = median_with_interval(ratios)
    print(f"\n[benchmark] {engine} median latency with profiling {statistics.median(with_profile):.4f} ms, without "
          f"{statistics.median(without):.4f} ms over {PAIRS} interleaved pairs of {ROUND_S:g} s "
          f"(ratios of ABBA blocks {min(ratios):.3f}–{max(ratios):.3f})")
    bench.record(judge(f"profiling overhead {engine}: measured median with ÷ without profiling", ratio, interval,
                       GOAL, samples=len(ratios), with_ms=statistics.median(with_profile),
                       without_ms=statistics.median(without), ratio_range=[min(ratios), max(ratios)]))
