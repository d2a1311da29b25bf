"""What every rank of a data-parallel run does, decided once in the worker before any rank starts.

Why a plan: the ranks are separate processes (or Ray actors on other machines) that must agree on everything —
batch split, bucket size, who is slowed, which cores are whose — without talking first. The plan is plain data
(picklable, JSON-able), so it travels to a spawned process or a Ray actor unchanged, and refusing an impossible
split (more ranks than cores) costs nothing. Torch-free.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from engines.spec import RunSpec

PROBE = {"warmup": 2, "trials": 5, "iters": 5}  # the after-measuring all-reduce probe, nccl-tests style
PROBE_STEPS = 3  # steps every rank runs first; rank 0 times them to agree the step counts
STEP_KEYS = ("data_wait_s", "forward_s", "backward_s", "backward_compute_s", "comm_s", "comm_busy_s",
             "exposed_comm_s", "grad_copy_s", "optimizer_s", "step_s", "injected_s")

__all__ = ["plan_for", "split_cores", "STEP_KEYS", "PROBE", "PROBE_STEPS"]


# ---- Public API
def plan_for(spec: RunSpec, cores: Sequence[int] | None) -> dict[str, Any]:
    """The plan of a validated `spec` with `torch.ranks` set; `cores`: the CPUs the worker may use (None when
    they cannot be read: ranks are then not pinned). RuntimeError naming the fix when the ranks cannot be
    placed on these cores."""
    options = spec.options_for("torch")
    ranks = int(options.ranks)
    micro = int(options.grad_accum)
    placement = "ray" if options.ranks_cluster else "local"
    if options.scaling == "strong":
        global_batch, per_rank = spec.batch, spec.batch // ranks
    else:
        global_batch, per_rank = spec.batch * ranks, spec.batch
    if per_rank < 1 or per_rank % micro:
        raise RuntimeError(f"a per-rank batch of {per_rank} does not split into {micro} micro-batches: give "
                           f"--batch as a multiple of {ranks * micro if options.scaling == 'strong' else micro}")
    if spec.target == "cpu":
        backend = "gloo"
        devices = ["cpu"] * ranks
    else:
        backend = "nccl"
        first = int(spec.target.partition(":")[2] or 0)
        devices = [f"cuda:{first + rank}" for rank in range(ranks)] if placement == "local" else ["cuda"] * ranks
    if ranks == 1:
        backend = "none"  # one rank: no process group, no DDP wrapper (the baseline E(N) divides by)
    rank_cores = split_cores(cores, ranks) if placement == "local" and cores else None
    threads = spec.threads or (len(rank_cores[0]) if rank_cores else None)
    inject = ({"rank": ranks - 1, "ms": float(options.inject_straggler_ms)}
              if options.inject_straggler_ms > 0 else None)
    return {
        "ranks": ranks, "backend": backend, "placement": placement, "cluster": options.ranks_cluster,
        "scaling": options.scaling, "global_batch": global_batch, "per_rank_batch": per_rank,
        "micro_batches": micro, "micro_batch": per_rank // micro, "bucket_mb": float(options.bucket_mb),
        "precision": spec.precision, "inject": inject, "rank_cores": rank_cores, "rank_devices": devices,
        "threads_per_rank": threads, "stall_timeout_s": float(spec.limits.stall_timeout_s),
        "load_timeout_s": float(spec.limits.load_timeout_s), "duration_s": float(spec.duration_s),
        "warmup_s": float(spec.warmup_s), "iterations": spec.iterations, "probe_steps": PROBE_STEPS,
        "probe": dict(PROBE), "profile_iterations": spec.profile_iterations, "trace_path": None,
        "spec": spec.to_dict(),
    }


def split_cores(cores: Sequence[int], ranks: int) -> list[list[int]]:
    """The worker's CPUs split into `ranks` equal, contiguous shares (a remainder is left unused, so no rank is
    slower for having fewer cores). RuntimeError with the fix when a rank would get none."""
    ordered = sorted(set(int(c) for c in cores))
    share = len(ordered) // ranks
    if share < 1:
        fix = f"use --ranks {len(ordered)}" if len(ordered) >= 1 else "give the worker at least one core"
        raise RuntimeError(f"{ranks} ranks on {len(ordered)} core{'s' if len(ordered) != 1 else ''}: {fix} "
                           "(each rank needs a core of its own)")
    return [ordered[rank * share:(rank + 1) * share] for rank in range(ranks)]
