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
        time.sleep(600)
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
    result.update(options.get("extra") or {})
    if mode == "lost":
        result["lost"] = 3
    if mode == "malformed":
        del result["figures"]
    return result
