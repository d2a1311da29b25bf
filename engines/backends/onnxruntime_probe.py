"""The ONNX Runtime backend's probe: per kind of target, the execution providers installed and those missing."""

from __future__ import annotations

from typing import Any

from engines.backends.probe import ANY, Machine, Probe, entry, offered, unusable

NAME = "onnxruntime"
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
KINDS = ("cpu", "cuda", "mps")  # the target families this backend runs on (its INFO's precisions)


def probe(machine: Machine) -> Probe:
    try:
        import onnxruntime
    except Exception as exc:  # noqa: BLE001
        return Probe(entries={ANY: unusable(f"ONNX Runtime failed to import: {exc} (pip install 'lab-console[cpu]', "
                                            "or 'lab-console[gpu]' on a CUDA machine; `labconsole doctor` names "
                                            "the builds installed)")})
    version = str(onnxruntime.__version__)
    providers = [str(p) for p in onnxruntime.get_available_providers()]
    return Probe(entries={kind: _engine(providers, version, kind) for kind in KINDS})


def _engine(providers: list[str], version: str, kind: str) -> dict[str, Any]:
    installed = [p for p in providers if ORT_PROVIDERS.get(p, ("",))[0] == kind]
    missing = {p: f"not installed (install {package})" for p, (k, package) in ORT_PROVIDERS.items()
               if k == kind and p not in providers}
    if not installed:
        first = next(iter(missing.items()), ("", "no execution provider for this device"))
        return entry(False, f"ONNX Runtime has no {kind} execution provider here: {first[0]} {first[1]}",
                     providers=[], providers_missing=missing, version=version)
    precisions = [p for p in offered(NAME, kind) if kind != "cpu" or p != "fp16"]
    return entry(True, precisions=precisions, providers=installed, providers_missing=missing, version=version)
