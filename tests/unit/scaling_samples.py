"""Shared inputs for the scaling tests: training specs at N ranks, DDP blocks of the contract's shape (docs/scaling.md,
contract §4-§5), stored runs with deterministic step times, and a stand-in for C's waterfall of the contract's shape
(its own tests live with console.analysis.scaling_waterfall)."""

from __future__ import annotations

from typing import Any

import numpy as np

STEP_CV = 0.02  # step-to-step spread of the fixture runs


def spec(ranks: int | None, *, model: str = "mlp", batch: int = 8, scaling: str = "strong", bucket_mb: float = 25.0,
         grad_accum: int = 1, precision: str = "fp32", name: str = "", straggler_ms: float = 0.0) -> dict[str, Any]:
    """A stored training spec (the fields a RunSpec dict carries that matter here)."""
    return {"model": model, "engine": "torch", "target": "cpu", "batch": batch, "mode": "training", "name": name,
            "precision": precision, "scenario": "single-stream", "duration_s": 5.0, "warmup_s": 1.0,
            "iterations": None, "engine_options": {"torch": {
                "channels_last": False, "compile": None, "ranks": ranks, "scaling": scaling, "bucket_mb": bucket_mb,
                "grad_accum": grad_accum, "inject_straggler_ms": straggler_ms, "ranks_cluster": None}}}


def breakdown(ranks: int, step_s: float, *, straggler_s: float = 0.0, exposed_s: float = 0.0,
              unattributed_s: float = 0.001, host: str = "labhost") -> dict[str, Any]:
    """A BREAKDOWN (contract §5) whose parts add up to step_s − unattributed_s."""
    data_wait, optimizer = 0.002, 0.004
    compute = step_s - unattributed_s - data_wait - optimizer - straggler_s - exposed_s
    forward, backward = compute * 0.4, compute * 0.6
    parts = {"data_wait_s": data_wait, "forward_s": forward, "backward_compute_s": backward,
             "straggler_s": straggler_s, "exposed_comm_s": exposed_s, "optimizer_s": optimizer}
    total = sum(parts.values())
    slow = ranks - 1
    return {"steps": 200, "step_s": {"mean": step_s, "median": step_s, "interval_95": [step_s * 0.99, step_s * 1.01]},
            "samples_per_s": None, "parts": parts, "sum_s": total, "unattributed_s": step_s - total,
            "closure": total / step_s, "adds_up": abs(1 - total / step_s) <= 0.05,
            "comm": {"allreduce_s": exposed_s * 2 if ranks > 1 else None, "exposed_s": exposed_s,
                     "overlap_pct": 50.0 if ranks > 1 else None},
            "straggler": {"rank": slow, "host": host, "delay_s": straggler_s,
                          "interval_95": [straggler_s * 0.95, straggler_s * 1.05], "slowest_share": 0.97,
                          "named": straggler_s > 0.005},
            "per_rank": [], "method": "fixture"}


def ddp_block(ranks: int, step_s: float, *, batch: int = 8, scaling: str = "strong", bucket_mb: float = 25.0,
              straggler_s: float = 0.0, exposed_s: float = 0.0, injected: dict | None = None,
              with_global_batch: bool = True) -> dict[str, Any]:
    global_batch = batch * ranks if scaling == "weak" else batch
    block = {"schema": 1, "ranks": ranks, "backend": "gloo" if ranks > 1 else "none", "placement": "local",
             "scaling": scaling, "per_rank_batch": global_batch / ranks, "grad_accum": 1, "bucket_mb": bucket_mb,
             "precision": "fp32", "grad_bytes": 4_000_000, "bucket_bytes": [4_000_000], "injected": injected,
             "ranks_out": [], "probe": None,
             "breakdown": breakdown(ranks, step_s, straggler_s=straggler_s, exposed_s=exposed_s),
             "prediction": {"predicted_s": exposed_s * 1.8, "measured_s": exposed_s * 2,
                            "ratio": 0.9, "busbw_source": "probe in this run", "per_bucket": [],
                            "formula": "2(n-1)/n * B / busbw", "method": "fixture"} if ranks > 1 else None,
             "method": "fixture"}
    if with_global_batch:
        block["global_batch"] = global_batch
    return block


