"""Feed benchmark (MLPerf Storage / DLIO style): how many emulated accelerators a storage path keeps busy.

Each emulated accelerator waits for a batch and then "computes" for its workload's published step time (it
sleeps); real reader processes read real files from --data-dir (cold: each file's cached pages dropped and the
drop checked before it is read). Accelerator utilization AU = compute time / wall time, first step excluded, per
accelerator and overall (the mean). With `find_max` the largest N whose AU meets the workload's threshold (90% for
U-Net3D and ResNet-50, 70% for CosmoFlow) is searched by doubling then bisection, a short trial per N.

A result passes only when the data was read cold: either every file's drop was proven (cachestat or mincore found its
pages gone) or the data set is larger than this machine's RAM (MemTotal), so the page cache cannot hold it. Memory
file systems (tmpfs) and --warm runs are "warm" and cannot pass. When the readers were runnable (CPU-bound) most of
a failing trial, the result says the READERS, not the device, limited the feed, and names the lever.

Options (a JSON-able dict; console/cli/storage_feed.py builds it):
  data_dir, workload (unet3d|resnet50|cosmoflow|custom), gpu (h100|a100), sample_bytes, batch, compute_ms,
  au_threshold_percent (custom only), accelerators (int) or find_max (bool) with max_accelerators, readers,
  format ("any"|"npy"|"raw"), cold (bool, default True), duration_s (per trial), min_steps (per accelerator),
  model (a catalog model whose real forward pass replaces the sleep; fixed N only) and device (cpu|cuda).

Result, beyond the shared contract (kind, label, passed, status_reason, cache_state, method, figures, latency_ns):
  workload        the workload's numbers and their source (engines.storage.workloads)
  accelerators    N of the reported trial (find_max: the largest passing N, or 1 when none passed)
  readers         R reader processes
  au_per_accelerator  AU in percent per accelerator (reported trial)
  steps           measured steps per accelerator (first step excluded), and the first step's wait in ms
  find_max        {"threshold": percent, "series": [[n, au_percent], ...] in the order tried, "max_passing": N}
                  when asked (None otherwise)
  limited_by      "device" | "readers" | "none" (for find_max: the first failing trial's)
  lever           what to change, in words, for the limit found
  read_latency_ms {p50, p90, p99, count, note}: one sample's read (per read call group, not per batch)
  data_set        dir, file system, files, bytes, mean sample bytes, MemTotal, and how cold was established
  trials          per trial: accelerators, au_percent, read_mb_s, samples_per_s, reader_busy_percent, limited_by
  data_dir, data_device (engines.block_device.describe), compute_ms, sample_bytes (as read), batch, dataset_bytes,
  ram_bytes, reader_busy_fraction, read_ms_per_sample — the names the storage verdict and whatif read
  model_check     with a model: model, device, batch, step_ms_alone, step_ms_in_trial, au_real_percent,
                  au_emulated_percent (the same trial with the model's step time slept), difference_points
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

from engines.storage import au as au_math
from engines.storage.errors import StorageError
from engines.storage.trial import TrialPlan, TrialResult, run_trial
from engines.storage.workloads import Workload, from_options

FORMATS = {"any": (".npy", ".bin", ".f32", ".raw"), "npy": (".npy",), "raw": (".bin", ".f32", ".raw")}
MAX_LATENCIES = 50_000  # latency_ns kept with the run: every read up to this, evenly thinned beyond
DEFAULTS = {"readers": 4, "duration_s": 5.0, "min_steps": 3, "max_accelerators": 256, "format": "any",
            "cold": True, "gpu": "h100"}
Progress = Callable[[dict[str, Any]], None]


# ---- Public API
def run(options: Mapping[str, Any], progress: Progress | None = None) -> dict[str, Any]:
    """Run the feed benchmark described by `options`; see the module docstring for both dicts."""
    say = progress or (lambda _event: None)
    opts = {**DEFAULTS, **{k: v for k, v in options.items() if v is not None}}
    if opts.get("model") and opts.get("workload") == "custom" and opts.get("compute_ms") is None:
        opts["compute_ms"] = 1.0  # a placeholder: the model's measured step replaces it below
    workload = from_options(opts)
    data = inspect_data(str(opts.get("data_dir") or ""), str(opts["format"]), workload, int(opts["readers"]))
    cold = bool(opts["cold"]) and data["can_drop"]
    plan = TrialPlan(accelerators=1, readers=int(opts["readers"]), batch=workload.batch,
                     compute_s=workload.compute_s, sample_bytes=workload.sample_bytes,
                     samples_per_file=workload.samples_per_file if workload.name != "custom" else 0,
                     files=data["files"], cold=cold, check_npy=opts["format"] == "npy",
                     duration_s=_positive(opts, "duration_s"), min_steps=max(2, int(opts["min_steps"])),
                     stall_s=max(30.0, 20 * workload.compute_s))
    real = _real_model(opts, workload, plan)
    if real is not None:
        workload = replace(workload, compute_s=real["step_ms_alone"] / 1e3,
                           source=f"{workload.source}; compute: {real['model']}'s measured step on {real['device']}")
        plan.compute_s = workload.compute_s
    trials: list[TrialResult] = []

    def trial(n: int) -> float | None:
        say({"text": f"trial: {n} accelerator(s), {plan.readers} reader(s), {plan.duration_s:g} s", "fraction": None})
        plan.accelerators = n
        result = run_trial(plan)
        result.limited_by = au_math.limited_by(result.au, workload.au_threshold, result.reader_busy)
        trials.append(result)
        say({"text": f"{n} accelerator(s): AU {_pct(result.au)}, {_mb_s(result):.0f} MB/s, "
                     f"limited by {result.limited_by}", "fraction": None})
        return result.au

    search = None
    if opts.get("find_max"):
        best, series = au_math.find_max(trial, workload.au_threshold, 1, int(opts["max_accelerators"]))
        search = {"threshold": workload.au_threshold * 100, "max_passing": best,
                  "series": [[n, None if value is None else value * 100] for n, value in series]}
        reported = _trial_for(trials, best or 1)
        failing = [t for t in trials if t.limited_by != "none" and t.accelerators > best]
        limit = min(failing, key=lambda t: t.accelerators).limited_by if failing else "none"
    else:
        n = int(opts.get("accelerators") or 1)
        if n < 1:
            raise StorageError(f"--accelerators {n}", "give at least 1 emulated accelerator, or --find-max")
        trial(n)
        reported, limit = trials[0], trials[0].limited_by
        if real is not None:  # the same trial with the emulation sleeping the model's own step time
            step_fn, plan.step_fn = plan.step_fn, None
            say({"text": f"emulation check: {n} accelerator(s) sleeping {plan.compute_s * 1e3:.2f} ms",
                 "fraction": None})
            emulated = run_trial(plan)
            plan.step_fn = step_fn
            real.update(_model_check(trials[0], emulated))
    say({"text": "done", "fraction": 1.0})
    result = _result(workload, opts, data, bool(opts["cold"]), trials, reported, search, limit)
    if real is not None:
        result["model_check"] = {k: v for k, v in real.items() if k != "step_fn"}
        result["figures"]["emulated_au_percent"] = real["au_emulated_percent"]
        result["method"] = (
            f"{reported.accelerators} accelerator(s) each waited for a batch of {workload.batch} and ran a real "
            f"{real['model']} forward pass on {real['device']} ({real['step_ms_alone']:.2f} ms alone, "
            f"{_ms_text(real['step_ms_in_trial'])} during the trial); {_from_readers(result['method'], len(reported.readers))}"
            .replace("AU = sleep time", "AU = step time")
            + f" Emulation check: the same trial with {real['step_ms_alone']:.2f} ms slept per step gave AU "
              f"{_pct_text(real['au_emulated_percent'])} against {_pct_text(real['au_real_percent'])} with the real "
              "model.")
    return result


def inspect_data(directory: str, fmt: str, workload: Workload, readers: int) -> dict[str, Any]:
    """The data set: its files (sorted), bytes, file system, whether pages can be dropped, and RAM to compare."""
    from engines.datafiles import DataError, can_drop_cache, filesystem_type, list_files

    if not directory:
        raise StorageError("no --data-dir given", "give the directory of sample files to read (labconsole "
                           "make-data --workload W --dir DIR --files N writes one)")
    if fmt not in FORMATS:
        raise StorageError(f"unknown --format {fmt!r}", f"choose one of {', '.join(FORMATS)}")
    if readers < 1:
        raise StorageError(f"--readers {readers}", "give at least 1 reader process")
    try:
        files = list_files(directory, FORMATS[fmt])
    except DataError as exc:
        shaped = workload.name if workload.name != "custom" else "unet3d|resnet50|cosmoflow"
        raise StorageError(str(exc).replace("--model MODEL --count N", f"--workload {shaped} --files N"),
                           "") from None
    sizes = [f.stat().st_size for f in files]
    if readers > len(files):
        raise StorageError(f"{readers} readers but {directory} holds {len(files)} file(s): each reader reads its "
                           "own files", f"give --readers {len(files)} or fewer, or write more files")
    can_drop, drop_reason = can_drop_cache(directory)
    samples = (sum(max(1, s // workload.sample_bytes) for s in sizes) if workload.name == "custom"
               else workload.samples_per_file * len(files))
    from engines.block_device import describe

    return {"dir": os.path.realpath(directory), "device": describe(directory), "files": [str(f) for f in files],
            "bytes": sum(sizes),
            "filesystem": filesystem_type(directory), "can_drop": can_drop, "drop_reason": drop_reason,
            "samples": samples, "mean_sample_bytes": sum(sizes) / max(1, samples), "mem_total_bytes": mem_total()}


def mem_total() -> int | None:
    """This machine's RAM in bytes (/proc/meminfo MemTotal), None where it cannot be read."""
    try:
        with open("/proc/meminfo", encoding="ascii", errors="replace") as handle:
            for line in handle:
                if line.startswith("MemTotal:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def cache_verdict(requested_cold: bool, data: Mapping[str, Any], readers: list[dict[str, Any]]) -> tuple[str, str]:
    """("cold" | "warm" | "mixed", why) from how the run read and what the readers' drop checks found."""
    ram, size = data.get("mem_total_bytes"), int(data["bytes"])
    bigger = bool(ram) and size > ram
    sized = (f"the data set ({size / 1e9:.2f} GB) is larger than RAM ({ram / 1e9:.1f} GB)" if bigger else
             f"the data set ({size / 1e9:.2f} GB) fits in RAM ({ram / 1e9:.1f} GB)" if ram else
             "RAM size unknown")
    if not requested_cold:
        return ("cold", f"--warm, but {sized}, so the page cache cannot hold it") if bigger else (
            "warm", f"--warm: pages were not dropped and {sized}")
    if not data["can_drop"]:
        return ("cold", f"{data['drop_reason']}; but {sized}") if bigger else (
            "warm", f"{data['drop_reason']}, and {sized}")
    proven = sum(r["proven_cold"] for r in readers)
    cached = sum(r["still_cached"] for r in readers)
    unverified = sum(r["unverified"] for r in readers)
    reads = proven + cached + unverified
    checks = ", ".join(sorted({how for r in readers for how in r.get("checks", {})} - {"none"})) or "no check"
    if cached:
        state = "mixed" if proven else "warm"
        return state, (f"{cached} of {reads} file reads still had pages cached after three posix_fadvise(DONTNEED) "
                       f"drops ({checks}): dirty pages not yet written back, another reader of the same files, or "
                       "a file system that ignores the drop; sync, or use a data set larger than RAM")
    if unverified:
        if bigger:
            return "cold", f"the drop could not be verified here (no cachestat, mincore or RWF_NOWAIT), but {sized}"
        return "warm", (f"the drop could not be verified (no cachestat, mincore or RWF_NOWAIT) on {unverified} file "
                        f"reads and {sized}; use a data set larger than RAM")
    return "cold", f"every file's pages were dropped and counted gone ({checks}) before each of {proven} file reads"


# ---- Private API
def _result(workload: Workload, opts: Mapping[str, Any], data: dict[str, Any], requested_cold: bool,
            trials: list[TrialResult], reported: TrialResult, search: dict[str, Any] | None,
            limit: str) -> dict[str, Any]:
    all_readers = [r for t in trials for r in t.readers]
    cache_state, cache_reason = cache_verdict(requested_cold, data, all_readers)
    cold = requested_cold and data["can_drop"]
    threshold = workload.au_threshold
    latencies = reported.latencies
    lat_ms = au_math.percentiles_ms([pair[1] for pair in latencies])
    busy = _mean(reported.reader_busy)
    if search is not None:
        met = search["max_passing"] >= 1
        what = (f"{search['max_passing']} accelerator(s) keep AU ≥ {threshold:.0%}" if met else
                f"not even 1 accelerator reaches AU {threshold:.0%} ({_pct(trials[0].au)})")
    else:
        met = reported.au is not None and reported.au >= threshold
        what = f"AU {_pct(reported.au)} with {reported.accelerators} accelerator(s) (threshold {threshold:.0%})"
    passed = met and cache_state == "cold"
    if cache_state != "cold":
        reason = f"{cache_state} data set, cannot pass: {cache_reason}"
    elif not met:
        reason = f"{what}: limited by the {limit}" if limit in ("device", "readers") else what
    else:
        reason = ""
    gpu = f" ({workload.gpu.upper()})" if workload.gpu else ""
    count = (f"find-max {search['max_passing']} accelerator(s)" if search is not None
             else f"{reported.accelerators} accelerator(s)")
    best_read = max((_mb_s(t) for t in trials), default=0.0)
    figures = {
        "au_percent": _pct_value(reported.au),
        "au_min_percent": _pct_value(min((a for a in reported.au_per_accelerator if a is not None), default=None)),
        "au_threshold_percent": threshold * 100,
        "accelerators": reported.accelerators,
        "max_accelerators": search["max_passing"] if search is not None else None,
        "samples_per_s": _samples_per_s(reported),
        "read_mb_s": _mb_s(reported),
        "best_read_mb_s": best_read,
        "arithmetic_max_accelerators": (best_read * 1e6 * workload.compute_s /
                                        (data["mean_sample_bytes"] * workload.batch * threshold)),
        "p50_read_ms": lat_ms["p50"], "p90_read_ms": lat_ms["p90"], "p99_read_ms": lat_ms["p99"],
        "reader_busy_percent": None if busy is None else busy * 100,
        "first_step_wait_ms": _mean([s[0][0] * 1e3 for s in reported.steps if s]),
    }
    scaled = abs(data["mean_sample_bytes"] - workload.sample_bytes) > 0.05 * workload.sample_bytes
    return {
        "kind": "feed",
        "label": f"feed {workload.name}{gpu}: {count}, {len(reported.readers)} reader(s) — {data['dir']}",
        "passed": passed,
        "status_reason": reason,
        "cache_state": cache_state,
        "method": _method(workload, data, cold, cache_reason, reported, scaled),
        "figures": figures,
        "latency_ns": _thin([[int(t), int(d)] for t, d in latencies], MAX_LATENCIES),
        "workload": workload.as_dict(),
        "accelerators": reported.accelerators,
        "readers": len(reported.readers),
        "au_per_accelerator": [_pct_value(a) for a in reported.au_per_accelerator],
        "steps": {"measured_per_accelerator": [max(0, len(s) - 1) for s in reported.steps],
                  "first_step_wait_ms": [s[0][0] * 1e3 if s else None for s in reported.steps]},
        "find_max": search,
        "limited_by": limit,
        "lever": _lever(limit, len(reported.readers), data),
        "read_latency_ms": lat_ms,
        "data_set": {key: data[key] for key in ("dir", "filesystem", "bytes", "samples", "mean_sample_bytes",
                                                "mem_total_bytes")}
                    | {"files": len(data["files"]), "cold_reason": cache_reason, "scaled": scaled},
        "trials": [_trial_summary(t) for t in trials],
        # what the storage verdict and whatif read (console.analysis.storage.feed_facts), at the top level
        "data_dir": data["dir"], "data_device": data["device"], "compute_ms": workload.compute_s * 1e3,
        "sample_bytes": data["mean_sample_bytes"], "batch": workload.batch, "dataset_bytes": data["bytes"],
        "ram_bytes": data["mem_total_bytes"], "reader_busy_fraction": busy,
        "read_ms_per_sample": (sum(d for _, d in latencies) / len(latencies) / 1e6) if latencies else None,
    }


def _real_model(opts: Mapping[str, Any], workload: Workload, plan: TrialPlan) -> dict[str, Any] | None:
    """With options["model"]: the real step put in the plan, and its description (step time measured alone)."""
    name = opts.get("model")
    if not name:
        return None
    if opts.get("find_max"):
        raise StorageError("--model runs a fixed number of accelerators", "give --accelerators N instead of "
                           "--find-max (each accelerator runs the real model)")
    from engines.storage.realstep import model_step

    step, described = model_step(str(name), workload.batch, str(opts.get("device") or "cpu"))
    plan.step_fn = step
    return described


def _model_check(real: TrialResult, emulated: TrialResult) -> dict[str, Any]:
    """How far the emulation's AU is from the real model's on the same data, readers and accelerators."""
    in_trial = [c for steps in real.steps for _, c in steps[1:]]
    au_real, au_emul = _pct_value(real.au), _pct_value(emulated.au)
    return {"au_real_percent": au_real, "au_emulated_percent": au_emul,
            "difference_points": None if au_real is None or au_emul is None else au_emul - au_real,
            "step_ms_in_trial": sum(in_trial) / len(in_trial) * 1e3 if in_trial else None,
            "emulated_read_mb_s": _mb_s(emulated), "emulated_reader_busy_percent": _pct_value(
                _mean(emulated.reader_busy))}


def _from_readers(method: str, readers: int) -> str:
    """The emulation's method text from its readers' part on (the compute part is replaced for a real model)."""
    marker = f"{readers} reader process(es)"
    return method[method.index(marker):] if marker in method else method


def _ms_text(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.2f} ms"


def _pct_text(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.1f}%"


def _method(workload: Workload, data: dict[str, Any], cold: bool, cache_reason: str, trial: TrialResult,
            scaled: bool) -> str:
    text = (f"{trial.accelerators} emulated accelerator(s) each waited for a batch of {workload.batch} and slept "
            f"{workload.compute_s * 1e3:g} ms per step ({workload.source}); {len(trial.readers)} reader process(es) "
            f"read {len(data['files'])} file(s) sample by sample ({'cold: ' if cold else 'warm: '}{cache_reason}). "
            f"AU = sleep time / wall time from the second step on, mean over accelerators; reader limit told from "
            f"their {trial.extra.get('busy_source', 'state')}.")
    if scaled:
        text += (f" Samples here are {data['mean_sample_bytes']:,.0f} bytes, not the workload's "
                 f"{workload.sample_bytes:,} (a scaled data set): AU is for these samples.")
    if _hypervisor():
        text += " This is a virtual machine: the host may cache the disk image below this OS's page cache."
    return text


def _lever(limit: str, readers: int, data: Mapping[str, Any]) -> str:
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    if limit == "readers":
        more = (f"more reader processes (--readers, {readers} now; this machine has {cores} usable core(s))"
                if readers < cores else
                f"more CPU cores for the readers ({readers} readers already fill {cores} core(s)), or a cheaper "
                "read path (larger reads, less decoding)")
        return f"the readers' CPU, not the device, limits the feed: {more}"
    if limit == "device":
        fs = data.get("filesystem") or "its file system"
        disk = (data.get("device") or {}).get("device")
        where = f"{disk}, behind {data['dir']}" if disk else f"the device behind {data['dir']}"
        return (f"{where} ({fs}) limits the feed: a faster device, the page cache, or "
                f"more reads in flight (--readers, {readers} now) if it is not yet at its throughput ceiling")
    return "the storage kept the accelerators at the threshold: nothing to change"


def _trial_for(trials: list[TrialResult], n: int) -> TrialResult:
    return next((t for t in reversed(trials) if t.accelerators == n), trials[0])


def _trial_summary(t: TrialResult) -> dict[str, Any]:
    busy = _mean(t.reader_busy)
    return {"accelerators": t.accelerators, "au_percent": _pct_value(t.au), "read_mb_s": _mb_s(t),
            "samples_per_s": _samples_per_s(t), "reader_busy_percent": None if busy is None else busy * 100,
            "limited_by": t.limited_by, "wall_s": t.wall_s}


def _samples_per_s(t: TrialResult) -> float | None:
    """Samples consumed per second by all accelerators over their measured steps (first step excluded)."""
    rates = []
    for steps in t.steps:
        measured = steps[1:]
        wall = sum(w + c for w, c in measured)
        if not measured or wall <= 0:
            return None
        rates.append(len(measured) / wall)
    batch = t.extra.get("batch")
    return sum(rates) * batch if batch else sum(rates)


def _mb_s(t: TrialResult) -> float:
    return t.read_bytes / t.wall_s / 1e6 if t.wall_s > 0 else 0.0


def _thin(pairs: list[list[int]], limit: int) -> list[list[int]]:
    if len(pairs) <= limit:
        return pairs
    step = len(pairs) / limit
    return [pairs[int(i * step)] for i in range(limit)]


def _positive(opts: Mapping[str, Any], key: str) -> float:
    value = float(opts[key])
    if not value > 0:
        raise StorageError(f"{key.replace('_s', '')} {value:g} s", "give a trial duration > 0 seconds")
    return value


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.1%}"


def _pct_value(value: float | None) -> float | None:
    return None if value is None else value * 100


def _mean(values: list[Any]) -> float | None:
    values = [v for v in values if v is not None]
    return sum(values) / len(values) if values else None


def _hypervisor() -> bool:
    try:
        with open("/proc/cpuinfo", encoding="ascii", errors="replace") as handle:
            return any(line.startswith("flags") and " hypervisor" in line for line in handle)
    except OSError:
        return False
