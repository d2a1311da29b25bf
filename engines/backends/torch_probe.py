"""The PyTorch backend's probe: the CPU, each CUDA device and MPS it can use here, and why not the others."""

from __future__ import annotations

from typing import Any

from engines.backends.probe import ANY, Machine, Probe, offered, unusable, usable

BF16_CPU_FLAGS = {"avx512_bf16", "amx_bf16", "bf16"}  # without one of them, bf16 on the CPU is emulated


def probe(machine: Machine) -> Probe:
    try:
        import torch
    except Exception as exc:  # noqa: BLE001 — a broken install is a reason, not a crash
        reason = f"PyTorch failed to import: {exc} (pip install torch)"
        return Probe(entries={ANY: unusable(reason)}, absent=_absent(reason, machine))
    version = str(torch.__version__)
    notes = {} if BF16_CPU_FLAGS & machine.cpu_flags else {
        "bf16": "emulated: this CPU has no AVX512-BF16/AMX, expect it to be slower than fp32"}
    found = Probe(entries={"cpu": usable(offered("torch", "cpu"), version, notes)})
    cuda_reason = _cuda_reason(torch)
    if cuda_reason:
        found.entries["cuda"] = unusable(cuda_reason)
        found.absent["cuda:0"] = cuda_reason
    else:
        for index in range(torch.cuda.device_count()):
            props = torch.cuda.get_device_properties(index)
            bf16 = props.major >= 8
            found.devices[f"cuda:{index}"] = {"name": props.name, "kind": "gpu",
                                              "memory_bytes": int(props.total_memory),
                                              "compute_capability": f"{props.major}.{props.minor}"}
            found.entries[f"cuda:{index}"] = usable([p for p in offered("torch", "cuda") if p != "bf16" or bf16],
                                                    version)
        found.entries["cuda"] = unusable("PyTorch sees no CUDA device")
    mps = getattr(torch.backends, "mps", None)
    if mps is not None and mps.is_available():
        found.devices["mps"] = {"name": "Apple GPU (MPS)", "kind": "gpu"}
        found.entries["mps"] = usable(offered("torch", "mps"), version)
    else:
        found.absent["mps"] = _mps_reason(machine)
    return found


def _cuda_reason(torch: Any) -> str:
    if not torch.backends.cuda.is_built():
        return (f"this PyTorch ({torch.__version__}) is a CPU-only build; install a CUDA build of PyTorch to use "
                "NVIDIA GPUs")
    if not torch.cuda.is_available():
        return "PyTorch finds no CUDA device: no NVIDIA GPU, or the driver is missing or too old"
    return ""


def _mps_reason(machine: Machine) -> str:
    return "not an Apple-silicon Mac" if machine.system != "Darwin" else "MPS is not available in this PyTorch"


def _absent(reason: str, machine: Machine) -> dict[str, str]:
    return {"cuda:0": reason, "mps": _mps_reason(machine)}
