"""ONNX Runtime backend: a user's .onnx file, or a catalog model exported (and checked) by engines.onnx_export.

What it refuses, each with the fix: an execution provider that is not installed; a session that silently fell
back to the CPU when another provider was asked for (unless `--allow-fallback`, then the fallback is recorded);
fp16/bf16 on the CPU provider; a model whose operator ONNX Runtime lacks; inputs it cannot resolve.

Precisions:
- fp32: the model as it is (a user file runs in whatever dtypes it was saved with).
- int8: dynamic quantization (`onnxruntime.quantization.quantize_dynamic`, int8 weights, activations quantized
  at run time) of the fp32 file, cached under cache_dir()/onnx/int8/ by the source file's sha256. CPU provider
  only: the integer kernels it produces (MatMulInteger, ConvInteger) are CPU kernels.
- fp16: on a GPU provider only. A catalog model is exported after `.half()` (its own cache entry, checked on
  that provider); a user file must already be fp16 (its float inputs are float16), since converting a graph
  to half is a modelling decision, not a runtime switch.
- bf16: not offered (ONNX Runtime's bf16 kernels are too sparse for a fair comparison).

Inputs: a catalog model run without `spec.inputs` gets the family's example inputs, the very tensors the
PyTorch backend feeds, so the two engines see the same data. Otherwise inputs come from the session's input
metadata through engines.inputs (batch, `--input`, `--input-value`), deterministic per name.

infer() is one `session.run` (CPU) or `run_with_iobinding` with inputs and outputs on the device (CUDA-class
providers); both return when the outputs are computed. Decoder models (gpt) in the generate scenario also get a
TokenGenerator: prefill on the forward export, then one decode step per token on a second, decode-step export.

load_s is loading proper (reading the file, building the session, preparing inputs); one-off preparation —
export, its check, int8 quantization — is reported apart as details.prepare_s (zero when cached), as
torch.compile time is reported apart by the PyTorch backend.

Split by job: its probe (onnxruntime_probe), sessions and runners (onnxruntime_session), int8 quantization
(onnxruntime_int8), profiler hook (onnxruntime_profiler) and token generator (onnxruntime_generate).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from engines import cores, model_files
from engines import inputs as model_inputs
from engines.backends import onnxruntime_generate as generate
from engines.backends import onnxruntime_int8 as int8
from engines.backends import onnxruntime_profiler as profiler_hook
from engines.backends import onnxruntime_session as sessions
from engines.backends.base import LoadedModel
from engines.backends.onnxruntime_session import PROVIDER_DEVICE, OrtLoadError
from engines.protocol import plain
from engines.spec import RunSpec

# ONNX Runtime's tensor type names → numpy dtype names.
ORT_DTYPES = {
    "tensor(float)": "float32", "tensor(float16)": "float16", "tensor(double)": "float64",
    "tensor(int64)": "int64", "tensor(int32)": "int32", "tensor(int16)": "int16", "tensor(int8)": "int8",
    "tensor(uint64)": "uint64", "tensor(uint32)": "uint32", "tensor(uint16)": "uint16", "tensor(uint8)": "uint8",
    "tensor(bool)": "bool",
}
NATURAL_PROVIDER = {"cpu": "CPUExecutionProvider", "cuda": "CUDAExecutionProvider", "mps": "CoreMLExecutionProvider"}
INSTALL_HINTS = {
    # The two builds share one package folder: the CPU one goes first, or it shadows the GPU one (`labconsole doctor`).
    "CUDAExecutionProvider": "pip uninstall -y onnxruntime, then pip install onnxruntime-gpu (the lab-console[gpu] "
                             "extra), with a matching CUDA and cuDNN",
    "TensorrtExecutionProvider": "pip uninstall -y onnxruntime, then pip install onnxruntime-gpu (the "
                                 "lab-console[gpu] extra) and install TensorRT",
    "ROCMExecutionProvider": "install the ROCm build of onnxruntime (onnxruntime-rocm)",
    "MIGraphXExecutionProvider": "install the ROCm/MIGraphX build of onnxruntime",
    "OpenVINOExecutionProvider": "pip install onnxruntime-openvino (in place of onnxruntime)",
    "DmlExecutionProvider": "pip install onnxruntime-directml (Windows)",
    "CoreMLExecutionProvider": "use the macOS build of onnxruntime (pip install onnxruntime on macOS)",
    "DnnlExecutionProvider": "build onnxruntime with oneDNN (--use_dnnl)",
}


# ---- Public API
def sandbox_writes(spec: RunSpec) -> list[Path]:
    """The folders a sandboxed worker must let this backend write (engines.sandbox): an int8 run's quantized file."""
    from engines import cache

    return [cache.subdir("onnx/int8")] if spec.precision == "int8" else []


