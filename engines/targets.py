"""Hardware target discovery: what this machine can run, on which engine, in which precision — and why not.

Runs in a worker process (it imports torch and onnxruntime), so the console itself never does. Every
target is listed, usable or not; what is not usable carries the reason and, where there is one, the fix.
"""

from __future__ import annotations

import os
import platform
from typing import Any

from engines import backends

# The ISA features that decide AI throughput on a CPU, as /proc/cpuinfo names them.
CPU_FEATURES = ("avx2", "fma", "avx512f", "avx512_vnni", "avx_vnni", "avx512_bf16", "avx512_fp16",
                "amx_tile", "amx_bf16", "amx_int8", "asimd", "sve", "sve2", "bf16", "i8mm")
# ONNX Runtime execution providers → the target they drive and the package that brings them.
ORT_PROVIDERS = {
    "CPUExecutionProvider": ("cpu", "onnxruntime"),
    "CUDAExecutionProvider": ("cuda", "onnxruntime-gpu"),
    "TensorrtExecutionProvider": ("cuda", "onnxruntime-gpu with TensorRT libraries"),
    "OpenVINOExecutionProvider": ("cpu", "onnxruntime-openvino"),
    "DnnlExecutionProvider": ("cpu", "an onnxruntime build with oneDNN"),
    "DmlExecutionProvider": ("dml", "onnxruntime-directml (Windows)"),
    "CoreMLExecutionProvider": ("mps", "onnxruntime on macOS"),
    "ROCMExecutionProvider": ("rocm", "onnxruntime-rocm"),
    "MIGraphXExecutionProvider": ("rocm", "onnxruntime-migraphx"),
}


def discover() -> list[dict[str, Any]]:
    """Every target this machine could run on, usable or not, with the reason when not."""
    torch_state = _torch_state()
    ort_state = _ort_state()
    nvml = _nvml_state()
    targets = [_cpu(torch_state, ort_state)]
    targets += _cuda(torch_state, ort_state, nvml)
    targets.append(_mps(torch_state, ort_state))
    return targets


# ---- CPU
def _cpu(torch_state: dict[str, Any], ort_state: dict[str, Any]) -> dict[str, Any]:
    info = _cpuinfo()
    features = [f for f in CPU_FEATURES if f in info["flags"]]
    engines = {}
    if torch_state["available"]:
        bf16_note = "" if {"avx512_bf16", "amx_bf16", "bf16"} & set(features) else \
            "emulated: this CPU has no AVX512-BF16/AMX, expect it to be slower than fp32"
        engines["torch"] = _engine(True, precisions=_offered("torch", "cpu"),
                                   notes={"bf16": bf16_note} if bf16_note else {},
                                   version=torch_state["version"])
    else:
        engines["torch"] = _engine(False, torch_state["reason"])
    engines["onnxruntime"] = _ort_engine(ort_state, "cpu", _offered("onnxruntime", "cpu"))
    return {"id": "cpu", "name": info["name"], "kind": "cpu", "available": True, "reason": "",
            "engines": [name for name, e in engines.items() if e["available"]], "engine_details": engines,
            "cores": info["cores"], "threads": os.cpu_count(), "isa": features,
            "memory_bytes": _memory_bytes(), "arch": platform.machine()}


def _cpuinfo() -> dict[str, Any]:
    name, flags, cores = "", set(), set()
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as handle:
            physical = core = None
            for line in handle:
                key, _, value = line.partition(":")
                key, value = key.strip(), value.strip()
                if key == "model name" and not name:
                    name = value
                elif key in ("flags", "Features") and not flags:
                    flags = set(value.split())
                elif key == "physical id":
                    physical = value
                elif key == "core id":
                    core = value
                    cores.add((physical, core))
    except OSError:
        pass
    return {"name": name or platform.processor() or platform.machine() or "CPU", "flags": flags,
            "cores": len(cores) or os.cpu_count()}


def _memory_bytes() -> int | None:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return None


# ---- GPUs
def _cuda(torch_state: dict[str, Any], ort_state: dict[str, Any], nvml: dict[str, Any]) -> list[dict[str, Any]]:
    torch_devices = torch_state.get("cuda_devices", [])
    count = max(len(torch_devices), len(nvml.get("devices", [])))
    if count == 0:
        reason = torch_state.get("cuda_reason") or "no CUDA device found"
        if nvml.get("reason"):
            reason += f"; NVML: {nvml['reason']}"
        return [_missing("cuda:0", "CUDA GPU", reason)]
    found = []
    for index in range(count):
        device = torch_devices[index] if index < len(torch_devices) else {}
        board = nvml["devices"][index] if index < len(nvml.get("devices", [])) else {}
        torch_precisions = [p for p in _offered("torch", "cuda") if p != "bf16" or device.get("bf16")]
        engines = {"torch": _engine(True, precisions=torch_precisions, version=torch_state.get("version"))
                   if device else _engine(False, torch_state.get("cuda_reason") or "PyTorch sees no CUDA device"),
                   "onnxruntime": _ort_engine(ort_state, "cuda", _offered("onnxruntime", "cuda"))}
        target = {"id": f"cuda:{index}", "name": device.get("name") or board.get("name") or "CUDA GPU",
                  "kind": "gpu", "engine_details": engines,
                  "engines": [name for name, e in engines.items() if e["available"]],
                  "memory_bytes": device.get("memory_bytes") or board.get("memory_bytes"),
                  "compute_capability": device.get("compute_capability"),
                  "driver": nvml.get("driver"), "power_limit_w": board.get("power_limit_w")}
        target["available"] = bool(target["engines"])
        target["reason"] = "" if target["available"] else "; ".join(e["reason"] for e in engines.values())
        found.append(target)
    return found


