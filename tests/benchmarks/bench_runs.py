"""A run measured the way the console measures it: in a fresh spawned worker process (console.workers), so no
state one run leaves in a process (thread counts, allocator, an engine's global pools) reaches the next.

`median_latency_ms` is what the child runs; benchmarks call `worker_median_ms(spec)`.
"""

from __future__ import annotations

import os

import numpy as np

from console.workers import call_in_worker


def worker_median_ms(spec, timeout_s: float = 600.0) -> float:
    """The measured phase's median latency (ms) of `spec` (a RunSpec), run in its own worker."""
    return call_in_worker("bench_runs:median_latency_ms", spec.to_dict(), timeout_s=timeout_s)


def median_latency_ms(spec_data: dict) -> float:
    from engines.worker import run_spec

    events: list[dict] = []
    run_spec(spec_data, events.append)
    errors = [e for e in events if e["type"] == "error"]
    if errors:
        raise RuntimeError(errors[0]["message"])
    for event in events:
        if event["type"] == "profile":
            if not event["ops"]:
                raise RuntimeError(f"the profile recorded no ops: {event['notes']}")
            if event["trace_path"]:
                os.unlink(event["trace_path"])
    latency = np.concatenate([e["latency_ns"] for e in events if e["type"] == "latencies"])
    return float(np.median(latency)) / 1e6
