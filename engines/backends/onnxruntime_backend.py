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
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from engines import cores, model_files, profiling
from engines import inputs as model_inputs
from engines.backends.base import LoadedModel
from engines.spec import RunSpec

# ONNX Runtime's tensor type names → numpy dtype names.
ORT_DTYPES = {
    "tensor(float)": "float32", "tensor(float16)": "float16", "tensor(double)": "float64",
    "tensor(int64)": "int64", "tensor(int32)": "int32", "tensor(int16)": "int16", "tensor(int8)": "int8",
    "tensor(uint64)": "uint64", "tensor(uint32)": "uint32", "tensor(uint16)": "uint16", "tensor(uint8)": "uint8",
    "tensor(bool)": "bool",
}
GRAPH_OPTIMIZATION = {"disabled": "ORT_DISABLE_ALL", "basic": "ORT_ENABLE_BASIC", "extended": "ORT_ENABLE_EXTENDED",
                      "all": "ORT_ENABLE_ALL"}
EXECUTION_MODE = {"sequential": "ORT_SEQUENTIAL", "parallel": "ORT_PARALLEL"}
# Which kind of target a provider runs on; providers not listed (OpenVINO, DirectML …) are taken as given.
PROVIDER_DEVICE = {"CPUExecutionProvider": "cpu", "DnnlExecutionProvider": "cpu", "XnnpackExecutionProvider": "cpu",
                   "CUDAExecutionProvider": "cuda", "TensorrtExecutionProvider": "cuda",
                   "NvTensorRTRTXExecutionProvider": "cuda", "ROCMExecutionProvider": "cuda",
                   "MIGraphXExecutionProvider": "cuda", "CoreMLExecutionProvider": "mps"}
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
STANDARD_DOMAINS = {"", "ai.onnx", "ai.onnx.ml", "com.microsoft", "com.microsoft.nchwc", "com.ms.internal.nhwc",
                    "ai.onnx.preview.training", "ai.onnx.training", "com.microsoft.experimental"}


class OrtLoadError(RuntimeError):
    """The model cannot run on ONNX Runtime as asked; the message names the file or field and the fix."""


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
        details["export"] = {"path": str(path), "cached": check.pop("cached"), "check": _plain(check)}
    if spec.precision == "int8":
        quantized = time.perf_counter()
        path, quantization = _quantized(path, facts["external_data"] if spec.is_file else ())
        prepare_s += time.perf_counter() - quantized
        details["quantization"] = quantization

    ort_options = spec.options_for("onnxruntime")
    options = _session_options(spec, ort)
    session = _session(ort, path, options, providers, provider)
    used = list(session.get_providers())
    fallback = not used or used[0] != provider
    if fallback and not ort_options.allow_fallback:
        raise OrtLoadError(f"{provider} was requested but ONNX Runtime fell back to {', '.join(used)} (the provider "
                           f"could not start: check the driver and device {spec.target}). Fix: repair the provider, "
                           "or allow running on the fallback with --allow-fallback")
    feeds, resolved = _feeds(spec, session, path)
    infer, close, feed = _fed_runner(session, feeds, used[0] if used else provider, provider_options, ort)
    generator = None
    if _wants_generator(spec):
        generated = time.perf_counter()
        generator, details["decode_export"] = _generator(spec, ort, options, providers, session, feeds)
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
    profiler = _profiler(ort, spec, path, providers, provider, provider_options, feeds)
    return LoadedModel(infer=infer, load_s=load_s, params=params, model_bytes=model_bytes,
                       versions={"onnxruntime": str(ort.__version__)}, details=_plain(details), close=close,
                       generator=generator, profile=profiler, feed=feed)


# ---- Private API
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