def _mps(torch_state: dict[str, Any], ort_state: dict[str, Any]) -> dict[str, Any]:
    if torch_state.get("mps"):
        engines = {"torch": _engine(True, precisions=_offered("torch", "mps"), version=torch_state["version"]),
                   "onnxruntime": _ort_engine(ort_state, "mps", _offered("onnxruntime", "mps"))}
        return {"id": "mps", "name": "Apple GPU (MPS)", "kind": "gpu", "available": True, "reason": "",
                "engines": [name for name, e in engines.items() if e["available"]], "engine_details": engines}
    reason = "not an Apple-silicon Mac" if platform.system() != "Darwin" else "MPS is not available in this PyTorch"
    return _missing("mps", "Apple GPU (MPS)", reason)


def _missing(target_id: str, name: str, reason: str) -> dict[str, Any]:
    return {"id": target_id, "name": name, "kind": "gpu", "available": False, "reason": reason, "engines": [],
            "engine_details": {}}


# ---- Engines
def _offered(backend: str, kind: str) -> list[str]:
    """The precisions a backend declares for a kind of target (engines.backends); discovery narrows them."""
    return list(backends.info(backend).precisions.get(kind, ()))


def _engine(available: bool, reason: str = "", precisions: list[str] | None = None,
            notes: dict[str, str] | None = None, version: str | None = None, **extra: Any) -> dict[str, Any]:
    return {"available": available, "reason": reason, "precisions": precisions or [], "notes": notes or {},
            "version": version, **extra}


def _ort_engine(ort_state: dict[str, Any], kind: str, precisions: list[str]) -> dict[str, Any]:
    if not ort_state["available"]:
        return _engine(False, ort_state["reason"])
    installed = [p for p in ort_state["providers"] if ORT_PROVIDERS.get(p, ("",))[0] == kind]
    missing = {p: f"not installed (install {package})" for p, (k, package) in ORT_PROVIDERS.items()
               if k == kind and p not in ort_state["providers"]}
    if not installed:
        first = next(iter(missing.items()), ("", "no execution provider for this device"))
        return _engine(False, f"ONNX Runtime has no {kind} execution provider here: {first[0]} {first[1]}",
                       providers=[], providers_missing=missing, version=ort_state["version"])
    if kind == "cpu":
        precisions = [p for p in precisions if p != "fp16"]
    return _engine(True, precisions=precisions, providers=installed, providers_missing=missing,
                   version=ort_state["version"])


def _torch_state() -> dict[str, Any]:
    try:
        import torch
    except Exception as exc:  # noqa: BLE001 — a broken install is a reason, not a crash
        return {"available": False, "reason": f"PyTorch failed to import: {exc} (pip install torch)"}
    state: dict[str, Any] = {"available": True, "reason": "", "version": str(torch.__version__)}
    if not torch.backends.cuda.is_built():
        state["cuda_reason"] = (f"this PyTorch ({torch.__version__}) is a CPU-only build; install a CUDA build "
                                "of PyTorch to use NVIDIA GPUs")
    elif not torch.cuda.is_available():
        state["cuda_reason"] = "PyTorch finds no CUDA device: no NVIDIA GPU, or the driver is missing or too old"
    else:
        devices = []
        for index in range(torch.cuda.device_count()):
            props = torch.cuda.get_device_properties(index)
            devices.append({"name": props.name, "memory_bytes": int(props.total_memory),
                            "compute_capability": f"{props.major}.{props.minor}", "bf16": props.major >= 8})
        state["cuda_devices"] = devices
    mps = getattr(torch.backends, "mps", None)
    state["mps"] = bool(mps is not None and mps.is_available())
    return state


def _ort_state() -> dict[str, Any]:
    try:
        import onnxruntime
    except Exception as exc:  # noqa: BLE001
        return {"available": False, "reason": f"ONNX Runtime failed to import: {exc} (pip install 'lab-console[cpu]', "
                                              "or 'lab-console[gpu]' on a CUDA machine; `labconsole doctor` names "
                                              "the builds installed)", "providers": []}
    return {"available": True, "reason": "", "version": str(onnxruntime.__version__),
            "providers": [str(p) for p in onnxruntime.get_available_providers()]}


def _nvml_state() -> dict[str, Any]:
    """Driver and board facts from NVML where present; its absence is a reason, not an error."""
    try:
        import pynvml
    except Exception as exc:  # noqa: BLE001
        return {"reason": f"pynvml not importable ({exc}); pip install nvidia-ml-py", "devices": []}
    try:
        pynvml.nvmlInit()
    except Exception as exc:  # noqa: BLE001 — NVMLError_LibraryNotFound and friends
        return {"reason": f"NVML not available: {exc}", "devices": []}
    try:
        driver = pynvml.nvmlSystemGetDriverVersion()
        devices = []
        for index in range(pynvml.nvmlDeviceGetCount()):
            handle = pynvml.nvmlDeviceGetHandleByIndex(index)
            board: dict[str, Any] = {"name": _text(pynvml.nvmlDeviceGetName(handle))}
            try:
                board["memory_bytes"] = int(pynvml.nvmlDeviceGetMemoryInfo(handle).total)
            except Exception:  # noqa: BLE001
                pass
            try:
                board["power_limit_w"] = pynvml.nvmlDeviceGetEnforcedPowerLimit(handle) / 1000.0
            except Exception:  # noqa: BLE001 — not supported on every board
                board["power_limit_w"] = None
            devices.append(board)
        return {"driver": _text(driver), "devices": devices, "reason": ""}
    finally:
        try:
            pynvml.nvmlShutdown()
        except Exception:  # noqa: BLE001
            pass


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)
