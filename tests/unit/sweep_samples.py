"""Shared inputs for the sweep tests: a base spec, what discovery finds on a CPU-only machine, measured points."""

from __future__ import annotations

from console.sweep import point_label

# What `labconsole targets` finds on a CPU-only machine (trimmed): ONNX Runtime offers no bf16 on the CPU.
TARGETS = [
    {"id": "cpu", "available": True, "engine_details": {
        "torch": {"available": True, "precisions": ["fp32", "bf16", "fp16", "int8"]},
        "onnxruntime": {"available": True, "precisions": ["fp32", "int8"]}}},
    {"id": "cuda:0", "available": False, "reason": "this PyTorch is a CPU-only build", "engine_details": {}},
    {"id": "mps", "available": False, "reason": "not an Apple-silicon Mac", "engine_details": {}},
]
BASE = {"model": "mlp", "duration_s": 0.3, "warmup_s": 0.1}


def measured_point(index, batch, throughput, p99, threads=1, status="completed", p50=None):
    """A point as the sweep record holds it once its run ended."""
    point = {"threads": threads, "batch": batch}
    return {"index": index, "point": point, "label": point_label(point), "run_id": f"run{index}", "status": status,
            "message": "", "latency_ms": {"p50": p50 if p50 is not None else p99 / 2, "p99": p99},
            "throughput_per_s": throughput if status == "completed" else None, "valid": True}


def saturating_points():
    """Two thread counts, batch 1…16, throughput flattening out.

    threads 1: 1000, 1800, 2700, 2800, 2850 → 90% of 2850 = 2565 → knee at b4 (2700)
    threads 2: 1500, 2900, 4000, 5200, 5300 → 90% of 5300 = 4770 → knee at b8 (5200)
    """
    batches = (1, 2, 4, 8, 16)
    one = [measured_point(i, b, t, p) for i, (b, t, p) in enumerate(zip(
        batches, (1000, 1800, 2700, 2800, 2850), (1.0, 1.2, 1.6, 3.0, 6.0), strict=True))]
    two = [measured_point(5 + i, b, t, p, threads=2) for i, (b, t, p) in enumerate(zip(
        batches, (1500, 2900, 4000, 5200, 5300), (0.8, 0.9, 1.1, 1.5, 3.0), strict=True))]
    return one + two
