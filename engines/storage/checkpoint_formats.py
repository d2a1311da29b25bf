"""One format's save and cold restore of a state dict in one process: torch.save and safetensors.

Each save is timed to the end of fsync (of the file and of its folder, so the bytes and the name are on
storage, not only in the page cache — a timing without it is the page cache's speed); the file is then dropped
from the page cache (engines.storage.coldfiles) and read back, timed to the last tensor in memory:
torch.load(weights_only=True) — a checkpoint is data, never unpickled as code — and safetensors' own reader
(the `pread` backend, which reads every byte; its default `mmap` backend only maps the file and would time
nothing). What came back is compared with what was saved, bit for bit, outside the timings. The file is removed
afterwards whatever happens. DCP, which needs several processes, is engines.storage.checkpoint_dcp.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from engines.storage import coldfiles

# name: (file suffix, how it is saved and loaded, for the result's method)
FORMATS = {
    "torch": (".pt", "torch.save to an open file + fsync; torch.load(map_location='cpu', weights_only=True)"),
    "safetensors": (".safetensors", "safetensors.torch.save_file + fsync; safetensors.torch.load_file "
                                    "(backend='pread': every byte read)"),
}


# ---- Public API
def measure(name: str, state: dict[str, Any], folder: Path) -> dict[str, Any]:
    """Save `state` in `folder` as format `name`, drop it from the cache, load it back: the format's entry."""
    from engines.storage import checkpoint_state

    suffix, how = FORMATS[name]
    path = folder / f"state{suffix}"
    save, load = _savers()[name]
    try:
        started = time.perf_counter()
        save(state, path)
        _fsync(path)
        save_s = time.perf_counter() - started
        size = path.stat().st_size
        cache_state, cache_note = coldfiles.drop([path], folder)
        started = time.perf_counter()
        loaded = load(path)
        load_s = time.perf_counter() - started
    finally:
        path.unlink(missing_ok=True)
    if not checkpoint_state.same(state, loaded):
        raise RuntimeError(f"the {name} checkpoint loaded back with other tensors than were saved: the storage at "
                           f"{folder} returned other bytes than were written")
    return entry(save_s=save_s, load_s=load_s, size=size, per_rank_save=[save_s], per_rank_load=[load_s],
                 cache_state=cache_state, cache_note=cache_note, how=how)


def entry(*, save_s: float, load_s: float, size: int, per_rank_save: list[float], per_rank_load: list[float],
          cache_state: str, cache_note: str, how: str, rank_bytes: int | None = None) -> dict[str, Any]:
    """The result's "formats" entry: durations of the slowest rank, GB/s of the lowest, the per-rank spread."""
    rank_bytes = rank_bytes or size
    save_rates = [rank_bytes / 1e9 / s for s in per_rank_save if s > 0]
    load_rates = [rank_bytes / 1e9 / s for s in per_rank_load if s > 0]
    return {
        "save_s": save_s, "save_gb_s": min(save_rates) if save_rates else None,
        "load_s": load_s, "load_gb_s": min(load_rates) if load_rates else None,
        "aggregate_save_gb_s": size / 1e9 / save_s if save_s > 0 else None,
        "aggregate_load_gb_s": size / 1e9 / load_s if load_s > 0 else None,
        "bytes": int(size), "rank_bytes": int(rank_bytes), "ranks": len(per_rank_save),
        "per_rank_save_s": list(per_rank_save), "per_rank_load_s": list(per_rank_load),
        "spread_percent": spread(per_rank_save), "load_spread_percent": spread(per_rank_load),
        "cache_state": cache_state, "cache_note": cache_note, "how": how,
    }


def spread(values: list[float]) -> float | None:
    """(slowest − fastest) / fastest, in percent; None with fewer than two ranks (nothing to spread)."""
    if len(values) < 2 or min(values) <= 0:
        return None
    return 100.0 * (max(values) - min(values)) / min(values)


# ---- Private API
def _savers() -> dict[str, tuple[Callable[[dict, Path], None], Callable[[Path], dict]]]:
    import torch
    from safetensors import torch as st

    def torch_save(state: dict, path: Path) -> None:
        with open(path, "wb") as out:
            torch.save(state, out)

    def torch_load(path: Path) -> dict:
        return torch.load(path, map_location="cpu", weights_only=True)

    def st_load(path: Path) -> dict:
        try:
            return st.load_file(path, backend="pread")
        except TypeError:  # safetensors < 0.8 has no backend: read the bytes, then deserialize them
            with open(path, "rb") as handle:
                return st.load(handle.read())

    return {"torch": (torch_save, torch_load), "safetensors": (st.save_file, st_load)}


def _fsync(path: Path) -> None:
    """The file's data and its directory entry on storage."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
    folder = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(folder)
    finally:
        os.close(folder)
