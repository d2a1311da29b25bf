"""Canned machine cards, OP rows and runs shaped exactly like the issue-10 contracts (docs/architecture.md).

Numbers are chosen so each run has one clear explanation; every OP row carries the fields a profile sends.
"""

from __future__ import annotations

import copy

MIB = 1 << 20

CARD = {
    "target": "cpu", "device_name": "Test CPU", "host": "lab-a", "measured_at": "2025-01-01T00:00:00Z",
    "peak_flops": {"fp32": 100e9, "bf16": 200e9}, "memory_bandwidth_gbs": 10.0,
    "call_floor_us": {"torch": 8.0, "onnxruntime": 5.0}, "llc_bytes": 8 * MIB,
    "caches": {"l1d": 32 * 1024, "l2": 512 * 1024, "l3": 8 * MIB},
    "storage_read_gbs": 0.5, "storage": {"dir": "/tmp", "state": "warm", "bytes": 1 << 30, "reason": "test"},
    "h2d_gbs": None, "device_memory_bandwidth_gbs": None, "spread": {}, "method": {}, "not_available": {},
}


def op(name, calls, time_s, flops=None, moved=None, shapes=None):
    """One OP row: intensity and achieved rates derived as the profiler derives them."""
    return {"op": name, "calls": calls, "time_s": time_s, "share": None, "flops": flops, "bytes": moved,
            "intensity": flops / moved if flops and moved else None,
            "achieved_flops_s": flops / time_s if flops else None,
            "achieved_bytes_s": moved / time_s if moved else None,
            "shapes": shapes or [], "method": {"flops": "test", "bytes": "test"}}


def run(ops, wall_s=None, engine="torch", target="cpu", card=CARD, iterations=10, scenario=None, telemetry=None,
        counters=None, cv=0.02, precision="fp32", batch=1, p50_ms=None):
    op_time = sum(o["time_s"] for o in ops)
    for o in ops:
        o["share"] = o["time_s"] / op_time
    wall = wall_s if wall_s is not None else op_time * 1.05
    per_iteration_ms = 1e3 * wall / iterations
    return {
        "spec": {"model": "synthetic", "engine": engine, "target": target, "precision": precision, "batch": batch,
                 "threads": 1},
        "summary": {"cv": cv, "batch": batch, "scenario": scenario or {}, "telemetry": telemetry or {},
                    "latency_ms": {"p50": p50_ms or per_iteration_ms, "mean": p50_ms or per_iteration_ms},
                    "throughput_per_s": batch / ((p50_ms or per_iteration_ms) / 1e3)},
        "ops": ops,
        "profile": {"engine": engine, "iterations": iterations, "wall_s": wall, "op_time_s": op_time,
                    "trace_path": None, "counters": counters, "notes": []},
        "machine": copy.deepcopy(card) if card else None,
        "counters": counters,
    }


def gemm_run(**kw):
    # 40 GEMM calls of 0.5 GFLOP each over 8 MB: 50 GFLOP/s (half the peak), intensity 62 (ridge 10)
    return run([op("aten::addmm", 40, 0.4, flops=40 * 0.5e9, moved=40 * 8e6),
                op("aten::gelu", 40, 0.01, moved=40 * 4e6)], **kw)


def stream_run(**kw):
    # elementwise over 64 MiB tensors (128 MiB per call): 9 GB/s against a 10 GB/s roof
    per_call = 128 * MIB
    return run([op("aten::add", 20, 20 * per_call / 9e9, moved=20 * per_call),
                op("aten::mul", 20, 20 * per_call / 9e9, moved=20 * per_call)], **kw)


def cached_run(achieved=20e9, **kw):
    # the same graph on 1 MiB tensors (2 MiB per call): 100 µs a call, well above the call floor
    per_call = 2 * MIB
    return run([op("aten::add", 200, 200 * per_call / achieved, moved=200 * per_call),
                op("aten::mul", 200, 200 * per_call / achieved, moved=200 * per_call)], **kw)


def tiny_run(**kw):
    # 2000 calls per iteration at 2 µs (floor 8 µs), op time a third of the wall time
    return run([op("aten::add", 10000, 0.02, moved=10000 * 192), op("aten::tanh", 10000, 0.02, moved=10000 * 128)],
               wall_s=0.12, **kw)


def reduction_run(**kw):
    per_call = 64 * MIB
    return run([op("aten::sum", 20, 20 * per_call / 8e9, flops=20 * per_call / 4, moved=20 * per_call)], **kw)
