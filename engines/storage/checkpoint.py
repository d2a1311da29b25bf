"""The checkpoint card: how long a state dict takes to save and restore on a storage path, per format, and what
that costs a training job.

The state is a catalog model's or a synthetic shard of a 1B/8B/70B model (engines.storage.checkpoint_state,
which states its sizing assumption and any scaling). Formats: `torch` (torch.save / torch.load weights_only),
`safetensors` (engines.storage.checkpoint_formats) and `dcp` (torch.distributed.checkpoint with --ranks local
processes writing at once: engines.storage.checkpoint_dcp). Every save is timed to fsync, every restore is read
after the files were dropped from the page cache (or labelled "warm" with why), and every restore is checked bit
for bit. The training cost is Young's interval and lost fraction (engines.storage.young) at --mtbf-hours. The
scratch folder is removed afterwards whatever happens.

Result (beyond the shared contract's keys):
  "formats": {name: {"save_s", "save_gb_s", "load_s", "load_gb_s", "aggregate_save_gb_s", "aggregate_load_gb_s",
              "bytes" (on disk, all ranks), "rank_bytes", "ranks", "per_rank_save_s": [...],
              "per_rank_load_s": [...], "spread_percent", "load_spread_percent", "cache_state", "cache_note",
              "how", "rounds" (with --rounds > 1: every round's save/load figures; the entry is the median
              round's)}}  — durations are the slowest rank's, GB/s the lowest rank's;
  "young": {name: {"mtbf_h", "save_s", "interval_s", "lost_fraction", "restore_fraction", "note", "basis"}};
  "state": {"source", "params", "bytes" (per rank), "scaled": null | {"full_bytes", "bytes", "factor", "why"},
            "tensors", "assumption", ...};
  "directory", "filesystem".
Figures: "<format>_save_gb_s", "<format>_load_gb_s", "<format>_save_s", "<format>_load_s",
"<format>_lost_percent", "<format>_interval_min", "shard_gb".
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from engines.storage import young as young_model
from engines.storage.checkpoint_options import validate
from engines.storage.errors import StorageError

KIND = "checkpoint"
SCRATCH_PREFIX = ".labconsole-checkpoint-"  # + the benchmark's pid: a folder whose process is gone is stale
__all__ = ["KIND", "result", "run", "validate"]


# ---- Public API
def run(options: dict[str, Any], progress: Callable[[dict], None]) -> dict[str, Any]:
    """Save and cold-restore the state in each format; the checkpoint card's result (module docstring)."""
    from engines.storage import checkpoint_state

    opts = validate(options)
    progress({"text": "sizing the state dict", "fraction": 0.0})
    state_info = checkpoint_state.plan(opts)
    directory = Path(opts["directory"])
    _check_room(state_info["bytes"], opts, directory)
    _remove_stale(directory)
    scratch = Path(tempfile.mkdtemp(prefix=f"{SCRATCH_PREFIX}{os.getpid()}-", dir=directory))
    samples: dict[str, list[dict[str, Any]]] = {name: [] for name in opts["formats"]}
    steps, done = len(opts["formats"]) * opts["rounds"], 0
    try:
        state = None
        if any(f != "dcp" for f in opts["formats"]):
            progress({"text": f"building a {state_info['bytes'] / 1e9:.3f} GB state dict", "fraction": 0.02})
            state = checkpoint_state.build(opts, 0)
        for round_index in range(opts["rounds"]):
            # rounds alternate the order (A B C, C B A, …): a disk that is slower at first favours no format
            order = opts["formats"] if round_index % 2 == 0 else opts["formats"][::-1]
            for name in order:
                what = f"{opts['ranks']} ranks save and load their shards" if name == "dcp" else \
                    "save (fsync), drop the cache, load"
                progress({"text": f"{name}: {what} (round {round_index + 1} of {opts['rounds']})",
                          "fraction": done / steps})
                samples[name].append(_measure(name, state, opts, scratch, state_info["bytes"], round_index))
                done += 1
        del state
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    formats = {name: _combine(entries) for name, entries in samples.items()}
    progress({"text": "done", "fraction": 1.0})
    return result(opts, state_info, formats, directory)