def load(spec: RunSpec) -> LoadedModel:
    started = time.perf_counter()
    import onnxruntime as ort

    provider, provider_options = _provider(spec, ort)
    _check_precision(spec, provider)
    providers = [(provider, provider_options)] + ([] if provider == "CPUExecutionProvider" else
                                                   ["CPUExecutionProvider"])
    details: dict[str, Any] = {"precision": spec.precision, "onnxruntime": str(ort.__version__)}
    prepare_s = 0.0
    if spec.is_file:
        path = Path(spec.model)
        facts = model_files.inspect_onnx(path)  # format, external data; clear errors before ORT sees the file
        details["model_file"] = {"path": str(path), "sha256": model_files.sha256(path),
                                 "size_bytes": path.stat().st_size, "external_data": facts["external_data"],
                                 "opsets": facts["opsets"], "producer": facts["producer"]}
        if spec.precision == "fp16":
            _require_fp16_file(path, facts)
    else:
        from engines import onnx_export

        path, check = onnx_export.export_catalog(spec, providers if spec.precision == "fp16" else None)
        prepare_s += check.pop("prepare_s")
        details["export"] = {"path": str(path), "cached": check.pop("cached"), "check": plain(check)}
    if spec.precision == "int8":
        quantized = time.perf_counter()
        path, quantization = int8.quantized(path, facts["external_data"] if spec.is_file else ())
        prepare_s += time.perf_counter() - quantized
        details["quantization"] = quantization

    ort_options = spec.options_for("onnxruntime")
    options = sessions.session_options(spec, ort)
    session = sessions.session(ort, path, options, providers, provider)
    used = list(session.get_providers())
    fallback = not used or used[0] != provider
    if fallback and not ort_options.allow_fallback:
        raise OrtLoadError(f"{provider} was requested but ONNX Runtime fell back to {', '.join(used)} (the provider "
                           f"could not start: check the driver and device {spec.target}). Fix: repair the provider, "
                           "or allow running on the fallback with --allow-fallback")
    feeds, resolved = _feeds(spec, session, path)
    infer, close, feed = sessions.fed_runner(session, feeds, used[0] if used else provider, provider_options, ort)
    generator = None
    if generate.wants_generator(spec):
        generated = time.perf_counter()
        generator, details["decode_export"] = generate.generator(spec, ort, options, providers, session, feeds)
        prepare_s += time.perf_counter() - generated - details["decode_export"].pop("session_s")
    if spec.is_file and spec.precision != "int8":
        params, model_bytes = facts["params"], facts["param_bytes"]
    else:
        params, model_bytes = _initializer_totals(path)
    load_s = time.perf_counter() - started - prepare_s
    details.update({
        "provider_requested": provider,
        "provider_options": {str(k): str(v) for k, v in provider_options.items()},
        "providers_used": used,
        "fallback": bool(fallback),
        "graph_optimization": ort_options.graph_optimization,
        "intra_op_threads": spec.threads or cores.auto_threads()[0] or "default (ORT: one per physical core)",
        "threads_from": "asked (--threads)" if spec.threads else cores.auto_threads()[1],
        "inter_op_threads": ort_options.inter_op_threads or "default",
        "execution_mode": ort_options.execution_mode,
        "model_path": str(path),
        "inputs": resolved,
        "outputs": [{"name": o.name, "dtype": ORT_DTYPES.get(o.type, str(o.type)),
                     "shape": [d if isinstance(d, (int, str)) or d is None else str(d) for d in (o.shape or [])]}
                    for o in session.get_outputs()],
        "prepare_s": prepare_s,
        "device": spec.target,
    })
    profiler = profiler_hook.profiler(ort, spec, path, providers, provider, provider_options, feeds)
    return LoadedModel(infer=infer, load_s=load_s, params=params, model_bytes=model_bytes,
                       versions={"onnxruntime": str(ort.__version__)}, details=plain(details), close=close,
                       generator=generator, profile=profiler, feed=feed)


