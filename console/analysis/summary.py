"""The summary of a run, computed in the console from the latencies it recorded (not trusted from the worker)."""

from __future__ import annotations

from typing import Any

import numpy as np

PERCENTILES = (50, 90, 99)


def summarize(latency_ns: np.ndarray, result: dict[str, Any] | None, loaded: dict[str, Any] | None,
              batch: int) -> dict[str, Any]:
    """Latency percentiles (ms), throughput (samples/s) and how they were obtained."""
    latency_ms = np.asarray(latency_ns, dtype=np.float64) / 1e6
    count = int(latency_ms.size)
    measured_s = float(result["measured_s"]) if result else None
    summary: dict[str, Any] = {
        "iterations": count,
        "batch": batch,
        "duration_s": measured_s,
        "load_s": loaded.get("load_s") if loaded else None,
        "first_inference_ms": result.get("first_inference_ms") if result else None,
        "warmup_iterations": result.get("warmup_iterations") if result else None,
        "latency_ms": {"p50": None, "p90": None, "p99": None, "mean": None, "min": None, "max": None, "std": None},
        "throughput_per_s": None,
        "method": "measured: one perf_counter_ns pair per iteration in the worker; "
                  "throughput = iterations × batch / measured wall time",
        "notes": [],
    }
    if count:
        p50, p90, p99 = np.percentile(latency_ms, PERCENTILES)
        summary["latency_ms"] = {"p50": float(p50), "p90": float(p90), "p99": float(p99),
                                 "mean": float(latency_ms.mean()), "min": float(latency_ms.min()),
                                 "max": float(latency_ms.max()), "std": float(latency_ms.std(ddof=1) if count > 1 else 0.0)}
    else:
        summary["notes"].append("no iteration was measured")
    if count and measured_s:
        summary["throughput_per_s"] = count * batch / measured_s
    return summary
