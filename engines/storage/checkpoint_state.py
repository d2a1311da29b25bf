"""The state dict a checkpoint benchmark saves: a catalog model's, or synthetic tensors sized like one shard of
a 1B / 8B / 70B model's training checkpoint, scaled down when the disk or memory here cannot hold it.

Why synthetic: what storage sees of a checkpoint is bytes in tensors of some tens of MiB, not the model's math,
so a shard can be written without building the model. Its size follows from an assumption stated in every
result: parameters × bytes per parameter ÷ the ranks the job shards over. The default 14 bytes per parameter is
mixed-precision Adam: bf16 weights (2) + fp32 master weights (4) + Adam's two fp32 moments (8); gradients are not
checkpointed. Contents are pseudo-random (seeded per rank), so neither compression nor deduplication in the
file system shrinks them. A shard larger than `shard_gb` is scaled to it, and the result says from what and by
how much: durations are measured on the scaled size; only a projection (labelled so) speaks for the full one.

Runs where torch is imported (a worker or a DCP rank), never in the console.
"""

from __future__ import annotations

import importlib
import math
from typing import Any

from engines.storage.checkpoint_options import BYTES_PER_PARAM, BYTES_PER_PARAM_NOTE, DEFAULT_SHARD_GB, SIZES
from engines.storage.errors import StorageError

GB = 1e9
_MAX_TENSOR = 64 * 1024 ** 2  # bytes per synthetic tensor: the size of an LLM's larger weight matrices
_MIN_TENSOR = 256 * 1024


# ---- Public API
def plan(options: dict[str, Any]) -> dict[str, Any]:
    """What will be saved, without building it: {"source", "params", "bytes", "scaled", "tensors", ...}.

    `bytes` is per rank (one shard). For a catalog model the model is built here to count its bytes.
    """
    model = options.get("model")
    if model:
        state = catalog_state(model, options.get("model_params"))
        size = sum(t.numel() * t.element_size() for t in state.values())
        params = sum(t.numel() for t in state.values())
        return {"source": f"catalog model {model}", "model": model, "params": int(params), "bytes": int(size),
                "scaled": None, "tensors": len(state), "assumption": "the model's own state_dict (weights only)"}
    size = options.get("size") or "1b"
    params, job_ranks_default, origin = SIZES[size]
    bpp = float(options.get("bytes_per_param") or BYTES_PER_PARAM)
    job_ranks = int(options.get("job_ranks") or job_ranks_default)
    full = params * bpp / job_ranks
    cap = float(options.get("shard_gb") or DEFAULT_SHARD_GB) * GB
    target = min(full, cap)
    target = max(_MIN_TENSOR, int(target) // 4096 * 4096)
    scaled = None
    if full > cap:
        scaled = {"full_bytes": int(full), "bytes": target, "factor": target / full,
                  "why": f"one shard of {full / GB:.2f} GB is capped at --shard-gb {cap / GB:g}: durations are "
                         f"measured on {target / GB:.3f} GB ({100 * target / full:.2g}% of the shard)"}
    assumption = (f"{origin}; {BYTES_PER_PARAM_NOTE if bpp == BYTES_PER_PARAM else f'{bpp:g} bytes per parameter'}"
                  f"; sharded over {job_ranks} ranks (one shard = params × bytes/param ÷ {job_ranks})")
    article = "an" if size.startswith("8") else "a"
    return {"source": f"synthetic shard of {article} {size.upper()} model", "size": size, "params": int(params),
            "bytes_per_param": bpp, "job_ranks": job_ranks, "full_shard_bytes": int(full), "bytes": target,
            "scaled": scaled, "tensors": len(_chunks(target)), "assumption": assumption}


def build(options: dict[str, Any], rank: int = 0) -> dict[str, Any]:
    """The state dict of one rank: keys prefixed by the rank (so DCP writes each rank's own, never dedupes)."""
    prefix = f"rank{rank}."
    if options.get("model"):
        state = catalog_state(options["model"], options.get("model_params"))
        return {prefix + k: v for k, v in state.items()}
    return synthetic(plan(options)["bytes"], seed=rank, prefix=prefix)


def synthetic(size: int, seed: int = 0, prefix: str = "") -> dict[str, Any]:
    """bf16 tensors of ≤ 64 MiB, `size` bytes in all, filled with seeded pseudo-random bits."""
    import numpy as np
    import torch

    rng = np.random.default_rng(seed)
    state = {}
    for index, chunk in enumerate(_chunks(size)):
        words = rng.integers(0, 2 ** 63, size=chunk // 8, dtype=np.int64)
        state[f"{prefix}layers.{index}.weight"] = torch.from_numpy(words).view(torch.bfloat16)
    return state


def catalog_state(model: str, model_params: dict[str, Any] | None = None) -> dict[str, Any]:
    """A catalog model's state_dict, every tensor its own contiguous copy (tied weights would stop safetensors)."""
    from engines import catalog

    if model not in catalog.names():
        raise StorageError(f"unknown catalog model {model!r}",
                           f"choose one of {', '.join(catalog.names())}, or --size 1b|8b|70b for a synthetic shard")
    params = catalog.params_for(model, model_params)
    module = importlib.import_module(catalog.get(model).module).build(params)
    return {k: v.detach().contiguous().clone() for k, v in module.state_dict().items()}


def same(saved: dict[str, Any], loaded: dict[str, Any]) -> bool:
    """Whether every tensor came back bit for bit (compared as bytes, so NaN bit patterns compare too)."""
    import torch

    if set(saved) != set(loaded):
        return False
    for key, tensor in saved.items():
        other = loaded[key]
        if other.shape != tensor.shape or other.dtype != tensor.dtype:
            return False
        if not torch.equal(other.contiguous().view(-1).view(torch.uint8), tensor.contiguous().view(-1).view(torch.uint8)):
            return False
    return True


# ---- Private API
def _chunks(size: int) -> list[int]:
    """Tensor sizes (multiples of 8 bytes) that add up to `size`: ≤ 64 MiB each, at least 16 of them when small."""
    per = min(_MAX_TENSOR, max(_MIN_TENSOR, size // 16)) // 8 * 8
    count = max(1, math.ceil(size / per))
    sizes = [per] * (count - 1)
    sizes.append(size - per * (count - 1))
    return [s // 8 * 8 for s in sizes if s >= 8]
