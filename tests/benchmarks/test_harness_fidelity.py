"""Harness fidelity: the console's median latency against torch.utils.benchmark on three catalog models.

Goal: within ±3%. Both time the very same loaded model's `infer` callable — the console through the
single-stream scenario loop its workers run, torch through `Timer.blocked_autorange` — in interleaved rounds,
and the ratio is the median of the per-round ratios, so drift and other processes affect both sides alike.
"""

import statistics

import numpy as np
import pytest
import torch.utils.benchmark as tb

from engines.backends import torch_backend
from engines.scenarios import single_stream
from engines.spec import RunSpec

ROUNDS = 7
GOAL = 0.03
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
def test_console_median_matches_torch_utils_benchmark(name):
    spec = RunSpec(model=name, model_params=MODELS[name], duration_s=0.8, warmup_s=0.3,
                   threads=1)  # one thread: steadier on 2 cores
    model = torch_backend.load(spec)
    timer = tb.Timer(stmt="infer()", globals={"infer": model.infer}, num_threads=1)
    timer.blocked_autorange(min_run_time=0.5)  # warm-up
    ours, theirs, ratios = [], [], []
    for _ in range(ROUNDS):
        ours.append(console_median_ms(model, spec))
        theirs.append(timer.blocked_autorange(min_run_time=0.8).median * 1e3)
        ratios.append(ours[-1] / theirs[-1])
    ratio = statistics.median(ratios)
    print(f"\n[benchmark] {name} median latency: console {statistics.median(ours):.4f} ms, torch.utils.benchmark "
          f"{statistics.median(theirs):.4f} ms, median per-round ratio {ratio:.3f} over {ROUNDS} interleaved rounds "
          f"(range {min(ratios):.3f}–{max(ratios):.3f}; goal within ±{GOAL:.0%})")
    assert abs(ratio - 1) <= GOAL
