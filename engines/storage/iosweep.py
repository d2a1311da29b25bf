"""The I/O sweep (issue 21 item 4): block size × queue depth × readers, sequential and random, read and write, on
a test file in a chosen directory — throughput, IOPS and latency p50/p99 per point, a heat map per (rw, pattern),
and the knee named in words.

Engines: the built-in reader (engines/storage/ioreader.py: threads issuing os.preadv/os.pwritev, reader processes)
always works; fio (engines/storage/fio.py) runs the same points when it is installed and asked for (auto uses it
when present). With "both", each point runs on both, built-in first, and "agreement" gives built-in ÷ fio per point.

Options (plain JSON; console/cli/storage_sweep.py builds them): dir, block_sizes [bytes], queue_depths, readers,
rw "read"|"write"|"both", pattern "seq"|"rand"|"both", direct "auto"|"on"|"off", point_seconds, file_size [bytes],
engine "auto"|"built-in"|"fio"|"both".

Result (beyond the storage contract's kind, label, passed=None, status_reason, cache_state, method, figures,
latency_ns):
  "points": [{"rw", "pattern", "block_bytes", "queue_depth", "readers", "mb_s", "iops", "p50_us", "p99_us",
              "direct", "engine", "cache", "cache_note", "seconds", "ops"}],
  "heatmap": {"read/seq": {"x": queue depths, "y": block sizes, "mb_s": [[per y, per x]], "readers": [[...]]}},
  "knee": {"read/seq": {"point", "best", "share", "text": "64 KiB at QD 4 gives 92% of the best (...)"}},
  "engine": "built-in" | "fio" | "both", "agreement": (both only) knee.agreement's dict,
  "direct": {"used": bool, "why": "" or why not}, "dir", "file_bytes", "fio_version".
Heat map, knee and figures come from the built-in points when both engines ran (fio's from fio alone).
"latency_ns" is the [start_monotonic_ns, latency_ns] of the read knee's requests (else the first knee's), at most
LATENCY_KEEP of them evenly spaced, so `compare` has a latency distribution to hold against another run's.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Callable
from typing import Any

import numpy as np

from engines.storage import fio, knee
from engines.storage.errors import StorageError
from engines.storage.ioreader import (
    DIRECT_ALIGN,
    MIB,
    ReaderPool,
    TestFile,
    check_directory,
    direct_supported,
    prepare_cache,
)

DEFAULTS = {"block_sizes": [4096, 65536, MIB], "queue_depths": [1, 4, 16], "readers": [1, 2], "rw": "both",
            "pattern": "both", "direct": "auto", "point_seconds": 1.0, "file_size": 256 * MIB, "engine": "auto"}
LATENCY_KEEP = 20000
MAX_QUEUE_DEPTH = 256
MAX_READERS = 64


# ---- Public API
def run(options: dict[str, Any], progress: Callable[[dict], None]) -> dict[str, Any]:
    """Run the sweep that `options` describes; `progress` hears each point as it starts."""
    opts = validate(options)
    engines = _engines(opts["engine"])
    rws = ["read", "write"] if opts["rw"] == "both" else [opts["rw"]]
    patterns = ["seq", "rand"] if opts["pattern"] == "both" else [opts["pattern"]]
    plan = [(rw, pattern, block, qd, readers) for rw in rws for pattern in patterns
            for block in opts["block_sizes"] for qd in opts["queue_depths"] for readers in opts["readers"]]
    progress({"text": f"writing a {opts['file_size'] // MIB} MiB test file in {opts['dir']}", "fraction": 0.0})
    points: list[dict[str, Any]] = []
    latencies: dict[tuple, tuple[np.ndarray, np.ndarray]] = {}
    with _terminate_as_exit(), TestFile(opts["dir"], opts["file_size"]) as test_file, \
            ReaderPool(max(opts["readers"])) as pool:
        direct_ok, direct_why = direct_supported(test_file.path)
        if opts["direct"] == "on" and not direct_ok:
            raise StorageError(f"O_DIRECT was asked for but {direct_why} in {test_file.directory}",
                               "use --direct auto (buffered, with the page cache dropped) or another --dir")
        total = len(plan) * len(engines)
        for i, (rw, pattern, block, qd, readers) in enumerate(plan):
            direct, why = _direct_for(opts["direct"], direct_ok, direct_why, block)
            for j, engine in enumerate(engines):
                label = (f"{rw} {pattern} {knee.size_text(block)} QD {qd} × {readers} "
                         f"{'reader' if readers == 1 else 'readers'} ({engine})")
                progress({"text": label, "fraction": (i * len(engines) + j) / total})
                cache, note = prepare_cache(test_file.path, test_file.size, rw, direct)
                note = "; ".join(filter(None, (note, why)))
                if engine == "fio":
                    measured = fio.run_point(str(test_file.path), test_file.size, rw, pattern, block, qd, readers,
                                             opts["point_seconds"], direct)
                else:
                    raw = pool.measure(test_file.path, test_file.size, rw, pattern, block, qd, readers,
                                       opts["point_seconds"], direct)
                    measured = _summarise(raw)
                    latencies[(rw, pattern, block, qd, readers)] = (np.frombuffer(raw["start_ns"], np.int64),
                                                                    np.frombuffer(raw["latency_ns"], np.int64))
                if cache == "cold" and not direct and measured["bytes"] > test_file.size:
                    cache, note = "mixed", (f"{note}; the point read past its region's end and re-read pages it "
                                            "had just cached (lengthen the file or shorten the point)")
                points.append({"rw": rw, "pattern": pattern, "block_bytes": block, "queue_depth": qd,
                               "readers": readers, "mb_s": _r(measured["mb_s"]), "iops": _r(measured["iops"]),
                               "p50_us": _r(measured["p50_us"]), "p99_us": _r(measured["p99_us"]),
                               "direct": direct, "engine": engine, "cache": cache, "cache_note": note,
                               "seconds": _r(measured["seconds"]), "ops": measured["ops"]})
        directory, file_bytes = str(test_file.directory), test_file.size
    progress({"text": "done", "fraction": 1.0})
    return _result(opts, engines, points, latencies, directory, file_bytes, direct_ok, direct_why)


def validate(options: dict[str, Any]) -> dict[str, Any]:
    """The options with defaults filled in, or a StorageError naming the bad one and the fix."""
    opts = {**DEFAULTS, **{k: v for k, v in options.items() if v is not None}}
    if not opts.get("dir"):
        raise StorageError("no directory to measure", "name one with --dir DIR")
    check_directory(opts["dir"])
    for name, flag, low, high in (("block_sizes", "--block-sizes", 512, 64 * MIB),
                                  ("queue_depths", "--queue-depths", 1, MAX_QUEUE_DEPTH),
                                  ("readers", "--readers", 1, MAX_READERS)):
        values = opts[name]
        if not isinstance(values, (list, tuple)) or not values or \
                not all(isinstance(v, int) and not isinstance(v, bool) for v in values):
            raise StorageError(f"{flag} must be a non-empty list of whole numbers, got {values!r}",
                               f"e.g. {flag} {'4k,64k,1m' if name == 'block_sizes' else '1,4,16'}")
        bad = [v for v in values if not low <= v <= high]
        if bad:
            raise StorageError(f"{flag} {bad} outside {low}–{high}", f"give values from {low} to {high}")
        opts[name] = sorted(set(values))
    for name, allowed in (("rw", ("read", "write", "both")), ("pattern", ("seq", "rand", "both")),
                          ("direct", ("auto", "on", "off")), ("engine", ("auto", "built-in", "fio", "both"))):
        if opts[name] not in allowed:
            raise StorageError(f"--{name} {opts[name]!r} is not one of {', '.join(allowed)}",
                               f"use --{name} {'|'.join(allowed)}")
    if opts["direct"] == "on":
        unaligned = [b for b in opts["block_sizes"] if b % DIRECT_ALIGN]
        if unaligned:
            raise StorageError(f"O_DIRECT needs block sizes that are multiples of {DIRECT_ALIGN} B; {unaligned} "
                               "are not", "choose aligned sizes (4k, 64k, 1m) or --direct auto")
    seconds = opts["point_seconds"]
    if not isinstance(seconds, (int, float)) or not 0.01 <= seconds <= 600:
        raise StorageError(f"--point-seconds {seconds!r} outside 0.01–600", "give a duration such as 1 or 0.5")
    opts["point_seconds"] = float(seconds)
    size = opts["file_size"]
    need = max(opts["readers"]) * max(opts["queue_depths"]) * max(opts["block_sizes"])
    if not isinstance(size, int) or size < max(need, MIB):
        raise StorageError(f"--file-size {size!r} is too small: {max(opts['readers'])} readers × QD "
                           f"{max(opts['queue_depths'])} × {knee.size_text(max(opts['block_sizes']))} blocks need "
                           f"at least {max(need, MIB)} B", f"give at least {max(need, MIB) // MIB + 1}m")
    opts["file_size"] = size // DIRECT_ALIGN * DIRECT_ALIGN
    if opts["engine"] in ("fio", "both") and fio.available() is None:
        raise StorageError(f"--engine {opts['engine']} needs fio, which is not installed",
                           "install fio (apt-get install fio) or use --engine auto|built-in")
    opts["dir"] = str(opts["dir"])
    return opts


# ---- Private API
@contextlib.contextmanager
def _terminate_as_exit():
    """SIGTERM (how the console stops a worker) becomes SystemExit while the sweep runs, so the test file is still
    removed on the way out; only in the main thread, where Python lets a handler be set."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def stop(signum, _frame):
        raise SystemExit(128 + signum)

    previous = signal.signal(signal.SIGTERM, stop)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _engines(choice: str) -> list[str]:
    if choice == "both":
        return ["built-in", "fio"]
    if choice == "auto":
        return ["fio"] if fio.available() else ["built-in"]
    return [choice]


