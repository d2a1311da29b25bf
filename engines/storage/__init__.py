"""Storage benchmarks for AI workloads: how many accelerators a storage path can feed (feed), block size × queue
depth behaviour (sweep), checkpoint save/restore (checkpoint) and a model's cold start (coldstart).

Each kind is one module with `run(options: dict, progress: Callable[[dict], None]) -> dict`, named here as
"module:function" so the console can run it in a spawned worker without importing it (a kind may import torch).
The returned result is plain JSON with at least: kind, label, passed (True/False/None), status_reason,
cache_state ("cold" | "warm" | "mixed" | "n/a"), method, figures ({name with unit: number or None}) and,
optionally, latency_ns ([[t_monotonic_ns, latency_ns], ...]) kept as the run's latencies so `compare` works.
Bad input raises engines.storage.errors.StorageError(message, fix). Qt-free and console-free.
"""

from __future__ import annotations

KINDS = {
    "feed": "engines.storage.feed:run",
    "sweep": "engines.storage.iosweep:run",
    "checkpoint": "engines.storage.checkpoint:run",
    "coldstart": "engines.storage.coldstart:run",
}
