"""Where a rank's batches come from, and how long it waited for each: the data-wait part of a step.

In memory (scenario single-stream): each rank has its own fixed inputs, seeded by its rank (ranks of a real
data-parallel job see different samples), copied into the model's input tensors every step; the wait is that
copy. From files (scenario input-pipeline): a BatchLoader (engines.loaders: reader threads, prefetch) over this
rank's shard of the data directory, files[rank::world]; the wait is `loader.get()` plus the copy into the input
tensor, so a loader that cannot keep up shows as data wait, as in a real job. Imports torch (ranks only).
"""

from __future__ import annotations

import time
from typing import Any

__all__ = ["Source", "source_for", "SEED_BASE"]

SEED_BASE = 10_000  # rank r's in-memory inputs come from seed SEED_BASE + r


class Source:
    """`.next() -> (inputs, wait_s)`; `.close()` stops any loader threads."""

    def __init__(self, inputs: tuple[Any, ...], fetch: Any, close: Any, method: str):
        self.inputs, self._fetch, self._close, self.method = inputs, fetch, close, method

    def next(self) -> tuple[tuple[Any, ...], float]:
        started = time.perf_counter()
        self._fetch()
        return self.inputs, time.perf_counter() - started

    def close(self) -> None:
        self._close()


# ---- Public API
def source_for(spec: Any, rank: int, world: int, training: Any) -> Source:
    """The batches of `rank` of `world` for `training` (engines.backends.torch_backend.Training)."""
    import torch

    inputs = training.inputs
    sync = (lambda: torch.cuda.synchronize(inputs[0].device)) if inputs and inputs[0].device.type == "cuda" \
        else (lambda: None)
    if spec.scenario == "input-pipeline":
        return _from_files(torch, spec, rank, world, inputs, sync)
    generator = torch.Generator().manual_seed(SEED_BASE + rank)
    host = tuple(_seeded(torch, t, generator) for t in inputs)

    def fetch() -> None:
        for target, source in zip(inputs, host, strict=True):
            target.copy_(source)
        sync()

    return Source(inputs, fetch, lambda: None,
                  f"in memory: rank r's inputs drawn once with seed {SEED_BASE}+r, copied into the model's input "
                  "tensors each step (the data wait is that copy)")


# ---- Private API
def _seeded(torch: Any, tensor: Any, generator: Any) -> Any:
    """A host tensor shaped like `tensor`: normal floats, or ids below the example's largest id (in range)."""
    if tensor.is_floating_point():
        return torch.randn(tuple(tensor.shape), generator=generator).to(tensor.dtype)
    high = max(1, int(tensor.max().item()) + 1)
    return torch.randint(0, high, tuple(tensor.shape), generator=generator, dtype=tensor.dtype)


def _from_files(torch: Any, spec: Any, rank: int, world: int, inputs: tuple[Any, ...], sync: Any) -> Source:
    from engines import datafiles, loaders

    options = spec.scenario_options
    first = inputs[0]
    layout = datafiles.InputLayout("input", tuple(int(d) for d in first.shape[1:]),
                                   str(first.dtype).replace("torch.", ""))
    files = datafiles.list_files(options.data_dir)
    shard = files[rank::world]
    if not shard:
        raise datafiles.DataError(f"{options.data_dir} holds {len(files)} sample file(s) for {world} ranks, so rank "
                                  f"{rank} has none: give at least {world} files (labconsole make-data --count N)")
    datafiles.decode(shard[0], datafiles.read_file(shard[0], cold=False), layout)  # a bad file fails before timing
    cold = options.cache == "cold" and datafiles.can_drop_cache(options.data_dir)[0]
    loader = loaders.BatchLoader(shard, layout, int(first.shape[0]), options.loader_workers, cold,
                                 options.prefetch).start()

    def fetch() -> None:
        batch = loader.get()
        first.copy_(torch.from_numpy(batch.array))
        sync()

    return Source(inputs, fetch, loader.close,
                  f"files: rank r reads files[r::{world}] of {options.data_dir} with a BatchLoader of "
                  f"{options.loader_workers} thread(s), cache {'cold' if cold else 'warm'}; the data wait is "
                  "loader.get() plus the copy into the input tensor")
