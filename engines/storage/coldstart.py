"""Cold start decomposition: where a model file's start goes — read from storage, deserialize, copy to the
device, first inference — for each way of reading it (mmap, buffered read, O_DIRECT).

For each mode the file is dropped from the page cache (engines.storage.coldfiles; "warm" with why where that
cannot work), read into memory in that mode (engines.storage.coldstart_read), checked to be the bytes the safety
checks saw, deserialized from memory by the format's safe loader, moved to the device and run once on inputs
made from its declared shapes (engines.storage.coldstart_formats). One untimed warm-up pass comes first, so the
libraries' one-time set-up (imports, thread pools, kernels) is not charged to whichever mode runs first; its
duration is reported apart. Hostile files are refused before any timed step (pickles always; TorchScript unless
--trust-code).

Result (beyond the shared contract's keys):
  "stages": [{"mode", "used" (the mode actually used after a fallback), "read_s", "deserialize_s",
              "to_device_s" (None: no copy, see "to_device_note"), "first_inference_s" (None: see
              "first_inference_note"), "total_s", "read_note", "cache_state", "cache_note", "rounds" (with
              --rounds > 1: every round's seconds; the stage is the median round's)}, ...] — the stacked bar;
  "file": {"path", "format", "bytes", "sha256"}; "device"; "warmup_s"; "sandbox" (TorchScript only).
Figures: "<mode>_read_s", "<mode>_deserialize_s", "<mode>_to_device_s", "<mode>_first_inference_s",
"<mode>_total_s", "<mode>_read_mb_s", "file_mb".
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from engines.storage import coldfiles
from engines.storage.coldstart_options import validate

KIND = "coldstart"
__all__ = ["KIND", "result", "run", "validate"]


# ---- Public API
def run(options: dict[str, Any], progress: Callable[[dict], None]) -> dict[str, Any]:
    """Decompose the file's cold start for each read mode; the result described in the module docstring."""
    from engines.storage import coldstart_formats as formats

    opts = validate(options)
    path = Path(opts["file"])
    progress({"text": f"checking {path.name}", "fraction": 0.0})
    facts = formats.identify(path, opts["trust_code"])
    fmt, device = facts["format"], opts["device"]
    progress({"text": "warm-up pass (not counted)", "fraction": 0.05})
    started = time.perf_counter()
    _stage(path, fmt, facts, device, "buffered", drop_cache=False)
    warmup_s = time.perf_counter() - started
    samples: dict[str, list[dict[str, Any]]] = {mode: [] for mode in opts["modes"]}
    steps, done = len(opts["modes"]) * opts["rounds"], 0
    for round_index in range(opts["rounds"]):
        order = opts["modes"] if round_index % 2 == 0 else opts["modes"][::-1]  # no mode always goes first
        for mode in order:
            progress({"text": f"{mode}: drop the cache, read, deserialize, first inference "
                              f"(round {round_index + 1} of {opts['rounds']})", "fraction": 0.1 + 0.9 * done / steps})
            samples[mode].append(_stage(path, fmt, facts, device, mode, drop_cache=True))
            done += 1
    stages = [_median_round(samples[mode]) for mode in opts["modes"]]
    progress({"text": "done", "fraction": 1.0})
    return result(opts, facts, stages, warmup_s)


def result(opts: dict[str, Any], facts: dict[str, Any], stages: list[dict[str, Any]],
           warmup_s: float) -> dict[str, Any]:
    path = Path(opts["file"])
    figures: dict[str, float | None] = {"file_mb": facts["bytes"] / 1e6}
    for stage in stages:
        mode = stage["mode"]
        for key in ("read_s", "deserialize_s", "to_device_s", "first_inference_s", "total_s"):
            figures[f"{mode}_{key}"] = stage[key]
        figures[f"{mode}_read_mb_s"] = facts["bytes"] / 1e6 / stage["read_s"] if stage["read_s"] > 0 else None
    states = {s["cache_state"] for s in stages}
    cache_state = states.pop() if len(states) == 1 else "mixed"
    warm = [f"{s['mode']}: {s['cache_note']}" for s in stages if s["cache_state"] != "cold"]
    fallbacks = [f"{s['mode']}: {s['read_note']}" for s in stages if s["used"] != s["mode"]]
    reasons = (["warm — reads came from the page cache: " + "; ".join(warm)] if warm else []) + fallbacks
    return {
        "kind": KIND,
        "label": f"cold start: {path.name} ({facts['format']}, {facts['bytes'] / 1e6:.3g} MB) — "
                 f"{', '.join(opts['modes'])} on {opts['device']}",
        "passed": None,
        "status_reason": "; ".join(reasons),
        "cache_state": cache_state,
        "method": ("Per read mode: the file dropped from the page cache, read into memory (mmap with every page "
                   "faulted in, read(2), or O_DIRECT), checked to be the bytes the safety checks saw, deserialized "
                   "from memory by the format's safe loader (ONNX Runtime and safetensors take a bytes object, so a "
                   "mapped or aligned buffer is copied into one inside deserialize), copied to the device and run "
                   "once on inputs made from the declared shapes; wall-clock seconds per stage, after an untimed "
                   "warm-up pass."),
        "figures": figures,
        "stages": stages,
        "file": {"path": str(path), "format": facts["format"], "bytes": facts["bytes"], "sha256": facts["sha256"]},
        "device": opts["device"],
        "warmup_s": warmup_s,
        "sandbox": facts.get("sandbox"),
    }


# ---- Private API
def _median_round(rounds: list[dict[str, Any]]) -> dict[str, Any]:
    """One round: it. Several: the round with the median total, and every round's stage seconds."""
    if len(rounds) == 1:
        return rounds[0]
    chosen = dict(sorted(rounds, key=lambda r: r["total_s"])[len(rounds) // 2])
    keys = ("read_s", "deserialize_s", "to_device_s", "first_inference_s", "total_s", "cache_state")
    chosen["rounds"] = [{k: r[k] for k in keys} for r in rounds]
    states = {r["cache_state"] for r in rounds}
    chosen["cache_state"] = states.pop() if len(states) == 1 else "mixed"
    return chosen


def _stage(path: Path, fmt: str, facts: dict[str, Any], device: str, mode: str, drop_cache: bool) -> dict[str, Any]:
    from engines.storage import coldstart_formats as formats
    from engines.storage import coldstart_read

    cache_state, cache_note = coldfiles.drop([path], path.parent) if drop_cache else ("warm", "warm-up pass")
    started = time.perf_counter()
    data, info = coldstart_read.read(path, mode)
    read_s = time.perf_counter() - started
    formats.same_bytes(data, facts)
    started = time.perf_counter()
    loaded = formats.deserialize(fmt, data, facts)
    deserialize_s = time.perf_counter() - started
    loaded, to_device_s, to_device_note = formats.to_device(fmt, loaded, device)
    inference_s, inference_note = formats.first_inference(fmt, loaded, facts, device)
    del loaded, data
    total = read_s + deserialize_s + (to_device_s or 0.0) + (inference_s or 0.0)
    return {"mode": mode, "used": info["used"], "read_s": read_s, "deserialize_s": deserialize_s,
            "to_device_s": to_device_s, "first_inference_s": inference_s, "total_s": total,
            "read_note": info["note"], "to_device_note": to_device_note, "first_inference_note": inference_note,
            "cache_state": cache_state, "cache_note": cache_note}
