"""Harness fidelity: the console's median latency against torch.utils.benchmark on three catalog models.

Goal: the ratio console/torch within ±3%. Both time the very same loaded model's `infer` callable — the console
through the single-stream scenario loop its workers run, torch through `Timer.blocked_autorange` — in many
short interleaved pairs (who goes first alternates), so drift and other processes weigh on both sides alike.
The figure is the median of the ratios of blocks of two pairs, one of each order (bench_stats.balanced_ratios:
going first has an effect of its own, which an odd count of alternating pairs let leak into the median), with a
distribution-free 95% interval from order statistics: 22 pairs give 11 blocks, narrow enough to decide ±3% on a
quiet machine; on a busy one the interval straddles the goal and the verdict is "undecided", not "fail".
FIDELITY_PAIRS and FIDELITY_ROUND_S trade time for a narrower interval.
"""

import os
import statistics

import numpy as np
import pytest
import torch.utils.benchmark as tb
from bench_stats import balanced_ratios, median_with_interval
from bench_verdict import Goal, judge

from engines.backends import torch_backend
from engines.scenarios import single_stream
from engines.spec import RunSpec

PAIRS = int(os.environ.get("FIDELITY_PAIRS", 22))  # even: ABBA blocks (bench_stats.balanced_ratios)
ROUND_S = float(os.environ.get("FIDELITY_ROUND_S", 0.25))  # measured per side per pair
GOAL = Goal.within(1.0, 0.03)
# Three catalog models, sized so that a short round still holds hundreds of iterations on this machine.
MODELS = {
    "mlp": {},
    "resnet18": {"image_size": 32, "width": 16},
    "bert": {"layers": 2, "hidden": 128, "heads": 2, "seq_len": 32},
}


def console_median_ms(model, spec: RunSpec) -> float:
    events = []
    single_stream.run(model, spec, events.append, lambda: False)
    latency = np.concatenate([e["latency_ns"] for e in events if e["type"] == "latencies"])
    return float(np.median(latency)) / 1e6


@pytest.mark.parametrize("name", list(MODELS))
def test_console_median_matches_torch_utils_benchmark(name, bench):
    # one thread: steadier on 2 cores; a short warm-up per round: the model is warm from the start
    spec = RunSpec(model=name, model_params=MODELS[name], duration_s=ROUND_S, warmup_s=0.05, threads=1)
    model = torch_backend.load(spec)
    try:
        timer = tb.Timer(stmt="infer()", globals={"infer": model.infer}, num_threads=1)
        timer.blocked_autorange(min_run_time=0.5)  # warm-up
        console_median_ms(model, spec)
        ours, theirs = [], []
        for k in range(PAIRS):
            for side in ("console", "torch") if k % 2 == 0 else ("torch", "console"):
                if side == "console":
                    ours.append(console_median_ms(model, spec))
                else:
                    theirs.append(timer.blocked_autorange(min_run_time=ROUND_S).median * 1e3)
    finally:
        model.close()
    ratios = balanced_ratios(ours, theirs)
    ratio, interval = median_with_interval(ratios)
    print(f"\n[benchmark] {name} median latency: console {statistics.median(ours):.4f} ms, torch.utils.benchmark "
          f"{statistics.median(theirs):.4f} ms over {PAIRS} interleaved pairs of {ROUND_S:g} s "
          f"(ratios of ABBA blocks {min(ratios):.3f}–{max(ratios):.3f})")
    bench.record(judge(f"fidelity {name}: console/torch median latency", ratio, interval, GOAL, samples=len(ratios),
                       console_ms=statistics.median(ours), torch_ms=statistics.median(theirs),
                       ratio_range=[min(ratios), max(ratios)]))