def step_times_ns(step_s: float, count: int = 200, seed: int = 7) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return (np.maximum(rng.normal(step_s, step_s * STEP_CV, count), step_s * 0.5) * 1e9).astype(np.int64)


def summary(ranks: int, step_s: float, *, batch: int = 8, scaling: str = "strong", count: int = 200,
            with_samples: bool = True, **block: Any) -> dict[str, Any]:
    """A run summary: global samples/s = global batch ÷ step time, the DDP block under scenario.ddp."""
    ddp = ddp_block(ranks, step_s, batch=batch, scaling=scaling, **block)
    global_batch = batch * ranks if scaling == "weak" else batch
    scenario: dict[str, Any] = {"ddp": ddp}
    if with_samples:
        scenario["samples_per_s"] = global_batch / step_s
    return {"iterations": count, "batch": batch, "duration_s": count * step_s,
            "throughput_per_s": global_batch / step_s if with_samples else count * batch / (count * step_s),
            "latency_ms": {"mean": step_s * 1000}, "scenario": scenario}


def store_run(store: Any, ranks: int, step_s: float, *, status: str = "completed", sweep: str | None = None,
              point: dict | None = None, seed: int = 7, spec_kw: dict | None = None, **kw: Any) -> str:
    """Store one training run with `ranks` ranks whose steps take about `step_s`; its run_id."""
    spec_kw = dict(spec_kw or {})
    run_id = store.create_run(spec(ranks, **spec_kw))
    store.add_latencies(run_id, np.arange(200, dtype=np.int64) * 10**8, step_times_ns(step_s, seed=seed))
    store.finish_run(run_id, status, summary(ranks, step_s, batch=spec_kw.get("batch", 8),
                                             scaling=spec_kw.get("scaling", "strong"),
                                             bucket_mb=spec_kw.get("bucket_mb", 25.0), **kw))
    if sweep:
        store.tag_run(run_id, sweep, point or {"ranks": ranks})
    return run_id


def fake_waterfall(bd_n: dict, bd_1: dict, ranks: int, scaling: str) -> dict[str, Any]:
    """C's waterfall as the contract gives it: ideal T1/N (strong) or T1 (weak), Δ per part, unattributed last,
    the chain ending at the measured step."""
    t1, tn = bd_1["step_s"]["mean"], bd_n["step_s"]["mean"]
    scale = 1 / ranks if scaling == "strong" else 1.0
    ideal = t1 * scale
    p1, pn = bd_1["parts"], bd_n["parts"]
    names = [("compute", ("forward_s", "backward_compute_s")), ("data wait", ("data_wait_s",)),
             ("optimizer", ("optimizer_s",)), ("straggler", ("straggler_s",)),
             ("exposed communication", ("exposed_comm_s",))]
    bars = [{"name": "ideal", "delta_s": ideal, "from_s": 0.0, "to_s": ideal, "how": "T(1) ÷ N"}]
    level = ideal
    for name, keys in names:
        delta = sum(pn[k] for k in keys) - sum(p1[k] for k in keys) * scale
        bars.append({"name": name, "delta_s": delta, "from_s": level, "to_s": level + delta, "how": "Δ part"})
        level += delta
    bars.append({"name": "unattributed", "delta_s": tn - level, "from_s": level, "to_s": tn, "how": "rest"})
    return {"ranks": ranks, "scaling": scaling, "ideal_s": ideal, "measured_s": tn, "bars": bars,
            "ends_at_measured": True, "closure_n": bd_n["closure"], "closure_1": bd_1["closure"],
            "adds_up": bd_n["adds_up"]}
