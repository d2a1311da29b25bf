"""A storage benchmark kind for tests of the console side (launch, store, CLI, page), registered through a
test-only KINDS override. `options["mode"]` picks how it ends: ok (a contract-shaped result with latencies),
bad-input (StorageError), raise, die (SIGKILL itself), hang, lost (a result that says it lost data),
malformed (no figures), warm (did not pass: data warm)."""

from __future__ import annotations

import os
import signal
import time

from engines.storage.errors import StorageError


def run(options, progress):
    mode = options.get("mode", "ok")
    kind = options.get("kind", "feed")
    progress({"text": "starting", "fraction": 0.0})
    if mode == "bad-input":
        raise StorageError(f"the data directory {options.get('data_dir')!r} does not exist",
                           "give an existing directory with --data-dir")
    if mode == "raise":
        raise RuntimeError("reader 3 crashed")
    if mode == "die":
        progress({"text": "reading", "fraction": 0.5})
        time.sleep(0.2)
        os.kill(os.getpid(), signal.SIGKILL)
    if mode == "hang":
        progress({"text": "reading", "fraction": 0.5})
        try:
            time.sleep(600)
        finally:  # what a kind's clean-up does (remove its test file): stopping it must let this run
            if options.get("marker"):
                with open(options["marker"], "w") as marker:
                    marker.write("cleaned up")
    n = int(options.get("n", 200))
    t0 = time.monotonic_ns()
    pairs = [[t0 + i * 1_000_000, 1_000_000 + (i % 7) * 10_000 * int(options.get("scale", 1))] for i in range(n)]
    progress({"text": "done", "fraction": 1.0})
    result = {"kind": kind, "label": options.get("label", "fake feed on tmpfs"),
              "passed": mode != "warm", "status_reason": "data set warm" if mode == "warm" else "",
              "cache_state": "warm" if mode == "warm" else "cold",
              "method": "a fake kind for tests: fixed latencies",
              "figures": {"au_percent": 93.5, "read_mb_s": 120.0 * int(options.get("scale", 1)), "p99_read_ms": 1.06},
              "latency_ns": pairs}
    result.update(DETAIL.get(kind, {}))
    result.update(options.get("extra") or {})
    if mode == "lost":
        result["lost"] = 3
    if mode == "malformed":
        del result["figures"]
    return result


# Each kind's chart detail, shaped as the kinds document it (engines/storage/*.py docstrings)
DETAIL = {
    "feed": {"workload": "unet3d", "accelerators": 8, "au_per_accelerator": [61.0, 62.5],
             "find_max": {"threshold": 90.0, "series": [[1, 99.1], [2, 98.2], [4, 95.0], [8, 61.7], [6, 80.2],
                                                        [5, 91.3]], "max_passing": 5},
             "limited_by": "the device (readers waiting on I/O)"},
    "sweep": {"engine": "built-in",
              "heatmap": {"read/seq": {"x": [1, 4, 16], "y": [4096, 65536, 1048576],
                                       "mb_s": [[40.0, 120.0, 300.0], [300.0, 900.0, 1400.0],
                                                [1500.0, 1900.0, 1950.0]]},
                          "read/rand": {"x": [1, 4, 16], "y": [4096, 65536, 1048576],
                                        "mb_s": [[20.0, 70.0, 150.0], [150.0, None, 1100.0],
                                                 [1300.0, 1800.0, 1900.0]]}},
              "knee": {"read/seq": {"point": {"block_bytes": 1048576, "queue_depth": 1}, "best": 1950.0,
                                    "share": 0.77, "text": "1 MiB at QD 1 gives 77% of the best"},
                       "read/rand": {"point": {"block_bytes": 1048576, "queue_depth": 4}, "best": 1900.0,
                                     "share": 0.95, "text": "1 MiB at QD 4 gives 95% of the best"}}},
    "checkpoint": {"formats": {"torch": {"save_s": 2.1, "save_gb_s": 0.95, "load_s": 1.2, "load_gb_s": 1.7,
                                         "bytes": 2_000_000_000, "ranks": 1, "spread_percent": 0.0,
                                         "cache_state": "cold"},
                               "safetensors": {"save_s": 1.8, "save_gb_s": 1.1, "load_s": 0.6, "load_gb_s": 3.3,
                                               "bytes": 2_000_000_000, "ranks": 1, "spread_percent": 0.0,
                                               "cache_state": "cold"},
                               "dcp": {"save_s": 1.1, "save_gb_s": 0.45, "load_s": None, "load_gb_s": None,
                                       "bytes": 2_000_000_000, "ranks": 4, "spread_percent": 12.0,
                                       "cache_state": "warm"}}},
    "coldstart": {"stages": [{"mode": "mmap", "read_s": 0.05, "deserialize_s": 0.2, "to_device_s": None,
                              "first_inference_s": 0.03, "cache_state": "cold"},
                             {"mode": "buffered", "read_s": 0.4, "deserialize_s": 0.1, "to_device_s": None,
                              "first_inference_s": 0.03, "cache_state": "cold"},
                             {"mode": "direct", "read_s": 0.6, "deserialize_s": 0.1, "to_device_s": None,
                              "first_inference_s": 0.03, "cache_state": "cold"}]},
}
