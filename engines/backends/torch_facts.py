"""Facts the PyTorch backend reports about a model and its device: bytes, dtypes, names, versions, peak memory,
and the plain-data conversion every fact goes through before it leaves the worker."""

from __future__ import annotations

import sys
from typing import Any

DTYPES = {"fp32": "float32", "fp16": "float16", "bf16": "bfloat16", "int8": "float32"}


def peak_memory(torch, device) -> dict[str, Any]:
    if device.type == "cuda":
        return {"peak_memory_bytes": int(torch.cuda.max_memory_allocated(device)),
                "peak_memory_method": "torch.cuda.max_memory_allocated over the first training step"}
    if device.type == "mps":
        return {"peak_memory_bytes": int(torch.mps.driver_allocated_memory()),
                "peak_memory_method": "MPS driver-allocated memory after the first training step (not a peak)"}
    import resource

    scale = 1 if sys.platform == "darwin" else 1024  # ru_maxrss is bytes on macOS, KiB on Linux
    return {"peak_memory_bytes": int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * scale),
            "peak_memory_method": "process peak RSS (ru_maxrss), whole worker process, after the first training step"}


def synchronizer(torch, device):
    if device.type == "cuda":
        return lambda: torch.cuda.synchronize(device)
    if device.type == "mps":
        return torch.mps.synchronize
    return lambda: None


def model_bytes(torch, module) -> int:
    """Bytes of weights and buffers, including quantized modules' packed weights (absent from parameters())."""
    total = 0
    seen: set[int] = set()

    def add(value):
        nonlocal total
        if isinstance(value, torch.Tensor):
            if id(value) in seen:
                return
            seen.add(id(value))
            total += value.numel() * value.element_size()
        elif isinstance(value, (list, tuple)):
            for item in value:
                add(item)

    try:
        for value in module.state_dict().values():
            add(value)
    except Exception:  # noqa: BLE001 — some compiled/scripted objects cannot give one; fall back
        for p in list(module.parameters()) + list(module.buffers()):
            add(p)
    return total


def file_dtype(module, inputs: tuple[Any, ...]):
    if module is not None:
        for p in module.parameters():
            if p.is_floating_point():
                return p.dtype
    for t in inputs:
        if is_tensor(t) and t.is_floating_point():
            return t.dtype
    return None


def is_tensor(value: Any) -> bool:
    """Inputs are tensors, except a TorchScript forward's int/float/bool arguments, passed as Python numbers."""
    return hasattr(value, "is_floating_point") and hasattr(value, "shape")


def precision_of(dtype) -> str | None:
    name = dtype_name(dtype)
    return next((p for p, d in DTYPES.items() if d == name and p != "int8"), None)


def dtype_name(dtype) -> str:
    return str(dtype).replace("torch.", "")


def device_name(torch, device) -> str:
    if device.type == "cuda":
        return str(torch.cuda.get_device_name(device))
    if device.type == "mps":
        return "Apple MPS"
    import platform

    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as info:
            for line in info:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def versions(torch) -> dict[str, str]:
    versions = {"torch": str(torch.__version__)}
    if torch.version.cuda:
        versions["cuda"] = str(torch.version.cuda)
    if torch.backends.cudnn.is_available():
        versions["cudnn"] = str(torch.backends.cudnn.version())
    return versions