def _quantized(source: Path, external: list[str] | tuple[str, ...] = ()) -> tuple[Path, dict[str, Any]]:
    """Dynamic int8 quantization of `source`, cached by its sha256 and the onnxruntime version.

    The quantizer writes `<stem>-inferred.onnx` beside the file it is given, so it is given a staged view of the
    file in a temporary folder (the worker's own under the sandbox): the user's folder is only ever read.
    `external`: the file's external data locations (relative to its folder), staged with it."""
    import contextlib
    import os
    import tempfile

    import onnxruntime as ort
    from onnxruntime.quantization import QuantType, quantize_dynamic

    from engines import cache

    digest = model_files.sha256(source)
    target = cache.subdir("onnx/int8") / f"{source.stem}-{digest[:16]}-ort{ort.__version__}.onnx"
    info = {"method": "onnxruntime.quantization.quantize_dynamic", "weight_type": "QInt8", "source": str(source),
            "source_sha256": digest, "path": str(target)}
    if target.is_file():
        return target, {**info, "cached": True}
    tmp = cache.temp_path(target).with_suffix(".onnx")
    try:
        with tempfile.TemporaryDirectory(prefix="labconsole-int8-") as staging, _quiet_quantizer():
            staged = _staged(source, Path(staging), external)
            quantize_dynamic(str(staged), str(tmp), weight_type=QuantType.QInt8)
        os.replace(tmp, target)
    except Exception as exc:  # noqa: BLE001
        raise OrtLoadError(f"precision: int8 quantization of {source.name} failed ({type(exc).__name__}: "
                           f"{_first_line(exc)}). Fix: run it as fp32, or give a model quantized beforehand") from exc
    finally:
        with contextlib.suppress(OSError):
            tmp.unlink()
    return target, {**info, "cached": False}


def _staged(source: Path, folder: Path, external: list[str] | tuple[str, ...]) -> Path:
    """`source` as seen from `folder`: a symlink to the .onnx (a copy where symlinks are not allowed), and for each
    external data file a hard link, else a copy (onnx refuses symlinked external data). Nothing is written to
    `source`'s folder, and nothing opens the staged files for writing (a hard link shares the user's bytes)."""
    import os
    import shutil

    staged = folder / source.name
    try:
        os.symlink(source.resolve(), staged)
    except OSError:  # Windows without the symlink right
        shutil.copyfile(source, staged)
    for location in external:  # checked by inspect_onnx to lie inside source's folder
        data, link = source.parent / location, folder / location
        link.parent.mkdir(parents=True, exist_ok=True)
        try:
            os.link(data, link)
        except OSError:  # another filesystem, protected hard links, or a sandbox that denies linking: copy
            shutil.copyfile(data, link)
    return staged


def _session_options(spec: RunSpec, ort):
    asked = spec.options_for("onnxruntime")
    options = ort.SessionOptions()
    options.graph_optimization_level = getattr(ort.GraphOptimizationLevel, GRAPH_OPTIMIZATION[asked.graph_optimization])
    options.execution_mode = getattr(ort.ExecutionMode, EXECUTION_MODE[asked.execution_mode])
    options.intra_op_num_threads = int(spec.threads or cores.auto_threads()[0] or 0)  # auto: the worker's cores
    options.inter_op_num_threads = int(asked.inter_op_threads or 0)
    options.log_severity_level = 3  # errors only: warnings would land on the CLI's stderr
    return options


def _session(ort, path: Path, options, providers, provider: str):
    import warnings

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return ort.InferenceSession(str(path), options, providers=providers)
    except Exception as exc:  # noqa: BLE001 — pybind errors (Fail, InvalidGraph, NotImplemented …)
        message = _first_line(exc).split("failed:", 1)[-1].strip()
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


def _runner(session, feeds: dict[str, Any], provider: str, options: dict[str, Any], ort):
    """infer() and close(): plain session.run on the CPU; IO binding with device-resident tensors on CUDA.

    `provider` is the one the session really uses (after an allowed fallback, the CPU)."""
    infer, close, _ = _fed_runner(session, feeds, provider, options, ort)
    return infer, close


def _fed_runner(session, feeds: dict[str, Any], provider: str, options: dict[str, Any], ort):
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