def _direct_for(choice: str, ok: bool, why: str, block: int) -> tuple[bool, str]:
    """Whether this point uses O_DIRECT, and why not when auto could not."""
    if choice == "off":
        return False, "buffered (--direct off)"
    if not ok:
        return False, f"buffered: {why}"
    if block % DIRECT_ALIGN:
        return False, f"buffered: {block} B is not a multiple of {DIRECT_ALIGN} B, as O_DIRECT needs"
    return True, ""


def _summarise(raw: dict[str, Any]) -> dict[str, Any]:
    latency = np.frombuffer(raw["latency_ns"], np.int64)
    p50, p99 = (np.percentile(latency, [50, 99]) / 1000.0) if latency.size else (None, None)
    return {"bytes": raw["bytes"], "ops": raw["ops"], "seconds": raw["seconds"], "mb_s": raw["mb_s"],
            "iops": raw["iops"], "p50_us": None if p50 is None else float(p50),
            "p99_us": None if p99 is None else float(p99)}


def _result(opts: dict[str, Any], engines: list[str], points: list[dict[str, Any]], latencies: dict,
            directory: str, file_bytes: int, direct_ok: bool, direct_why: str) -> dict[str, Any]:
    primary = [p for p in points if p["engine"] == engines[0]]
    found = knee.knees(primary)
    engine = "both" if len(engines) == 2 else engines[0]
    caches = {p["cache"] for p in primary if p["rw"] == "read"}
    cache_state = "n/a" if not caches else caches.pop() if len(caches) == 1 and caches <= {"cold", "warm"} \
        else "mixed"
    figures: dict[str, float | None] = {}
    for key, entry in sorted(found.items()):
        rw, pattern = key.split("/")
        figures[f"{pattern}_{rw}_best_mb_s"] = entry["best"]["mb_s"]
        figures[f"{pattern}_{rw}_best_iops"] = max(p["iops"] or 0 for p in primary
                                                   if p["rw"] == rw and p["pattern"] == pattern)
        figures[f"{pattern}_{rw}_knee_mb_s"] = entry["point"]["mb_s"]
        figures[f"{pattern}_{rw}_knee_p99_us"] = entry["point"]["p99_us"]
    result: dict[str, Any] = {
        "kind": "sweep",
        "label": f"I/O sweep of {directory}: {len(primary)} points ({engine})",
        "passed": None,
        "status_reason": "" if cache_state in ("cold", "n/a") else _warm_reason(primary),
        "cache_state": cache_state,
        "method": _method(opts, engines, direct_ok, direct_why, file_bytes),
        "figures": figures,
        "points": points,
        "heatmap": knee.heatmaps(primary),
        "knee": found,
        "engine": engine,
        "direct": {"used": any(p["direct"] for p in points), "why": direct_why},
        "dir": directory, "file_bytes": file_bytes,
        "fio_version": fio.version() if "fio" in engines else None,
        "latency_ns": _kept_latencies(found, latencies) if engines[0] == "built-in" else [],
    }
    if engine == "both":
        result["agreement"] = knee.agreement(points)
    return result


