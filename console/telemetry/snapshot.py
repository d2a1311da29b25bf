"""What every telemetry source sees right now: ``labconsole telemetry --seconds N [--json]``.

Runs the real sampler process for N seconds (the same code path as a run) and reports, per source, whether it
is available and why not, each metric with its unit, method, last and mean value, and the metrics it lacks
with the reason.
"""

from __future__ import annotations

import threading
import time
from typing import Any

from .base import Sample
from .nvml_source import decode_throttle
from .sampler import DEFAULT_RATE_HZ, Sampler

START_TIMEOUT_S = 30.0  # spawn + imports + opening every source


def collect(seconds: float, rate_hz: float = DEFAULT_RATE_HZ, sources: list[str] | None = None) -> dict[str, Any]:
    """Sample for ``seconds`` (after the sources are open) and describe what each source reported."""
    if not seconds > 0:
        raise ValueError(f"seconds must be > 0, got {seconds!r}")
    rows: list[Sample] = []
    lock = threading.Lock()
    opened = threading.Event()

    def on_samples(batch: list[Sample]) -> None:
        with lock:
            rows.extend(batch)

    sampler = Sampler(rate_hz, sources, on_samples=on_samples, on_sources=lambda _d: opened.set())
    sampler.start()
    try:
        if not opened.wait(START_TIMEOUT_S):
            raise RuntimeError(f"the telemetry sampler did not start within {START_TIMEOUT_S:g} s")
        t0 = time.perf_counter_ns()
        time.sleep(seconds)
        t1 = time.perf_counter_ns()
    finally:
        sampler.stop()
    with lock:
        window = [r for r in rows if t0 <= r[0] <= t1]
    return {
        "seconds": (t1 - t0) / 1e9,
        "rate_hz": sampler.rate_hz,
        "clock": "time.perf_counter_ns (CLOCK_MONOTONIC on Linux), shared with the engine workers",
        "sources": [_source_report(desc, window) for desc in sampler.sources],
    }


def format_text(report: dict[str, Any]) -> str:
    lines = [f"telemetry over {report['seconds']:.1f} s at {report['rate_hz']:g} Hz"]
    for src in report["sources"]:
        state = "available" if src["available"] else f"not available ({src['reason']})"
        lines.append(f"\n{src['name']}: {state}")
        for m in src["metrics"]:
            if m["samples"]:
                value = f"last {_num(m['last'])}  mean {_num(m['mean'])}"
                if "reasons" in m:
                    value += f"  ({', '.join(m['reasons']) or 'none'})"
            else:
                value = "no samples (e.g. only while a worker is watched)"
            lines.append(f"  {m['name']:<28} {m['unit']:<8} {m['method']:<10} {value}")
        for metric, why in src["unavailable_metrics"].items():
            lines.append(f"  {metric:<28} not available: {why}")
    return "\n".join(lines)


# ---- Private API


def _source_report(desc: dict[str, Any], rows: list[Sample]) -> dict[str, Any]:
    name = desc["name"]
    stats: dict[str, list[float]] = {}
    for _t, source, metric, value, _unit, _method in rows:
        if source == name:
            stats.setdefault(metric, []).append(value)
    metrics = []
    for info in desc.get("metrics", []):
        values = stats.get(info["name"], [])
        entry = {"name": info["name"], "unit": info["unit"], "method": info["method"],
                 "description": info["description"], "period_s": info.get("period_s"),
                 "samples": len(values), "last": values[-1] if values else None,
                 "mean": sum(values) / len(values) if values else None}
        if info["unit"] == "bitmask":
            entry["mean"] = None  # the mean of a bitmask means nothing
            if values:
                entry["reasons"] = decode_throttle(values[-1])
        metrics.append(entry)
    return {"name": name, "available": desc["available"], "reason": desc["reason"],
            "period_s": desc.get("period_s"), "metrics": metrics,
            "unavailable_metrics": desc.get("unavailable_metrics", {})}


def _num(value: float | None) -> str:
    if value is None:
        return "—"
    return f"{value:.4g}"
