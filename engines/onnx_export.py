"""Catalog models → one self-contained ONNX file each, exported once, cached, and checked against PyTorch.

Cross-engine runs are only comparable when both engines compute the same function: the model is built exactly
as the PyTorch backend builds it (`catalog.params_for` + the family's `build`, fp32 on the CPU), exported with
the dynamo exporter (`torch.onnx.export(dynamo=True, external_data=False)`), and ONNX Runtime's outputs are
compared with PyTorch's on the family's example inputs before any run measures it. A mismatch is an error, with
the numbers.

Cache: `cache_dir()/onnx/<model>-<precision>-<key>.onnx` plus `<...>.check.json`, the key a hash of (model,
parameters with overrides, opset, precision, torch and onnxscript versions, the catalog's source code, this
exporter's format version). The check is stored with the file and reused with it: on reuse the file's sha256 must
match the one the check recorded, and the key guarantees the same model code and exporter, so the check still
describes the file; anything else exports (and checks) again. Batch is a dynamic axis, and so is
every axis the catalog marks dynamic (the sequence axis of text models), so one file serves every batch size
and sequence length. Files are written to a temporary name and renamed, under a lock file, so a crash or a
concurrent worker never leaves half a model in the cache; a failed check leaves nothing behind.

Export runs on a batch of 2 (a batch of 1 would be specialised by torch.export) and the check compares both
batch 2 and batch 1, proving the batch axis really is dynamic.

Decoder models (gpt) get a second export on request, `part="decode"`: forward(one token, KV cache) with the
batch and the cache length dynamic, so ONNX Runtime can run the generate scenario (prefill with the forward
export, then one decode step per token), checked the same way.

fp16 (for CUDA execution providers only; the ONNX Runtime backend refuses it on CPU) exports the model after
`.half()`, with float inputs in half, and checks against PyTorch's fp16 outputs at a looser tolerance.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib
import json
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from engines import cache, catalog
from engines.model_files import sha256
from engines.quiet import quiet

PARTS = ("forward", "decode")
DECODE_PAST = 8  # cached tokens in the decode step's example (not 0 or 1, which torch.export would specialise)
EXPORT_FORMAT = 1  # bump when the export recipe changes, so old cache entries are not reused
EXPORT_BATCH = 2
CHECK_BATCHES = (EXPORT_BATCH, 1)
# The exporter prints progress to stdout and warnings to stderr through these; quieted while it runs.
_EXPORTER_LOGGERS = ("torch.onnx", "torch.export", "torch._export", "onnxscript",
                     "torch.fx.experimental.symbolic_shapes")
TOLERANCE = {"fp32": {"rtol": 1e-3, "atol": 1e-4}, "fp16": {"rtol": 2e-2, "atol": 2e-2}}


class ExportError(RuntimeError):
    """Export failed, or ONNX Runtime's outputs differ from PyTorch's beyond the tolerance."""


# ---- Public API
def export_catalog(spec, providers: list[Any] | None = None, part: str = "forward") -> tuple[Path, dict[str, Any]]:
    """The cached ONNX file for this spec's catalog model (exported if needed) and its check (plain dict).

    `part` is "forward" (the model's forward on its example inputs: what single-stream runs, and a decoder's
    prefill) or "decode" (a decoder's one-token step with its KV cache, for the generate scenario).
    `providers` run the check (default: the CPU execution provider; an fp16 export is checked on the GPU
    provider that will run it). The check carries `cached` (True when the file was reused) and `prepare_s`
    (export + check seconds now).
    """
    if part not in PARTS:
        raise ValueError(f"part must be one of {', '.join(PARTS)}, got {part!r}")
    if part == "decode" and not catalog.get(spec.model).decoder:
        raise ExportError(f"{spec.model} is not a decoder model: it has no decode step to export")
    started = time.perf_counter()
    precision = "fp16" if spec.precision == "fp16" else "fp32"
    params = _params(spec.model, spec.model_params)
    path, key = cache_path(spec.model, params, spec.options_for("onnxruntime").opset, precision, part)
    check_file = path.with_name(path.name[: -len(".onnx")] + ".check.json")
    with _file_lock(path.with_name(path.name + ".lock")):
        check = _cached_check(path, check_file)
        if check is None:
            check = _export_and_check(spec, params, precision, path, check_file, key, providers, part)
            check["cached"] = False
        else:
            check["cached"] = True
    check["prepare_s"] = time.perf_counter() - started
    return path, check


def cache_path(model: str, params: dict[str, Any], opset: int, precision: str = "fp32",
               part: str = "forward") -> tuple[Path, dict]:
    """Where the export of (model, params, opset, precision, part) lives, and the key material hashed to name it."""
    import torch

    key = {"model": model, "params": params, "opset": int(opset), "precision": precision, "part": part,
           "torch": str(torch.__version__), "onnxscript": _version("onnxscript"), "format": EXPORT_FORMAT,
           "catalog_source": _catalog_source_digest()}
    digest = hashlib.sha256(json.dumps(key, sort_keys=True, default=str).encode()).hexdigest()[:16]
    label = model if part == "forward" else f"{model}-{part}"
    return cache.subdir("onnx") / f"{label}-{precision}-{digest}.onnx", key


def input_layout(model: str, params: dict[str, Any], generation: Any = None) -> list[dict[str, Any]]:
    """[{name, dtype, shape, dynamic}] for a catalog model; tolerates families that predate input_specs."""
    builder = importlib.import_module(catalog.get(model).module)
    if hasattr(builder, "input_specs"):
        return [dict(s) for s in builder.input_specs(params, generation)]
    example = example_inputs(builder, 1, params, generation)
    return [{"name": "input" if len(example) == 1 else f"input_{i}", "dtype": str(t.dtype).replace("torch.", ""),
             "shape": ["batch", *t.shape[1:]], "dynamic": ["batch"] + [None] * (t.dim() - 1)}
            for i, t in enumerate(example)]


def example_inputs(builder, batch: int, params: dict[str, Any], generation: Any = None) -> tuple[Any, ...]:
    """The family's example inputs: `example_inputs(batch, params, generation)`, or the older single input."""
    if hasattr(builder, "example_inputs"):
        return tuple(builder.example_inputs(batch, params, generation))
    return (builder.example_input(batch, params),)


def compare(got: list[Any], expected: list[Any], rtol: float, atol: float) -> dict[str, Any]:
    """max |a-b|, max |a-b| / max(|b|, atol), and whether every element is within atol + rtol·|b|."""
    import numpy as np

    if len(got) != len(expected):
        return {"passed": False, "max_abs_diff": None, "max_rel_diff": None, "outputs": len(got),
                "elements": 0, "reason": f"ONNX Runtime gave {len(got)} outputs, PyTorch {len(expected)}"}
    max_abs = max_rel = 0.0
    passed, elements = True, 0
    for a, b in zip(got, expected, strict=True):
        a = np.asarray(a, dtype=np.float64)
        b = np.asarray(b, dtype=np.float64)
        if a.shape != b.shape:
            return {"passed": False, "max_abs_diff": None, "max_rel_diff": None, "outputs": len(got),
                    "elements": elements, "reason": f"output shape {list(a.shape)} ≠ PyTorch's {list(b.shape)}"}
        diff = np.abs(a - b)
        if not np.all(np.isfinite(diff) | (a == b)):
            passed = False
        if diff.size:
            finite = np.where(np.isfinite(diff), diff, np.inf)
            max_abs = max(max_abs, float(finite.max()))
            max_rel = max(max_rel, float((finite / np.maximum(np.abs(b), atol)).max()))
            passed = passed and bool(np.all(diff <= atol + rtol * np.abs(b)))
        elements += int(diff.size)
    return {"passed": passed, "max_abs_diff": max_abs, "max_rel_diff": max_rel, "outputs": len(got),
            "elements": elements}


# ---- Private API
def _catalog_source_digest() -> str:
    """A hash of the catalog's code: a changed model definition must not reuse an export of the old one."""
    digest = hashlib.sha256()
    folder = Path(catalog.__file__).parent
    for source in sorted(folder.glob("*.py")):
        digest.update(source.name.encode())
        digest.update(source.read_bytes())
    return digest.hexdigest()[:16]


def _version(package: str) -> str:
    try:
        from importlib.metadata import version

        return version(package)
    except Exception:  # noqa: BLE001 — a frozen bundle may lack the metadata
        return "unknown"


def _params(model: str, overrides: dict[str, Any]) -> dict[str, Any]:
    if hasattr(catalog, "params_for"):
        return catalog.params_for(model, overrides)
    return {**catalog.get(model).params, **(overrides or {})}


def _cached_check(path: Path, check_file: Path) -> dict[str, Any] | None:
    """The stored check when the file is there, intact (same sha256) and passed; else None (export again)."""
    if not path.is_file() or not check_file.is_file():
        return None
    try:
        check = json.loads(check_file.read_text())
    except (OSError, ValueError):
        return None
    if not check.get("passed") or check.get("onnx_sha256") != sha256(path):
        return None
    return check


def _export_and_check(spec, params: dict[str, Any], precision: str, path: Path, check_file: Path,
                      key: dict[str, Any], providers: list[Any] | None, part: str) -> dict[str, Any]:
    import torch

    builder = importlib.import_module(catalog.get(spec.model).module)
    model = builder.build(params).eval().float()
    if precision == "fp16":
        model = model.half()
    layout = input_layout(spec.model, params) if part == "forward" else DECODE_LAYOUT
    names = [item["name"] for item in layout]
    export_args = _examples(part, model, builder, EXPORT_BATCH, params, precision)
    with torch.inference_mode():
        reference_outputs = _leaves(model(*export_args))
    output_names = ["output"] if len(reference_outputs) == 1 else [f"output_{i}" for i in
                                                                   range(len(reference_outputs))]
    tmp = cache.temp_path(path).with_suffix(".onnx")
    exported = time.perf_counter()
    try:
        _export(torch, model, export_args, tmp, names, output_names, layout, spec.options_for("onnxruntime").opset)
        export_s = time.perf_counter() - exported
        checked = time.perf_counter()
        check = _check(tmp, model, builder, params, names, precision, providers, part)
        check.update(export_s=export_s, check_s=time.perf_counter() - checked, onnx_sha256=sha256(tmp),
                     opset=int(spec.options_for("onnxruntime").opset), precision=precision, key=key, input_names=names,
                     output_names=output_names, part=part,
                     reference=f"torch {torch.__version__} eager, {precision}, cpu")
        if not check["passed"]:
            raise ExportError(_failure_message(spec.model, check))
        os.replace(tmp, path)
        cache.atomic_write_bytes(check_file, json.dumps(check, indent=1, sort_keys=True).encode())
        return check
    finally:
        with contextlib.suppress(OSError):
            tmp.unlink()


def _export(torch, model, args, tmp: Path, names, output_names, layout, opset: int) -> None:
    """torch.onnx.export with named dynamic dims; when torch.export refuses them, let it pick (Dim.AUTO)."""
    dims: dict[str, Any] = {}
    named = tuple({axis: dims.setdefault(d, torch.export.Dim(d)) for axis, d in enumerate(item.get("dynamic") or [])
                   if d} for item in layout)
    auto = tuple({axis: torch.export.Dim.AUTO for axis, d in enumerate(item.get("dynamic") or []) if d}
                 for item in layout)
    failures = []
    for dynamic_shapes in (named, auto):
        try:
            with quiet(*_EXPORTER_LOGGERS):
                torch.onnx.export(model, args, str(tmp), dynamo=True, external_data=False, input_names=names,
                                  output_names=output_names, dynamic_shapes=dynamic_shapes, opset_version=opset,
                                  verbose=False, report=False)
            return
        except Exception as exc:  # noqa: BLE001 — torch.export raises many kinds; try the fallback, then report
            failures.append(f"{type(exc).__name__}: {str(exc).strip().splitlines()[0][:300] if str(exc) else ''}")
    raise ExportError(f"could not export to ONNX (opset {opset}): {failures[-1]} (with named dynamic dims: "
                      f"{failures[0]})")


def _check(file: Path, model, builder, params, names, precision: str, providers, part: str) -> dict[str, Any]:
    """ONNX Runtime (default options) against PyTorch eager (CPU) on the example inputs at each check batch."""
    import onnxruntime
    import torch

    tolerance = TOLERANCE[precision]
    options = onnxruntime.SessionOptions()
    options.log_severity_level = 3
    session = onnxruntime.InferenceSession(str(file), options, providers=providers or ["CPUExecutionProvider"])
    results = []
    for batch in CHECK_BATCHES:
        args = _examples(part, model, builder, batch, params, precision)
        with torch.inference_mode():
            expected = [t.float().numpy() for t in _leaves(model(*args))]
        got = session.run(None, {name: t.numpy() for name, t in zip(names, args, strict=True)})
        results.append(compare(got, expected, **tolerance))
    worst = {"passed": all(r["passed"] for r in results), "tolerance": dict(tolerance),
             "checked_on": list(session.get_providers())[:1],
             "batches": list(CHECK_BATCHES), "outputs": results[0]["outputs"],
             "elements": sum(r["elements"] for r in results)}
    for field in ("max_abs_diff", "max_rel_diff"):
        values = [r[field] for r in results if r[field] is not None]
        worst[field] = max(values) if values else None
    reasons = [r["reason"] for r in results if r.get("reason")]
    if reasons:
        worst["reason"] = reasons[0]
    return worst


def _failure_message(model: str, check: dict[str, Any]) -> str:
    tol = check["tolerance"]
    if check.get("reason"):
        detail = check["reason"]
    else:
        detail = (f"max |diff| {check['max_abs_diff']:.3g}, max relative diff {check['max_rel_diff']:.3g}, "
                  f"tolerance atol {tol['atol']:g} + rtol {tol['rtol']:g}·|expected|")
    return (f"ONNX export of {model} does not match PyTorch ({detail}, over {check['elements']} values at batch "
            f"{', '.join(str(b) for b in check['batches'])}); not measuring a different function. Fix: try another "
            "opset (ort.opset), or report the model and these numbers")


# A decoder's decode step: one new token per row and the KV cache of the tokens before it. The cache tensor is
# [layers, 2, batch, heads, past, head_dim] (engines/catalog/gpt.py), so batch and past are its dynamic axes.
DECODE_LAYOUT = [{"name": "input_ids", "dynamic": ["batch", None]},
                 {"name": "past_key_values", "dynamic": [None, None, "batch", None, "past", None]}]


def _examples(part: str, model, builder, batch: int, params: dict[str, Any], precision: str) -> tuple[Any, ...]:
    """Inputs for export and check: the family's example inputs, or (next token, KV cache of a short prefix)."""
    import torch

    args = _cast(example_inputs(builder, batch, params), precision)
    if part == "forward":
        return args
    prefix = args[0][:, :DECODE_PAST]
    with torch.no_grad():  # not inference_mode: the cache is an export input and must be a normal tensor
        _, past = model(prefix)
    return args[0][:, DECODE_PAST:DECODE_PAST + 1].clone(), past.clone()


def _cast(args: tuple[Any, ...], precision: str) -> tuple[Any, ...]:
    if precision != "fp16":
        return args
    return tuple(t.half() if t.is_floating_point() else t for t in args)


def _leaves(output: Any) -> list[Any]:
    import torch

    return [t for t in torch.utils._pytree.tree_leaves(output) if isinstance(t, torch.Tensor)]


@contextlib.contextmanager
def _file_lock(path: Path) -> Iterator[None]:
    """An exclusive lock (POSIX flock; none on Windows), so two workers never export the same file at once."""
    try:
        import fcntl
    except ImportError:  # Windows: the atomic rename still keeps the cache consistent
        yield
        return
    with open(path, "a+b") as handle:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)
