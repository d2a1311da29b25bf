"""Hardware target discovery. Imports torch, so the console calls it in a worker process."""

from __future__ import annotations

import os
import platform
from typing import Any


def discover() -> list[dict[str, Any]]:
    """Every target this machine could run on, usable or not, with the reason when not."""
    targets = [_cpu()]
    try:
        import torch
    except Exception as exc:  # noqa: BLE001 — a broken torch install is a reason, not a crash
        return targets + [_missing("cuda:0", "CUDA GPU", f"PyTorch failed to import: {exc}")]
    targets += _cuda(torch)
    targets.append(_mps(torch))
    return targets


def _cpu() -> dict[str, Any]:
    return {"id": "cpu", "name": _cpu_name(), "kind": "cpu", "available": True, "reason": "",
            "engines": ["torch"], "cores": os.cpu_count()}


def _cpu_name() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as handle:
            for line in handle:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "CPU"


def _cuda(torch) -> list[dict[str, Any]]:
    if not torch.backends.cuda.is_built():
        return [_missing("cuda:0", "CUDA GPU", f"this PyTorch ({torch.__version__}) is a CPU-only build")]
    if not torch.cuda.is_available():
        return [_missing("cuda:0", "CUDA GPU", "no CUDA device found, or the NVIDIA driver is missing/too old")]
    found = []
    for index in range(torch.cuda.device_count()):
        props = torch.cuda.get_device_properties(index)
        found.append({"id": f"cuda:{index}", "name": props.name, "kind": "gpu", "available": True, "reason": "",
                      "engines": ["torch"], "memory_bytes": props.total_memory,
                      "compute_capability": f"{props.major}.{props.minor}"})
    return found


def _mps(torch) -> dict[str, Any]:
    mps = getattr(torch.backends, "mps", None)
    if mps is not None and mps.is_available():
        return {"id": "mps", "name": "Apple GPU (MPS)", "kind": "gpu", "available": True, "reason": "",
                "engines": ["torch"]}
    reason = "not an Apple-silicon Mac" if platform.system() != "Darwin" else "MPS not available in this PyTorch"
    return _missing("mps", "Apple GPU (MPS)", reason)


def _missing(target_id: str, name: str, reason: str) -> dict[str, Any]:
    return {"id": target_id, "name": name, "kind": "gpu", "available": False, "reason": reason, "engines": []}
