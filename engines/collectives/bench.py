"""`run(options, progress) -> result`: a collectives benchmark as nccl-tests runs one, with torch.distributed.

Ranks are local processes (gloo on CPU, or nccl one per GPU) or Ray actors across a cluster (`cluster`); each
warms up, then times `trials` × `iters` operations per op and size (engines.collectives.rank). The result (contract
section 3, engines.collectives.result) gives per size the time, algbw and busbw as nccl-tests defines them.
Registered with the console's worker launcher as kind "collectives"; runs in that worker, never in the console.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from engines.collectives.errors import CollectivesError
from engines.collectives.formulas import shape
from engines.collectives.options import format_size, normalize
from engines.collectives.result import build_result
from engines.host_memory import available_bytes

MEMORY_SHARE = 0.8  # local ranks' buffers may take at most this share of the memory available now

__all__ = ["run", "method_text"]


# ---- Public API
def run(options: dict[str, Any], progress: Callable[[Any], None] | None = None) -> dict[str, Any]:
    """Run the collectives benchmark `options` asks for (engines.collectives.options); the contract's result."""
    opts = normalize(options)
    progress = progress or (lambda update: None)
    plan = {**opts, "element_size": 4, "threads_per_rank": 1}
    if opts["placement"] == "local":
        _check_local(opts)
        from engines.collectives.local_ranks import run_local

        outputs = run_local(plan, progress)
    else:
        from engines.collectives.ray_ranks import run_ray

        outputs = run_ray(plan, progress)
    return build_result(opts, outputs, method_text(opts))


def method_text(opts: dict[str, Any]) -> str:
    """How the figures were obtained, in one paragraph stored with the run."""
    where = ("local processes (spawn) meeting at 127.0.0.1" if opts["placement"] == "local"
             else f"Ray actors in a SPREAD placement group on the cluster at {opts['cluster']}, meeting at rank 0's "
                  "node")
    combine = ("the slowest rank's time (nccl-tests -a 3; its default -a 1 averages the ranks)"
               if opts["rank_time"] == "max" else "the ranks' average time (nccl-tests' default -a 1)")
    return (f"torch.distributed {opts['backend']}, {opts['ranks']} ranks as {where}; float32 buffers; per op and "
            f"size {opts['warmup']} warm-up operations, then {opts['trials']} trials of {opts['iters']} operations "
            f"each after a barrier (time per operation = the trial's wall time / {opts['iters']}, after a device "
            f"synchronize on CUDA); each trial's time is {combine}; time_us is the median over trials; "
            "algbw = S / t and busbw = algbw × factor as nccl-tests (doc/PERFORMANCE.md, src/*.cu GetBw), S the "
            "total buffer for all-gather, reduce-scatter and all-to-all; each op's result checked once on a small "
            "buffer before timing")


# ---- Private API
def _check_local(opts: dict[str, Any]) -> None:
    """Refuse, with the fix, what cannot run here: more nccl ranks than GPUs, buffers beyond the memory."""
    if opts["backend"] == "nccl":
        import torch
        import torch.distributed as dist

        if not dist.is_nccl_available():
            raise CollectivesError(f"this torch ({torch.__version__}) was built without NCCL",
                                   "use --backend gloo, or install a CUDA build of torch")
        found = torch.cuda.device_count() if torch.cuda.is_available() else 0
        if found < opts["ranks"]:
            raise CollectivesError(f"backend nccl runs one rank per GPU: {opts['ranks']} ranks asked, {found} GPU(s) "
                                   "visible", f"use --ranks {found}" if found >= 2 else
                                   "use --backend gloo (CPU processes), or a machine with 2 or more NVIDIA GPUs")
        return
    largest = max(opts["sizes_bytes"])
    splits = [shape(op, largest, opts["ranks"]) for op in opts["ops"]]
    per_rank = max(4 * (split["send_count"] + split["recv_count"]) for split in splits)
    need, available = per_rank * opts["ranks"], available_bytes() or None
    if available is not None and need > MEMORY_SHARE * available:
        raise CollectivesError(f"{opts['ranks']} ranks at {format_size(largest)} need about {need / 1e9:.1f} GB of "
                               f"buffers, and {available / 1e9:.1f} GB of memory is available",
                               "use a smaller largest size (e.g. --sizes 8B..64MiB) or fewer --ranks")
