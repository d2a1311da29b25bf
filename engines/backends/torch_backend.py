"""PyTorch backend: catalog models and model files on cpu, cuda:N and mps.

Precisions: fp32; fp16 and bf16 (model and floating inputs cast; on every device a tiny probe of each op
the model uses runs first, so a missing kernel is named before anything is measured); int8 = dynamic
quantization of nn.Linear layers, CPU only. Options: channels-last memory format, `torch.compile` (compiled
at load on the example input and timed apart as `compile_s`), intra-op threads.

Training (`spec.mode == "training"`): each `infer()` is one optimizer step — forward, loss against fixed
random targets (next-token loss for gpt), backward, step. Weights stay fp32; bf16/fp16 run under autocast,
fp16 with a GradScaler and only on CUDA (a CPU gains nothing from fp16 training and needs loss scaling
for it, so it is refused). Load runs one step, not measured (`first_step_ms`): the optimizer allocates its
state there, so the peak memory reported with the load facts is the step's steady-state peak.

`load_s` is building and placing the model; compiling (`compile_s`) and the first training step
(`first_step_ms`) happen after it, still at load, and are reported apart from both.

Errors name the setting and the fix: they are raised as `UnsupportedConfig` and reach the console as the
worker's `load` error. Split by job: its probe (torch_probe), profiler hook (torch_profiler), token generator
(torch_generate) and the facts it reports (torch_facts) are modules of their own.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from engines import catalog, cores
from engines.backends import torch_facts as facts
from engines.backends.base import LoadedModel
from engines.backends.torch_facts import DTYPES
from engines.backends.torch_generate import generator
from engines.backends.torch_profiler import profiler
from engines.protocol import plain
from engines.spec import RunSpec

KERNEL_NAMES = {"fp16": "Half", "bf16": "BFloat16"}
LEARNING_RATES = {"sgd": 1e-3, "adamw": 1e-4}


class UnsupportedConfig(RuntimeError):
    """This combination of model, device, precision and options cannot run; the message says what to change."""


# ---- Public API
def load(spec: RunSpec) -> LoadedModel:
    started = time.perf_counter()
    import torch

    threads, threads_from = (spec.threads, "asked (--threads)") if spec.threads else cores.auto_threads()
    if threads:  # engine default on a confined worker: its own cores (engines.cores.auto_threads)
        torch.set_num_threads(threads)
    device = resolve_device(torch, spec.target)
    synchronize = facts.synchronizer(torch, device)
    if spec.is_file:
        prepared = _prepare_file(torch, spec, device)
    else:
        prepared = _prepare_catalog(torch, spec, device)
    options = spec.options_for("torch")
    if options.channels_last:
        _to_channels_last(torch, spec, prepared)
    if spec.mode == "training":
        infer = _training_step(torch, spec, device, prepared, synchronize)
    else:
        infer = _inference(torch, prepared, synchronize)
    synchronize()
    load_s = time.perf_counter() - started  # building and placing the model; compile and first step come apart
    if options.compile:
        infer = _compile(torch, spec, device, prepared, infer)
    elif spec.mode == "training":
        _first_step(torch, spec, device, prepared, infer)

    details = prepared.details
    details.update({
        "device": str(device), "device_name": facts.device_name(torch, device), "precision": spec.precision,
        "mode": spec.mode, "threads": torch.get_num_threads(), "threads_from": threads_from,
        "interop_threads": torch.get_num_interop_threads(),
        "channels_last": bool(options.channels_last), "compile": options.compile,
        "inputs": [{"name": name, "shape": list(t.shape), "dtype": facts.dtype_name(t.dtype)} if facts.is_tensor(t) else
                   {"name": name, "shape": [], "dtype": type(t).__name__}  # a TorchScript int/float argument
                   for name, t in zip(prepared.input_names, prepared.inputs, strict=True)],
    })
    details.setdefault("compile_s", None)
    if prepared.inputs and facts.is_tensor(prepared.inputs[0]):  # the first input, for the console's one-line summary
        details["input_shape"] = list(prepared.inputs[0].shape)
    return LoadedModel(
        infer=infer, load_s=load_s, params=prepared.param_count, model_bytes=prepared.model_bytes,
        versions=facts.versions(torch), details=plain(details),
        generator=generator(torch, spec, prepared, synchronize), profile=profiler(torch, device, infer),
        feed=_feeder(torch, prepared),
    )


def resolve_device(torch, target: str):
    """The torch.device for a target, or a clear error saying why it is not usable here."""
    if target == "cpu":
        return torch.device("cpu")
    if target == "mps":
        if not torch.backends.mps.is_available():
            why = ("this PyTorch was built without MPS" if not torch.backends.mps.is_built()
                   else "it needs macOS 12.3+ on Apple silicon")
            raise UnsupportedConfig(f"mps is not available: {why} — pick --target cpu")
        return torch.device("mps")
    head, _, index_text = target.partition(":")
    if head != "cuda":
        raise UnsupportedConfig(f"unknown target {target!r}; use cpu, cuda:N or mps")
    index = int(index_text or 0)
    name = f"cuda:{index}"
    if torch.version.cuda is None and not getattr(torch.version, "hip", None):
        raise UnsupportedConfig(f"{name} is not available: this PyTorch is a CPU-only build — pick --target cpu "
                                "or install a CUDA build of PyTorch")
    if not torch.cuda.is_available():
        raise UnsupportedConfig(f"{name} is not available: PyTorch {torch.__version__} (CUDA {torch.version.cuda}) "
                                "finds no usable GPU (no device, or a driver too old for this build) — pick "
                                "--target cpu or check the driver with nvidia-smi")
    count = torch.cuda.device_count()
    if index >= count:
        raise UnsupportedConfig(f"{name} is not available: this machine has {count} CUDA device(s) "
                                f"(cuda:0{f' … cuda:{count - 1}' if count > 1 else ''})")
    return torch.device(name)


def almost_empty_call(device) -> tuple[Callable[[], object], str]:
    """The machine card's per-call floor (engines.machine.floors): one call of a one-op module (x + 1) under
    inference_mode on `device` (an engines.machine.devices.Device), synchronised on a GPU; and how it is made."""
    import torch

    class AlmostEmpty(torch.nn.Module):
        def forward(self, x):
            return x + 1

    model = AlmostEmpty().eval()
    x = torch.zeros(1, device=device.torch_device)

    if device.kind == "cuda":
        def call():
            with torch.inference_mode():
                model(x)
            torch.cuda.synchronize(device.index)
    else:
        def call():
            with torch.inference_mode():
                return model(x)
    sync = ", synchronised" if device.kind == "cuda" else ""
    return call, f"nn.Module x + 1 on a 1-element float32 tensor on {device.target}, inference_mode{sync}"


# ---- Private API
@dataclass
class _Prepared:
    """A model made ready on its device: what to call, with which inputs, and what to report about it."""

    call: Callable[..., Any]
    module: Any  # the nn.Module when there is one (files may give only a callable), else None
    inputs: tuple[Any, ...]
    input_names: list[str]
    param_count: int
    model_bytes: int
    details: dict[str, Any] = field(default_factory=dict)
    family: Any = None  # the catalog family module, None for files
    params: dict[str, Any] = field(default_factory=dict)
    decoder: bool = False


def _prepare_catalog(torch, spec: RunSpec, device) -> _Prepared:
    entry = catalog.get(spec.model)
    params = catalog.params_for(spec.model, spec.model_params)
    specs = catalog.input_specs(spec.model, params, spec.generation)
    _check_combination(spec, device, specs)
    family = importlib.import_module(entry.module)
    model = family.build(params)
    if spec.precision in KERNEL_NAMES:
        _probe_precision(torch, spec, device, model)
    param_count = sum(p.numel() for p in model.parameters())
    model = model.to(device)
    inputs = tuple(t.to(device) for t in family.example_inputs(spec.batch, params, spec.generation))
    details: dict[str, Any] = {"model_params": dict(params), "dtype": DTYPES[spec.precision]}
    if spec.mode == "inference":
        if spec.precision == "int8":
            model, details["quantization"] = _quantize_dynamic(torch, spec, model)
            details["dtype"] = "qint8 weights (nn.Linear), float32 activations"
        elif spec.precision in KERNEL_NAMES:
            dtype = getattr(torch, DTYPES[spec.precision])
            model = model.to(dtype)
            inputs = tuple(t.to(dtype) if t.is_floating_point() else t for t in inputs)
    if spec.scenario == "generate" and entry.decoder:
        family.check_length(params, spec.generation.prompt_tokens, spec.generation.output_tokens)
    return _Prepared(call=model, module=model, inputs=inputs, input_names=[s["name"] for s in specs],
                     param_count=param_count, model_bytes=facts.model_bytes(torch, model), details=details,
                     family=family, params=params, decoder=entry.decoder)


def _prepare_file(torch, spec: RunSpec, device) -> _Prepared:
    name = os.path.basename(spec.model)
    if spec.precision == "int8":
        raise UnsupportedConfig(f"{name}: --precision int8 (dynamic quantization) applies to catalog models; "
                                "quantize the model before saving it, then run it with --precision fp32")
    from engines import model_files

    call, inputs, info = model_files.load_torch(spec, device)
    inputs = tuple(inputs)
    module = call if isinstance(call, torch.nn.Module) else None
    file_dtype = facts.file_dtype(module, inputs)
    wanted = getattr(torch, DTYPES[spec.precision])
    if file_dtype is not None and file_dtype != wanted:
        raise UnsupportedConfig(
            f"{name} computes in {facts.dtype_name(file_dtype)}, not {facts.dtype_name(wanted)}: run it with "
            f"--precision {facts.precision_of(file_dtype) or 'fp32'}, or save the model in "
            f"{facts.dtype_name(wanted)} (files are run as saved; only catalog models are cast)")
    if file_dtype is None and spec.precision != "fp32":
        raise UnsupportedConfig(f"{name}: cannot tell which dtype the file computes in (no floating weights or "
                                f"inputs), so --precision {spec.precision} cannot be checked; use --precision fp32")
    if spec.precision in KERNEL_NAMES and module is not None:
        _probe_precision(torch, spec, device, module)
    names = [str(i.get("name", f"input_{n}")) if isinstance(i, dict) else str(i)
             for n, i in enumerate(info.get("inputs") or [])]
    names += [f"input_{n}" for n in range(len(names), len(inputs))]
    param_count = int(info.get("params") or (sum(p.numel() for p in module.parameters()) if module is not None else 0))
    model_bytes = facts.model_bytes(torch, module) if module is not None else os.path.getsize(spec.model)
    dtype = facts.dtype_name(file_dtype) if file_dtype is not None else DTYPES[spec.precision]
    details = {"file": info, "dtype": dtype}
    return _Prepared(call=call, module=module, inputs=inputs, input_names=names[:len(inputs)],
                     param_count=param_count, model_bytes=model_bytes, details=details)


def _check_combination(spec: RunSpec, device, specs: list[dict[str, Any]]) -> None:
    """What can be refused before building anything: precision × device × mode, and layout options."""
    where = str(device)
    if spec.precision == "int8":
        if device.type != "cpu":
            raise UnsupportedConfig(f"int8 on {where}: dynamic quantization (torch.ao quantize_dynamic) runs on CPU "
                                    f"only; use --target cpu for int8, or fp16/bf16 on {where}")
        if spec.mode == "training":
            raise UnsupportedConfig("int8 training is not supported: dynamic quantization is inference-only; "
                                    "train in fp32 or bf16")
    if spec.mode == "training" and spec.precision == "fp16" and device.type != "cuda":
        raise UnsupportedConfig(f"fp16 training on {where} is refused: fp16 training needs loss scaling, which "
                                f"this backend does on CUDA only; train in bf16 (autocast) or fp32 on {where}")
    if spec.options_for("torch").channels_last and not any(len(s["shape"]) == 4 for s in specs):
        shapes = ", ".join(f"{s['name']} {s['shape']}" for s in specs)
        raise UnsupportedConfig(f"channels_last: {spec.model} has no 4-D (image) input ({shapes}); channels-last "
                                "applies to N×C×H×W tensors — turn it off for this model")


_PROBES: dict[str, Callable[[Any, Any, Any], Any]] = {
    # op name → a tiny call in the dtype; run only for the ops the model uses
    "conv2d": lambda t, F, o: F.conv2d(t.ones(1, 2, 5, 5, **o), t.ones(2, 2, 3, 3, **o), padding=1),
    "batch_norm": lambda t, F, o: F.batch_norm(t.ones(1, 2, 3, 3, **o), t.zeros(2, **o), t.ones(2, **o),
                                               t.ones(2, **o), t.zeros(2, **o)),
    "max_pool2d": lambda t, F, o: F.max_pool2d(t.ones(1, 2, 5, 5, **o), 3, 2, 1),
    "adaptive_avg_pool2d": lambda t, F, o: F.adaptive_avg_pool2d(t.ones(1, 2, 5, 5, **o), 1),
    "relu": lambda t, F, o: F.relu(t.ones(4, **o)),
    "linear": lambda t, F, o: F.linear(t.ones(2, 4, **o), t.ones(3, 4, **o), t.ones(3, **o)),
    "gelu": lambda t, F, o: F.gelu(t.ones(4, **o)),
    "layer_norm": lambda t, F, o: F.layer_norm(t.ones(2, 4, **o), (4,)),
    "embedding": lambda t, F, o: F.embedding(t.zeros(2, dtype=t.int64, device=o["device"]), t.ones(3, 4, **o)),
    "scaled_dot_product_attention": lambda t, F, o: F.scaled_dot_product_attention(
        t.ones(1, 2, 3, 4, **o), t.ones(1, 2, 3, 4, **o), t.ones(1, 2, 3, 4, **o), is_causal=True),
}
_MODULE_OPS = {"Conv2d": ("conv2d",), "BatchNorm2d": ("batch_norm",), "MaxPool2d": ("max_pool2d",),
               "AdaptiveAvgPool2d": ("adaptive_avg_pool2d",), "ReLU": ("relu",), "Linear": ("linear",),
               "GELU": ("gelu",), "LayerNorm": ("layer_norm",), "Embedding": ("embedding",)}


def _probe_precision(torch, spec: RunSpec, device, model) -> None:
    """Run each op the model uses once, tiny, in the wanted dtype: a missing kernel is named, not hit mid-run."""
    from torch.nn import functional as F

    dtype = getattr(torch, DTYPES[spec.precision])
    if device.type == "cuda" and spec.precision == "bf16" and not torch.cuda.is_bf16_supported():
        major, minor = torch.cuda.get_device_capability(device)
        raise UnsupportedConfig(f"bf16 on {device}: {torch.cuda.get_device_name(device)} (sm_{major}{minor}) has no "
                                "native bf16 (needs sm_80 or newer); use fp16 or fp32")
    ops: list[str] = []
    for module in model.modules():
        kind = type(module).__name__
        names = _MODULE_OPS.get(kind, ("scaled_dot_product_attention",) if kind.endswith("Attention") else ())
        ops += [n for n in names if n not in ops]
    others = " or ".join(p for p in ("bf16", "fp16", "fp32") if p != spec.precision)
    options = {"dtype": dtype, "device": device}
    for op in ops:
        try:
            _PROBES[op](torch, F, options)
        except (RuntimeError, NotImplementedError, TypeError) as exc:
            text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            if "not implemented for" in text or "Unsupported" in text or "unsupported" in text:
                raise UnsupportedConfig(f"{spec.precision} on {device}: {op} has no {KERNEL_NAMES[spec.precision]} "
                                        f"kernel in this PyTorch ({text}); use {others}") from exc
            raise UnsupportedConfig(f"{spec.precision} on {device}: {op} fails in {facts.dtype_name(dtype)} ({text}); "
                                    f"use {others}") from exc


def _quantize_dynamic(torch, spec: RunSpec, model):
    if torch.backends.quantized.engine in (None, "none"):
        raise UnsupportedConfig("int8 on cpu: this PyTorch has no quantized engine (fbgemm/x86/onednn/qnnpack); "
                                "use fp32 or bf16")
    try:
        from torch.ao.quantization import quantize_dynamic
    except ImportError as exc:
        raise UnsupportedConfig(f"int8: torch.ao.quantization is gone from PyTorch {torch.__version__}; use fp32 or "
                                "bf16 (or the ONNX Runtime engine for int8)") from exc
    linear_count = sum(isinstance(m, torch.nn.Linear) for m in model.modules())
    if not linear_count:
        raise UnsupportedConfig(f"int8: {spec.model} has no nn.Linear layer for dynamic quantization to act on; "
                                "use fp32, fp16 or bf16")
    with warnings.catch_warnings():  # torch.ao.quantization announces its deprecation on every call
        warnings.simplefilter("ignore")
        quantized = quantize_dynamic(model, {torch.nn.Linear}, dtype=torch.qint8)
    return quantized, {"method": "dynamic quantization (torch.ao.quantization.quantize_dynamic)", "weights": "qint8",
                       "activations": "float32, quantized per call", "quantized_modules": linear_count,
                       "engine": str(torch.backends.quantized.engine),
                       "note": "only nn.Linear layers are quantized; convolutions and norms stay fp32"}


def _to_channels_last(torch, spec: RunSpec, prepared: _Prepared) -> None:
    if not any(facts.is_tensor(t) and t.dim() == 4 for t in prepared.inputs):
        shapes = ", ".join(f"{n} {list(t.shape) if facts.is_tensor(t) else '(a number)'}"
                           for n, t in zip(prepared.input_names, prepared.inputs, strict=True))
        raise UnsupportedConfig(f"channels_last: {os.path.basename(spec.model)} has no 4-D (image) input ({shapes}); "
                                "channels-last applies to N×C×H×W tensors — turn it off for this model")
    if prepared.module is not None:
        prepared.module.to(memory_format=torch.channels_last)
    prepared.inputs = tuple(t.contiguous(memory_format=torch.channels_last)
                            if facts.is_tensor(t) and t.dim() == 4 else t for t in prepared.inputs)


def _inference(torch, prepared: _Prepared, synchronize: Callable[[], None]) -> Callable[[], Any]:
    inputs = prepared.inputs

    def infer():
        with torch.inference_mode():
            out = prepared.call(*inputs)
        synchronize()
        return out

    return infer


def _feeder(torch, prepared: _Prepared) -> Callable[[dict[str, Any]], None]:
    """Copy host arrays into the input tensors `infer` reads, in place (`copy_` casts and moves to the device)."""

    def feed(arrays: dict[str, Any]) -> None:
        names = prepared.input_names
        for name, array in arrays.items():
            if name not in names:
                raise KeyError(f"feed: the model has no input {name!r}; its inputs are {', '.join(names)}")
            tensor = prepared.inputs[names.index(name)]
            source = torch.from_numpy(array)
            if tuple(source.shape) != tuple(tensor.shape):
                raise ValueError(f"feed {name}: shape {list(source.shape)} does not fit the model's input "
                                 f"{list(tensor.shape)}")
            tensor.copy_(source)

    return feed


@dataclass
class Training:
    """What one training step needs, built once: the DDP ranks (engines.ddp.rank) time each part of the step
    themselves, so they take the parts rather than the single-process `step` closure built from them."""

    module: Any  # the nn.Module, in train mode
    loss_fn: Callable[[Any], Any]  # model output → scalar loss
    inputs: tuple[Any, ...]  # the example inputs on the device, at spec.batch
    optimizer: Any
    autocast: Callable[[], Any]  # a fresh context manager per forward (nullcontext in fp32)
    scaler: Any  # torch.amp.GradScaler for fp16, else None
    details: dict[str, Any]
    prepared: _Prepared


def prepare_training(spec: RunSpec, device, prepared: _Prepared | None = None) -> Training:
    """A catalog model made ready to train on `device` at `spec.batch`: model, loss, inputs, optimizer, autocast
    and loss scaler, as the single-process training step uses them (`prepared`: an already built model)."""
    import torch

    if prepared is None:
        prepared = _prepare_catalog(torch, spec, device)
    model, family = prepared.module, prepared.family
    model.train()
    kind = getattr(family, "OPTIMIZER", "sgd")
    rate = LEARNING_RATES[kind]
    if kind == "adamw":
        optimizer = torch.optim.AdamW(model.parameters(), lr=rate)
        described = f"AdamW (lr {rate:g})"
    else:
        optimizer = torch.optim.SGD(model.parameters(), lr=rate, momentum=0.9)
        described = f"SGD with momentum 0.9 (lr {rate:g})"
    loss_fn = family.training_loss(prepared.params, prepared.inputs)
    scaler = None
    if spec.precision in KERNEL_NAMES:
        dtype = getattr(torch, DTYPES[spec.precision])
        autocast = lambda: torch.autocast(device_type=device.type, dtype=dtype)  # noqa: E731
        if spec.precision == "fp16":
            scaler = torch.amp.GradScaler(device.type)
        prepared.details["dtype"] = f"{DTYPES[spec.precision]} (autocast), float32 master weights"
    else:
        autocast = contextlib.nullcontext
    prepared.details.update({
        "optimizer": described, "loss": "next-token cross-entropy" if prepared.decoder else
        "cross-entropy against fixed random labels", "gradient_scaling": scaler is not None,
    })
    return Training(module=model, loss_fn=loss_fn, inputs=prepared.inputs, optimizer=optimizer, autocast=autocast,
                    scaler=scaler, details=prepared.details, prepared=prepared)


def _training_step(torch, spec: RunSpec, device, prepared: _Prepared,
                   synchronize: Callable[[], None]) -> Callable[[], Any]:
    training = prepare_training(spec, device, prepared)
    optimizer, loss_fn, autocast, scaler = training.optimizer, training.loss_fn, training.autocast, training.scaler
    inputs = prepared.inputs

    def step():
        optimizer.zero_grad(set_to_none=True)
        with autocast():
            loss = loss_fn(prepared.call(*inputs))  # prepared.call: torch.compile may replace it after this
        if scaler is not None:
            scaler.scale(loss).backward()
            scaler.step(optimizer)
            scaler.update()
        else:
            loss.backward()
            optimizer.step()
        synchronize()
        return loss.detach()

    return step


def _first_step(torch, spec: RunSpec, device, prepared: _Prepared, step: Callable[[], Any]) -> None:
    """One training step at load (not measured): allocates optimizer state, then peak memory is known."""
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)
    started = time.perf_counter()
    try:
        step()
    except Exception as exc:  # noqa: BLE001 — say it was the training step, keep the cause
        raise UnsupportedConfig(f"the first training step of {spec.model} failed: {type(exc).__name__}: "
                                f"{str(exc).strip().splitlines()[0] if str(exc).strip() else ''}") from exc
    prepared.details["first_step_ms"] = (time.perf_counter() - started) * 1e3
    prepared.details.update(facts.peak_memory(torch, device))


def _compile(torch, spec: RunSpec, device, prepared: _Prepared, infer: Callable[[], Any]) -> Callable[[], Any]:
    """Compile, then call once on the example input so compilation happens here and is timed apart."""
    mode = spec.options_for("torch").compile
    try:
        compiled = torch.compile(prepared.call, mode=mode)
    except Exception as exc:  # noqa: BLE001
        raise _compile_error(spec, device, exc) from exc
    prepared.call = compiled  # infer reads prepared.call at each call
    if device.type == "cuda" and spec.mode == "training":
        torch.cuda.reset_peak_memory_stats(device)
    started = time.perf_counter()
    try:
        infer()
    except Exception as exc:  # noqa: BLE001
        raise _compile_error(spec, device, exc) from exc
    prepared.details["compile_s"] = time.perf_counter() - started
    prepared.details["compile_note"] = ("compile_s is the first call on the example input (tracing and code "
                                        "generation; for training, the first step), timed at load and counted "
                                        "neither in load_s nor in the measurement")
    if spec.mode == "training":
        prepared.details.update(facts.peak_memory(torch, device))
    return infer


def _compile_error(spec: RunSpec, device, exc: BaseException) -> UnsupportedConfig:
    text = str(exc).strip().splitlines()[0][:400] if str(exc).strip() else ""
    hint = (" torch.compile on CPU generates C++: it needs a working C++ compiler (gcc or clang) and the Python "
            "headers." if device.type == "cpu" else "")
    return UnsupportedConfig(f"torch.compile (mode {spec.options_for('torch').compile}) failed on {device}: {type(exc).__name__}: "
                             f"{text}.{hint} Run without --compile to measure eager mode")


