"""Hand-built per-rank step records (contract §3) for the DDP breakdown, prediction, waterfall, verdict and what-if
tests: every rank's stamps partition its step (data wait + forward + backward compute + exposed communication +
gradient copy-back + optimizer = step), and the ranks that finish computing first wait in their exposed all-reduce for the slowest,
as DDP's all-reduce makes them — so every rank's step is the same length, as on a real run."""

from __future__ import annotations

import random

MS = 1e-3
STEP_KEYS = ("data_wait_s", "forward_s", "backward_s", "backward_compute_s", "comm_s", "comm_busy_s",
             "exposed_comm_s", "grad_copy_s", "optimizer_s", "step_s", "injected_s")


def steps(ranks: int = 2, n: int = 60, *, data_ms: float = 2.0, forward_ms: float = 10.0, backward_ms: float = 20.0,
          busy_ms: float = 8.0, exposed_ms: float = 2.0, copy_ms: float = 0.5, optimizer_ms: float = 3.0, slow: dict | None = None,
          noise_ms: float = 0.3, shared_noise_ms: float = 0.0, seed: int = 1) -> list[dict[str, list[float]]]:
    """Per rank {key: [n floats]}. `slow` {rank: extra forward ms} makes a straggler (its sleep is injected_s).
    `noise_ms` is each rank's own Gaussian noise on forward; `shared_noise_ms` moves every rank's forward alike."""
    rng = random.Random(seed)
    slow = slow or {}
    out = [{key: [] for key in STEP_KEYS} for _ in range(ranks)]
    for _ in range(n):
        shared = rng.gauss(0.0, shared_noise_ms)
        fwd = [max(0.1, forward_ms + shared + rng.gauss(0.0, noise_ms) + slow.get(r, 0.0)) for r in range(ranks)]
        compute = [data_ms + fwd[r] + backward_ms for r in range(ranks)]
        top = max(compute)
        for r in range(ranks):
            waited = top - compute[r] if ranks > 1 else 0.0
            exposed = (exposed_ms + waited) if ranks > 1 else 0.0
            busy = max(busy_ms, exposed) if ranks > 1 else 0.0
            copy = copy_ms if ranks > 1 else 0.0  # DDP's copy-back of the averaged buckets: no DDP on one rank
            row = {"data_wait_s": data_ms, "forward_s": fwd[r], "backward_compute_s": backward_ms,
                   "backward_s": backward_ms + exposed + copy, "comm_s": busy, "comm_busy_s": busy,
                   "exposed_comm_s": exposed, "grad_copy_s": copy, "optimizer_s": optimizer_ms, "injected_s": slow.get(r, 0.0)}
            row["step_s"] = data_ms + fwd[r] + backward_ms + exposed + copy + optimizer_ms
            for key, value in row.items():
                out[r][key].append(value * MS)
    return out


def ddp_block(ranks: int, bd: dict, *, scaling: str = "strong", global_batch: int = 8, bucket_mb: float = 25.0,
              bucket_bytes: list[int] | None = None, prediction: dict | None = None, backend: str = "gloo",
              injected: dict | None = None) -> dict:
    """A DDP block (contract §4) around a breakdown; ranks_out left out (the consumers here do not read it)."""
    return {"schema": 1, "ranks": ranks, "backend": backend if ranks > 1 else "none", "placement": "local",
            "scaling": scaling, "global_batch": global_batch,
            "per_rank_batch": global_batch // ranks if scaling == "strong" else global_batch // ranks,
            "grad_accum": 1, "bucket_mb": bucket_mb, "precision": "fp32",
            "grad_bytes": sum(bucket_bytes or [4_000_000]), "bucket_bytes": bucket_bytes or [4_000_000],
            "injected": injected, "ranks_out": [], "probe": None, "breakdown": bd, "prediction": prediction,
            "method": "test fixture"}


def ddp_run(block: dict, scenario: str = "single-stream", **scenario_extra) -> dict:
    """A run dict (docs/architecture.md) with the DDP block in summary.scenario.ddp, no ops, no card."""
    spec = {"model": "synth-mlp", "engine": "torch", "target": "cpu", "batch": block["global_batch"],
            "precision": "fp32", "scenario": scenario, "mode": "training",
            "engine_options": {"torch": {"ranks": block["ranks"], "scaling": block["scaling"]}}}
    return {"spec": spec, "summary": {"scenario": {"ddp": block, **scenario_extra}}, "ops": [], "profile": {},
            "machine": None, "counters": None}