def result(opts: dict[str, Any], state_info: dict[str, Any], formats: dict[str, dict[str, Any]],
           directory: Path) -> dict[str, Any]:
    """The contract's keys, figures, the per-format entries and Young's cost per format."""
    from engines.datafiles import filesystem_type

    scaled = state_info.get("scaled")
    young: dict[str, dict[str, Any]] = {}
    figures: dict[str, float | None] = {"shard_gb": state_info["bytes"] / 1e9}
    for name, entry in formats.items():
        save_s, basis = entry["save_s"], "the measured save duration (slowest rank)"
        load_s = entry["load_s"]
        if scaled and entry["save_gb_s"]:
            save_s = scaled["full_bytes"] / 1e9 / entry["save_gb_s"]
            load_s = scaled["full_bytes"] / 1e9 / entry["load_gb_s"] if entry["load_gb_s"] else None
            basis = (f"projected, not measured: the full {scaled['full_bytes'] / 1e9:.2f} GB shard at the measured "
                     f"{entry['save_gb_s']:.3g} GB/s (assumes the rate holds at the full size)")
        young[name] = {**young_model.young(save_s, opts["mtbf_hours"], load_s), "basis": basis}
        lost = young[name]["lost_fraction"]
        interval = young[name]["interval_s"]
        figures.update({f"{name}_save_gb_s": entry["save_gb_s"], f"{name}_load_gb_s": entry["load_gb_s"],
                        f"{name}_save_s": entry["save_s"], f"{name}_load_s": entry["load_s"],
                        f"{name}_lost_percent": 100 * lost if lost is not None else None,
                        f"{name}_interval_min": interval / 60 if interval is not None else None})
    states = {e["cache_state"] for e in formats.values()}
    cache_state = states.pop() if len(states) == 1 else "mixed"
    warm = [f"{n}: {e['cache_note']}" for n, e in formats.items() if e["cache_state"] != "cold"]
    size = f"{state_info['bytes'] / 1e9:.3g} GB"
    if scaled:
        size += f" of a {scaled['full_bytes'] / 1e9:.3g} GB shard"
    names = ", ".join(f"dcp×{opts['ranks']}" if n == "dcp" else n for n in formats)
    return {
        "kind": KIND,
        "label": f"checkpoint: {state_info['source']} ({size}) — {names} on {directory}",
        "passed": None,
        "status_reason": ("warm — restores read the page cache, not storage: " + "; ".join(warm)) if warm else "",
        "cache_state": cache_state,
        "method": ("Each format saved the state timed to fsync, its files were dropped from the page cache, and it "
                   "was read back and checked bit for bit; durations are the slowest rank's, GB/s the lowest "
                   f"rank's. Training cost: Young's interval √(2·δ·MTBF) at MTBF {opts['mtbf_hours']:g} h "
                   f"({young_model.MTBF_ASSUMPTION})."),
        "figures": figures,
        "formats": formats,
        "young": young,
        "state": state_info,
        "directory": str(directory),
        "filesystem": filesystem_type(directory),
    }


# ---- Private API
def _remove_stale(directory: Path) -> None:
    """Scratch folders left by a benchmark that was killed (no `finally` runs on SIGKILL): their pid is gone."""
    for folder in directory.glob(f"{SCRATCH_PREFIX}*"):
        pid = folder.name[len(SCRATCH_PREFIX):].split("-", 1)[0]
        if not pid.isdigit() or not folder.is_dir() or folder.is_symlink():
            continue
        try:
            os.kill(int(pid), 0)
        except ProcessLookupError:
            shutil.rmtree(folder, ignore_errors=True)
        except (PermissionError, OverflowError):
            continue  # another user's live process, or not a pid at all: leave it


def _measure(name: str, state: Any, opts: dict[str, Any], scratch: Path, rank_bytes: int,
             round_index: int) -> dict[str, Any]:
    if name != "dcp":
        from engines.storage import checkpoint_formats

        return checkpoint_formats.measure(name, state, scratch)
    from engines.storage import checkpoint_dcp

    folder = scratch / f"dcp-run-{round_index}"
    folder.mkdir()
    try:
        return checkpoint_dcp.measure(opts, folder, opts["ranks"], rank_bytes)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _combine(entries: list[dict[str, Any]]) -> dict[str, Any]:
    """One round: its entry. Several: the round with the median save duration, and every round's figures."""
    if len(entries) == 1:
        return entries[0]
    chosen = dict(sorted(entries, key=lambda e: e["save_s"])[len(entries) // 2])
    chosen["rounds"] = [{k: e[k] for k in ("save_s", "save_gb_s", "load_s", "load_gb_s", "cache_state")}
                        for e in entries]
    states = {e["cache_state"] for e in entries}
    chosen["cache_state"] = states.pop() if len(states) == 1 else "mixed"
    chosen["cache_note"] = "; ".join(dict.fromkeys(e["cache_note"] for e in entries))
    return chosen


def _check_room(rank_bytes: int, opts: dict[str, Any], directory: Path) -> None:
    """Refuse up front what the disk or the memory here cannot hold (a half-written checkpoint helps nobody)."""
    from engines.host_memory import available_bytes

    writers = opts["ranks"] if "dcp" in opts["formats"] else 1
    disk_need = int(rank_bytes * writers * 1.05) + (64 << 20)
    free = shutil.disk_usage(directory).free
    if disk_need > free:
        raise StorageError(f"{directory} has {free / 1e9:.2f} GB free; the checkpoint needs {disk_need / 1e9:.2f} GB "
                           f"({writers} × {rank_bytes / 1e9:.2f} GB)", "lower --shard-gb (or --ranks), or choose "
                           "another --dir")
    memory = available_bytes()
    # each writer holds its state and the restored copy; the benchmark keeps its own state while DCP's ranks run
    local = any(f != "dcp" for f in opts["formats"])
    memory_need = 2 * rank_bytes * writers + (rank_bytes if local and writers > 1 else 0) + (512 << 20)
    if memory and memory_need > memory:
        raise StorageError(f"{memory / 1e9:.2f} GB of memory is available; the state and its restored copy need "
                           f"{memory_need / 1e9:.2f} GB ({writers} × 2 × {rank_bytes / 1e9:.2f} GB)",
                           "lower --shard-gb (or --ranks) so the shard fits in memory twice per rank")
