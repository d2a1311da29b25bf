"""The summary of a run, computed in the console from what it recorded (never trusted from the worker).

Latency statistics with confidence intervals, LoadGen-style validity with the fix for each failed rule,
throughput, cold start, energy and telemetry — each figure saying how it was obtained.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from console.analysis import until_stable
from console.analysis.energy import energy_summary, grid_intensity_from_env, telemetry_summary
from console.analysis.stats import describe
from console.analysis.validity import ValidityRules, assess

PERCENTILES = ("p50", "p90", "p99")
# Result fields every scenario sends; anything else a scenario adds (TTFT, achieved rate…) is its own block.
_STANDARD_RESULT = {"v", "type", "iterations", "measured_s", "warmup_iterations", "first_inference_ms", "batch",
                    "cancelled", "until_stable"}


def summarize(latency_ns: np.ndarray, result: dict[str, Any] | None, loaded: dict[str, Any] | None,
              batch: int, t_ns: np.ndarray | None = None, samples: list[tuple] | None = None,
              window_ns: tuple[int, int] | None = None, mode: str = "inference",
              rules: ValidityRules | None = None, scenario: str | None = None,
              noise_floor: dict[str, Any] | None = None) -> dict[str, Any]:
    """Everything the summary card, the CLI's JSON and the history show about one run.

    `scenario` picks the validity rules (a server run is judged on its latency bound, which its `result`
    carries, not on stability: `validity.assess`). `noise_floor`: the machine's (console.machine.noise), which stability is
    judged against (console.analysis.drift)."""
    latency_ms = np.asarray(latency_ns, dtype=np.float64) / 1e6
    count = int(latency_ms.size)
    measured_s = float(result["measured_s"]) if result else None
    stats = describe(latency_ms)
    rules = rules or ValidityRules()
    stabilised = until_stable.block(result)  # measured until stable: judged on the windows the engine took
    validity = assess(latency_ns, t_ns, until_stable.judging_rules(rules, stabilised), duration_s=measured_s,
                      scenario=scenario,
                      latency_bound_ms=(result or {}).get("latency_bound_ms"),
                      dropped=int((result or {}).get("dropped") or 0),
                      noise_floor=noise_floor, base_windows=until_stable.extended_from(stabilised)) if count else None
    summary: dict[str, Any] = {
        "iterations": count,
        "batch": batch,
        "duration_s": measured_s,
        "load_s": loaded.get("load_s") if loaded else None,
        "first_inference_ms": result.get("first_inference_ms") if result else None,
        "warmup_iterations": result.get("warmup_iterations") if result else None,
        "latency_ms": _latency_block(stats, validity),
        "cv": stats["cv"],
        "iqr_ms": stats["iqr"],
        "outliers": stats["outliers"],
        "throughput_per_s": _throughput(count, batch, measured_s, result),
        "throughput_unit": "samples/s" if mode == "training" else "inferences/s (samples)",
        "valid": bool(validity and validity["valid"]),
        "invalid_reasons": validity["invalid_reasons"] if validity else
        [{"rule": "min_count", "detail": "no iteration was measured", "fix": "check the run's error"}],
        "stable": bool(validity and validity["stable"]),
        "validity": {**{k: validity[k] for k in ("windows", "stability", "percentiles", "latency_bound",
                                                  "rate_per_s", "required")}, "rules": dataclasses.asdict(rules)}
        if validity else None,
        "until_stable": stabilised,
        "cold_start": _cold_start(loaded, result),
        "scenario": {k: v for k, v in (result or {}).items() if k not in _STANDARD_RESULT},
        "method": "measured: one perf_counter_ns pair per iteration in the worker; percentile intervals "
                  f"{stats.get('ci_method', 'n/a')}; throughput = samples / measured wall time (iterations × batch unless the scenario counts samples per query)",
        "notes": [],
    }
    for reason in summary["invalid_reasons"]:
        summary["notes"].append(f"{reason['detail']} — {reason['fix']}")
    summary["notes"] += validity["notes"] if validity else []
    if stabilised:
        summary["notes"].append(f"measured until stable: {stabilised['text']}")
    # Named dims the user's --input shapes gave different sizes (engines.inputs.symbol_warnings): the engine
    # accepted them, and the run says so.
    summary["notes"] += list(((loaded or {}).get("details") or {}).get("input_warnings") or [])
    if samples and window_ns and window_ns[1] > window_ns[0]:
        inferences = count * batch or None
        summary["energy"] = energy_summary(samples, window_ns[0], window_ns[1], inferences,
                                           grid_intensity_from_env(), per="sample" if mode == "training" else
                                           "inference")
        summary["telemetry"] = telemetry_summary(samples, window_ns[0], window_ns[1])
    return summary


def _throughput(count: int, batch: int, measured_s: float | None, result: dict[str, Any] | None) -> float | None:
    """Samples per second. A scenario whose queries are not one call of `batch` samples (multi-stream, offline
    with several samples per query) counts its samples itself and says so in `samples_per_s`."""
    if result and isinstance(result.get("samples_per_s"), (int, float)):
        return float(result["samples_per_s"])
    return count * batch / measured_s if count and measured_s else None


def _latency_block(stats: dict[str, Any], validity: dict[str, Any] | None) -> dict[str, Any]:
    """Percentiles only where enough samples back them (LoadGen's early-stopping bound); None otherwise."""
    block: dict[str, Any] = {key: stats.get(key) for key in (*PERCENTILES, "mean", "min", "max", "std")}
    block["ci95"] = {key: stats["ci95"].get(key) for key in PERCENTILES} if stats.get("ci95") else {}
    backing = (validity or {}).get("percentiles") or {}
    for key in PERCENTILES:
        if key in backing and not backing[key]["sufficient"]:
            block[key] = None
            block["ci95"][key] = None
    return block


def _cold_start(loaded: dict[str, Any] | None, result: dict[str, Any] | None) -> dict[str, Any]:
    details = (loaded or {}).get("details") or {}
    return {
        "read_s": details.get("read_s"),
        "read_bytes": details.get("read_bytes"),
        "build_s": (loaded or {}).get("load_s"),
        "compile_s": details.get("compile_s"),
        "first_inference_ms": (result or {}).get("first_inference_ms"),
        "method": "read_s/read_bytes: timed file read in the worker (model files only); build_s: model or "
                  "session build; first_inference_ms: the first call after loading, before warm-up",
    }
