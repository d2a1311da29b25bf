"""ONNX Runtime sessions for the backend: options, creation (a missing operator named), the runners that call them
(IO binding on CUDA-class providers), and the plain-data conversion of what they report."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from engines import cores
from engines.spec import RunSpec

GRAPH_OPTIMIZATION = {"disabled": "ORT_DISABLE_ALL", "basic": "ORT_ENABLE_BASIC", "extended": "ORT_ENABLE_EXTENDED",
                      "all": "ORT_ENABLE_ALL"}
EXECUTION_MODE = {"sequential": "ORT_SEQUENTIAL", "parallel": "ORT_PARALLEL"}
# Which kind of target a provider runs on; providers not listed (OpenVINO, DirectML …) are taken as given.
PROVIDER_DEVICE = {"CPUExecutionProvider": "cpu", "DnnlExecutionProvider": "cpu", "XnnpackExecutionProvider": "cpu",
                   "CUDAExecutionProvider": "cuda", "TensorrtExecutionProvider": "cuda",
                   "NvTensorRTRTXExecutionProvider": "cuda", "ROCMExecutionProvider": "cuda",
                   "MIGraphXExecutionProvider": "cuda", "CoreMLExecutionProvider": "mps"}
STANDARD_DOMAINS = {"", "ai.onnx", "ai.onnx.ml", "com.microsoft", "com.microsoft.nchwc", "com.ms.internal.nhwc",
                    "ai.onnx.preview.training", "ai.onnx.training", "com.microsoft.experimental"}


class OrtLoadError(RuntimeError):
    """The model cannot run on ONNX Runtime as asked; the message names the file or field and the fix."""


def session_options(spec: RunSpec, ort):
    asked = spec.options_for("onnxruntime")
    options = ort.SessionOptions()
    options.graph_optimization_level = getattr(ort.GraphOptimizationLevel, GRAPH_OPTIMIZATION[asked.graph_optimization])
    options.execution_mode = getattr(ort.ExecutionMode, EXECUTION_MODE[asked.execution_mode])
    options.intra_op_num_threads = int(spec.threads or cores.auto_threads()[0] or 0)  # auto: the worker's cores
    options.inter_op_num_threads = int(asked.inter_op_threads or 0)
    options.log_severity_level = 3  # errors only: warnings would land on the CLI's stderr
    return options


def session(ort, path: Path, options, providers, provider: str):
    import warnings

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return ort.InferenceSession(str(path), options, providers=providers)
    except Exception as exc:  # noqa: BLE001 — pybind errors (Fail, InvalidGraph, NotImplemented …)
        message = first_line(exc).split("failed:", 1)[-1].strip()
        missing = _unsupported_ops(path)
        if missing:
            raise OrtLoadError(f"{path.name}: ONNX Runtime {ort.__version__} has no implementation for operator "
                               f"{', '.join(missing)} (on {provider}). Fix: re-export the model with standard ONNX "
                               "operators (torch.onnx.export with a supported opset), or register the custom-op "
                               f"library (SessionOptions.register_custom_ops_library). ONNX Runtime said: "
                               f"{message}") from None
        raise OrtLoadError(f"{path.name}: ONNX Runtime {ort.__version__} could not create a session on {provider}: "
                           f"{message}") from None


def _unsupported_ops(path: Path) -> list[str]:
    """Operators in a domain ORT does not know, or default-domain ops the ONNX spec does not define."""
    try:
        import onnx
        from onnx import defs

        model = onnx.load(str(path), load_external_data=False)
    except Exception:  # noqa: BLE001
        return []
    local = {(f.domain, f.name) for f in model.functions}
    opsets = {o.domain or "": o.version for o in model.opset_import}
    found = []
    for node in model.graph.node:
        domain = node.domain or ""
        if (domain, node.op_type) in local:
            continue
        if domain not in STANDARD_DOMAINS:
            found.append(f"{domain}::{node.op_type} (node {node.name or '?'!r}, custom domain)")
        elif domain in ("", "ai.onnx") and not defs.has(node.op_type):
            found.append(f"{node.op_type} (node {node.name or '?'!r}, not an ONNX operator, opset "
                         f"{opsets.get('', '?')})")
    return sorted(set(found))


def runner(session, feeds: dict[str, Any], provider: str, options: dict[str, Any], ort):
    """infer() and close(): plain session.run on the CPU; IO binding with device-resident tensors on CUDA.

    `provider` is the one the session really uses (after an allowed fallback, the CPU)."""
    infer, close, _ = fed_runner(session, feeds, provider, options, ort)
    return infer, close


def fed_runner(session, feeds: dict[str, Any], provider: str, options: dict[str, Any], ort):
    """_runner's infer() and close(), and feed(): host arrays copied into the inputs infer() reads (cast to the
    input's dtype; with IO binding, onto the device)."""
    import numpy as np

    def checked(name: str, array: Any) -> Any:
        if name not in feeds:
            raise KeyError(f"feed: the model has no input {name!r}; its inputs are {', '.join(feeds)}")
        if tuple(array.shape) != tuple(feeds[name].shape):
            raise ValueError(f"feed {name}: shape {list(array.shape)} does not fit the model's input "
                             f"{list(feeds[name].shape)}")
        return array

    if PROVIDER_DEVICE.get(provider) != "cuda":
        run = session.run

        def infer():
            return run(None, feeds)

        def feed(arrays: dict[str, Any]) -> None:
            for name, array in arrays.items():
                np.copyto(feeds[name], checked(name, array), casting="unsafe")

        return infer, lambda: None, feed
    device_id = int(options.get("device_id", 0))
    binding = session.io_binding()
    values = {name: ort.OrtValue.ortvalue_from_numpy(array, "cuda", device_id) for name, array in feeds.items()}
    for name, value in values.items():
        binding.bind_ortvalue_input(name, value)
    for output in session.get_outputs():
        binding.bind_output(output.name, "cuda", device_id)

    def infer_bound():
        session.run_with_iobinding(binding)  # synchronises the provider's stream before returning
        return binding

    def close():
        binding.clear_binding_inputs()
        binding.clear_binding_outputs()
        values.clear()

    def feed_device(arrays: dict[str, Any]) -> None:
        for name, array in arrays.items():
            values[name].update_inplace(np.ascontiguousarray(checked(name, array), dtype=feeds[name].dtype))

    return infer_bound, close, feed_device


def first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0][:500] if text else type(exc).__name__
