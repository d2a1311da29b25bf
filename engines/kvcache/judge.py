"""The judgement of a KV cache on storage: the offload target's write and read p95 and the cache's hit rate.

The rules are MLPerf Storage's KV-cache workload's (mlcommons/storage, kv_cache_benchmark/kv-cache.py,
`_evaluate_storage_performance`, latency profile; its README "Reading the Output"): NVMe write P95 < 500 ms, NVMe
read P95 < 200 ms, CPU RAM P95 < 150 ms, cache hit rate > 30%, each strictly, each judged only when it has samples.
Here they are the lab's settings — defaults that `--kv-write-p95-ms`, `--kv-read-p95-ms` and `--kv-min-hit-rate`
replace — and the judgement names where each bound came from. For `--kv-offload ram` the CPU RAM bound is applied
to writes and to reads separately (MLPerf pools them). MLPerf calls its workload a diagnostic preview, so a pass is
"these bounds were met", not an MLPerf result.
"""

from __future__ import annotations

from typing import Any

import numpy as np

MLPERF = "MLPerf Storage KV-cache workload (mlcommons/storage kv_cache_benchmark/kv-cache.py)"
DEFAULTS = {"directory": {"write_p95_ms": 500.0, "read_p95_ms": 200.0},
            "ram": {"write_p95_ms": 150.0, "read_p95_ms": 150.0}}
DEFAULT_MIN_HIT_RATE = 0.30
PERCENTILES = (50, 95, 99)


# ---- Public API
def bounds(target: str, write_p95_ms: float | None = None, read_p95_ms: float | None = None,
           min_hit_rate: float | None = None) -> dict[str, Any]:
    """The bounds a run is judged by: the ones given, else the defaults, with where each came from."""
    given = {"write_p95_ms": write_p95_ms, "read_p95_ms": read_p95_ms, "min_hit_rate": min_hit_rate}
    defaults = {**DEFAULTS[target], "min_hit_rate": DEFAULT_MIN_HIT_RATE}
    out: dict[str, Any] = {}
    sources = {}
    for name, value in given.items():
        out[name] = float(value) if value is not None else defaults[name]
        sources[name] = "the run's setting" if value is not None else f"default: {MLPERF}"
    out["sources"] = sources
    return out


def latency_ms(samples_ns: list[int]) -> dict[str, Any]:
    """p50/p95/p99 in ms (numpy's linear interpolation, as MLPerf's script computes them) and the count; None
    percentiles when nothing was measured."""
    if not samples_ns:
        return {"p50": None, "p95": None, "p99": None, "n": 0}
    values = np.asarray(samples_ns, dtype=np.float64) / 1e6
    return {**{f"p{p}": float(np.percentile(values, p)) for p in PERCENTILES}, "n": len(samples_ns)}


def judge(write_ms: dict[str, Any], read_ms: dict[str, Any], hit_rate: float | None,
          bound: dict[str, Any]) -> dict[str, Any]:
    """passed: every judged rule met (None when no rule could be judged); failed_rules and unjudged_rules say which
    and why, in words and numbers."""
    rules = [("write_p95_ms", write_ms.get("p95"), "write p95", "ms", "below", "no block was written to the target "
              "(raise the repeat rate, lengthen the run, or lower --kv-budget-mb)"),
             ("read_p95_ms", read_ms.get("p95"), "read p95", "ms", "below", "no block was read back from the target "
              "(raise --kv-repeat-rate or lower --kv-budget-mb)"),
             ("min_hit_rate", hit_rate, "hit rate", "", "above", "no prefix was looked up")]
    failed, unjudged, judged = [], [], 0
    for name, value, caption, unit, side, missing in rules:
        limit = bound[name]
        if value is None:
            unjudged.append({"rule": name, "reason": missing})
            continue
        judged += 1
        met = value < limit if side == "below" else value > limit
        if not met:
            shown = f"{value:.3g} {unit}".strip() if unit else f"{value:.1%}"
            wanted = f"{limit:g} {unit}".strip() if unit else f"{limit:.0%}"
            failed.append({"rule": name, "value": value, "bound": limit,
                           "text": f"{caption} {shown} is not {side} {wanted}"})
    return {"passed": None if not judged else not failed, "failed_rules": failed, "unjudged_rules": unjudged,
            "bounds": bound}