# ---- Private API
def almost_empty_call(device) -> tuple[Callable[[], object], str]:
    """The machine card's per-call floor (engines.machine.floors): one `InferenceSession.run` of a one-node graph
    (Add, one float32) on the natural provider of `device` (an engines.machine.devices.Device), 1 intra-op thread."""
    from engines.machine.errors import Unavailable

    try:
        import numpy as np
        import onnx
        import onnxruntime as ort
        from onnx import TensorProto, helper
    except ImportError as exc:
        raise Unavailable(f"{exc.name} is not installed (pip install onnx onnxruntime)") from exc
    provider = "CUDAExecutionProvider" if device.kind == "cuda" else "CPUExecutionProvider"
    if provider not in ort.get_available_providers():
        raise Unavailable(f"onnxruntime has no {provider} here ({INSTALL_HINTS.get(provider, 'reinstall onnxruntime')})")
    graph = helper.make_graph(
        [helper.make_node("Add", ["x", "one"], ["y"])], "almost_empty",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])],
        initializer=[helper.make_tensor("one", TensorProto.FLOAT, [1], [1.0])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = min(model.ir_version, 9)  # readable by every onnxruntime that knows opset 17
    onnx.checker.check_model(model)
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1  # one float: a thread pool would only add wake-ups
    options.inter_op_num_threads = 1
    providers = [(provider, {"device_id": device.index})] if device.kind == "cuda" else [provider]
    session = ort.InferenceSession(model.SerializeToString(), options, providers=providers)
    feed = {"x": np.zeros(1, dtype=np.float32)}
    return (lambda: session.run(None, feed)), (f"InferenceSession.run of a one-node Add graph (1 float32) on "
                                              f"{provider}, 1 intra-op thread")


def _provider(spec: RunSpec, ort) -> tuple[str, dict[str, Any]]:
    """The provider to use (asked for, or the target's natural one) and its options; refuse what is missing."""
    kind, _, index = spec.target.partition(":")
    asked = spec.options_for("onnxruntime")
    provider = asked.provider or NATURAL_PROVIDER[kind]
    options = dict(asked.provider_options or {})
    available = list(ort.get_available_providers())
    if provider not in available:
        hint = INSTALL_HINTS.get(provider, f"install an onnxruntime build that includes {provider}")
        raise OrtLoadError(f"ort.provider: {provider} is not installed in this onnxruntime {ort.__version__} "
                           f"(installed: {', '.join(available)}). Fix: {hint}; or "
                           + ("leave ort.provider unset to use CPUExecutionProvider" if kind == "cpu" else
                              "run on --target cpu with CPUExecutionProvider"))
    device = PROVIDER_DEVICE.get(provider)
    if device and device != kind:
        raise OrtLoadError(f"ort.provider: {provider} runs on {device}, but the target is {spec.target}. Fix: "
                           f"--target {device + ':0' if device == 'cuda' else device}, or leave ort.provider unset "
                           f"to use {NATURAL_PROVIDER[kind]}")
    if device == "cuda" and "device_id" not in options:
        options["device_id"] = int(index or 0)
    return provider, options


def _check_precision(spec: RunSpec, provider: str) -> None:
    device = PROVIDER_DEVICE.get(provider, "other")
    if spec.precision == "bf16":
        raise OrtLoadError("precision: bf16 is not offered on ONNX Runtime (its bf16 kernels are too sparse for a "
                           "fair run); use fp32 or int8 on the CPU, fp16 on a GPU provider, or --engine torch for bf16")
    if spec.precision == "fp16" and device == "cpu":
        raise OrtLoadError(f"precision: fp16 needs a GPU execution provider; on {provider} use fp32 or int8")
    if spec.precision == "int8" and device != "cpu":
        raise OrtLoadError(f"precision: int8 here is ONNX Runtime's dynamic quantization, whose integer kernels "
                           f"run on the CPU provider, not {provider}. Fix: --target cpu for int8, or fp16 on the GPU")


def _require_fp16_file(path: Path, facts: dict[str, Any]) -> None:
    floats = [i for i in facts["inputs"] if str(i["dtype"]).startswith("float")]
    if floats and not all(i["dtype"] == "float16" for i in floats):
        raise OrtLoadError(f"precision: {path.name} takes {floats[0]['dtype']} input {floats[0]['name']!r}; a model "
                           "file runs in the precision it was saved in. Fix: run it as fp32, or export an fp16 "
                           "model (model.half() before torch.onnx.export)")


def _feeds(spec: RunSpec, session, path: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Input name → numpy array, and the resolved list for the run's details."""
    declared = []
    for item in session.get_inputs():
        dtype = ORT_DTYPES.get(item.type)
        if dtype is None:
            raise OrtLoadError(f"{path.name}: input {item.name!r} has type {item.type}, which Lab Console cannot "
                               f"generate (supported: {', '.join(sorted(set(ORT_DTYPES.values())))})")
        declared.append({"name": item.name, "dtype": dtype, "shape": list(item.shape or [])})
    if not spec.is_file and not spec.inputs and not spec.input_values:
        return _catalog_feeds(spec, declared)
    try:
        return model_inputs.resolve_inputs(declared, spec.batch, spec.inputs, spec.input_values)
    except model_inputs.InputError as exc:
        raise OrtLoadError(f"{path.name if spec.is_file else spec.model}: {exc}") from None


def _catalog_feeds(spec: RunSpec, declared: list[dict[str, Any]]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The family's example inputs (what the PyTorch backend feeds), as numpy, in the exported dtypes."""
    import importlib

    import numpy as np

    from engines import catalog, onnx_export

    builder = importlib.import_module(catalog.get(spec.model).module)
    params = onnx_export._params(spec.model, spec.model_params)
    tensors = onnx_export.example_inputs(builder, spec.batch, params, spec.generation)
    if len(tensors) != len(declared):
        raise OrtLoadError(f"{spec.model}: the export takes {len(declared)} inputs but the catalog gives "
                           f"{len(tensors)}; clear the export cache ({onnx_export.cache.cache_dir()}/onnx)")
    feeds, resolved = {}, []
    for item, tensor in zip(declared, tensors, strict=True):
        array = np.ascontiguousarray(tensor.detach().cpu().numpy()).astype(item["dtype"], copy=False)
        feeds[item["name"]] = array
        resolved.append({"name": item["name"], "dtype": item["dtype"], "shape": list(array.shape),
                         "declared": item["shape"], "source": "catalog example inputs"})
    return feeds, resolved


def _initializer_totals(path: Path) -> tuple[int, int]:
    import onnx

    return model_files.initializer_totals(onnx.load(str(path), load_external_data=False))