def _warm_reason(points: list[dict[str, Any]]) -> str:
    notes = sorted({p["cache_note"] for p in points if p["rw"] == "read" and p["cache"] != "cold"})
    return "some reads were served from the page cache: " + "; ".join(notes)


def _method(opts: dict[str, Any], engines: list[str], direct_ok: bool, direct_why: str, file_bytes: int) -> str:
    how = {"built-in": "the built-in reader (threads issuing os.preadv/os.pwritev, one process per reader)",
           "fio": "fio (libaio with O_DIRECT, psync otherwise; --output-format=json)"}
    used = " and ".join(how[e] for e in engines)
    direct = "O_DIRECT" if direct_ok and opts["direct"] != "off" else f"buffered I/O ({direct_why or 'asked'})"
    return (f"{opts['point_seconds']:g} s per point with {used} on a {file_bytes // MIB} MiB file of random bytes, "
            f"{direct}, buffered reads dropped from the page cache first; latency is per request, submission to "
            "completion; writes end with fsync, counted in their time"
            + (" (fio's own write bandwidth leaves that fsync out)." if "fio" in engines else "."))


def _kept_latencies(found: dict[str, dict[str, Any]], latencies: dict) -> list[list[int]]:
    if not found:
        return []
    entry = found.get("read/seq") or found.get("read/rand") or next(iter(found.values()))
    point = entry["point"]
    key = (point["rw"], point["pattern"], point["block_bytes"], point["queue_depth"], point["readers"])
    if key not in latencies:
        return []
    starts, values = latencies[key]
    order = np.argsort(starts, kind="stable")
    keep = order[np.linspace(0, order.size - 1, min(order.size, LATENCY_KEEP)).astype(int)] if order.size else order
    return [[int(starts[i]), int(values[i])] for i in keep]


def _r(value: float | None) -> float | None:
    return None if value is None else round(float(value), 3)