def _profiler(ort, spec: RunSpec, path: Path, providers, provider: str, provider_options: dict[str, Any],
              feeds: dict[str, Any]):
    """ONNX Runtime's own profiler, on a second session of the same model, options and inputs.

    A second session because profiling is a session option: the measured session is never slowed by it. Its
    first run (allocations, pre-packing) is left out of the op table; the Chrome trace keeps every event.
    """

    def profile(iterations: int, trace_path: str | None) -> dict[str, Any]:
        import json
        import os
        import tempfile

        options = _session_options(spec, ort)
        options.enable_profiling = True
        with tempfile.TemporaryDirectory(prefix="labconsole-ort-profile-") as folder:
            options.profile_file_prefix = os.path.join(folder, "ort")
            session = _session(ort, path, options, providers, provider)
            used = list(session.get_providers())
            infer, close = _runner(session, feeds, used[0] if used else provider, provider_options, ort)
            try:
                infer()  # the first run: allocations and pre-packing, left out below
                walls = []
                started = time.perf_counter()
                for _ in range(iterations):
                    began = time.perf_counter()
                    infer()
                    walls.append(time.perf_counter() - began)
                wall_s = time.perf_counter() - started
            finally:
                close()
            with open(session.end_profiling(), encoding="utf-8") as handle:
                trace = json.load(handle)
            del session
        calls = profiling.ort_calls(trace, skip_runs=1)
        ops = profiling.aggregate(calls, profiling.ORT_METHOD)
        per_iteration = profiling.iteration_table(calls, walls)  # each node's model_run: resampled for stability
        if trace_path:
            with open(trace_path, "w", encoding="utf-8") as handle:
                json.dump({"traceEvents": trace, "displayTimeUnit": "ms"}, handle)
        notes = ["op times are ONNX Runtime's node times (kernel_time) on a second, profiling session of the same "
                 "model and options; its first run is left out of the table (it stays in the trace)",
                 "wall_s minus op_time_s is time outside the nodes (session.run, input and output handling)"]
        if PROVIDER_DEVICE.get(used[0] if used else provider) == "cuda":
            notes.append("on a GPU provider, node times are what the host sees of each node, not kernel times")
        return profiling.profile_event("onnxruntime", iterations, wall_s, ops, trace_path, notes,
                                       per_iteration=per_iteration)

    return profile


def _wants_generator(spec: RunSpec) -> bool:
    if spec.is_file or spec.scenario != "generate" or spec.mode != "inference":
        return False
    from engines import catalog

    return catalog.get(spec.model).decoder


def _generator(spec: RunSpec, ort, options, providers, prefill_session, feeds) -> tuple[Any, dict]:
    """Greedy decoding on ONNX Runtime: the forward export runs the prompt, the decode export each new token.

    Host arrays carry the KV cache between steps (copied to the device by a GPU provider each step); the
    PyTorch backend keeps it on the device, so on a GPU this backend's TPOT includes that copy.
    """
    import importlib

    import numpy as np

    from engines import catalog, onnx_export
    from engines.backends.base import TokenGenerator

    params = onnx_export._params(spec.model, spec.model_params)
    family = importlib.import_module(catalog.get(spec.model).module)
    (prompt_name, prompt), = list(feeds.items())[:1]
    if hasattr(family, "check_length"):
        family.check_length(params, int(prompt.shape[1]), spec.generation.output_tokens)
    path, check = onnx_export.export_catalog(spec, providers if spec.precision == "fp16" else None, part="decode")
    check.pop("prepare_s", None)
    details = {"path": str(path), "cached": check.pop("cached"), "check": _plain(check)}
    if spec.precision == "int8":
        path, details["quantization"] = _quantized(path)
    started = time.perf_counter()
    decode_session = _session(ort, path, options, providers, providers[0][0])
    details["session_s"] = time.perf_counter() - started
    names = [i.name for i in decode_session.get_inputs()]
    prefill_run, decode_run = prefill_session.run, decode_session.run

    def greedy(logits):
        return np.ascontiguousarray(logits[:, -1].argmax(axis=-1)[:, None].astype(np.int64))

    def prefill():
        logits, present = prefill_run(None, {prompt_name: prompt})[:2]
        token = greedy(logits)
        return token, present, [token]

    def decode_step(state):
        token, past, seen = state
        logits, present = decode_run(None, {names[0]: token, names[1]: past})[:2]
        token = greedy(logits)
        seen.append(token)
        return token, present, seen

    def tokens(state):
        return np.concatenate(state[2], axis=1).tolist()

    generator = TokenGenerator(prefill=prefill, decode_step=decode_step, prompt_tokens=int(prompt.shape[1]),
                               output_tokens=spec.generation.output_tokens, tokens=tokens)
    return generator, details


def _initializer_totals(path: Path) -> tuple[int, int]:
    import onnx

    return model_files.initializer_totals(onnx.load(str(path), load_external_data=False))


def _quiet_quantizer():
    import contextlib
    import io
    import logging
    import warnings

    @contextlib.contextmanager
    def quiet():
        logger = logging.getLogger()
        level = logger.level
        logger.setLevel(logging.ERROR)
        try:
            with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
                warnings.simplefilter("ignore")
                yield
        finally:
            logger.setLevel(level)

    return quiet()


def _plain(value: Any) -> Any:
    """Built-in types only (the protocol refuses anything else): numpy scalars, paths → int/float/str."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if value is None or type(value) in (str, int, float, bool):
        return value
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return float(value)
    if hasattr(value, "item") and callable(value.item):
        return _plain(value.item())
    return str(value)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0][:500] if text else type(exc).__name__
