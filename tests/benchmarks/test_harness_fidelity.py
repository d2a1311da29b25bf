"""Harness fidelity: the console's median latency against torch.utils.benchmark on the same model, same process.

Goal: within ±3%. Both measure the very same `infer` callable that the worker measures; rounds are
interleaved so drift and noise affect both.
"""

import statistics

import numpy as np
import torch.utils.benchmark as tb

from engines.backends import torch_backend
from engines.spec import RunSpec
from engines.worker import run_spec

ROUNDS = 7
GOAL = 0.03


def console_median_ms(spec: RunSpec) -> float:
    events = []
    run_spec(spec.to_dict(), events.append)
    latency = np.concatenate([e["latency_ns"] for e in events if e["type"] == "latencies"])
    return float(np.median(latency)) / 1e6


def test_console_median_matches_torch_utils_benchmark():
    spec = RunSpec(model="mlp", duration_s=1.5, warmup_s=0.5, threads=1)  # one thread: steadier on 2 cores
    model = torch_backend.load(spec)
    timer = tb.Timer(stmt="infer()", globals={"infer": model.infer}, num_threads=1)
    timer.blocked_autorange(min_run_time=0.5)  # warm-up
    ours, theirs = [], []
    for _ in range(ROUNDS):
        ours.append(console_median_ms(spec))
        theirs.append(timer.blocked_autorange(min_run_time=1.5).median * 1e3)
    ratio = statistics.median(ours) / statistics.median(theirs)
    print(f"\n[benchmark] MLP median latency: console {statistics.median(ours):.4f} ms, torch.utils.benchmark "
          f"{statistics.median(theirs):.4f} ms, ratio {ratio:.3f} (goal within ±{GOAL:.0%})")
    assert abs(ratio - 1) <= GOAL
