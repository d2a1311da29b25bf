"""The user's own model files (.onnx, .pt2, TorchScript .pt/.jit): identify, inspect and load them safely.

Lab Console never unpickles a model file: a pickle can run any code when it is loaded, and a lab machine
runs files that come from anywhere. What is loaded:

- ONNX: a protobuf, parsed by onnx / ONNX Runtime; external data (`model.onnx.data`) beside it is checked
  before loading, so a missing or short data file is named rather than reported as a parse error.
- TorchScript (`torch.jit.save`): read by TorchScript's own C++ loader, which builds only TorchScript types;
  a zip made by `torch.save` (a pickle of Python objects, `data.pkl` without `code/`) is refused.
- torch.export (`torch.export.save`, .pt2): its graph is JSON and its weights raw bytes, but the format
  *may* carry pickles (weights or constants saved with pickle, a fallback for sample inputs). Archives that
  declare pickled payloads or carry AOTInductor native code are refused up front, and while torch loads the
  archive `torch.load` is held to `weights_only=True` and `pickle.loads` refuses, so nothing slips through.

The format is decided by the file's content, not its extension; a mismatch (an ONNX file named `.pt`) is an
error that says what the file really is and what to do.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from engines import inputs as model_inputs

PICKLE_REFUSAL = ("is a pickled Python object (torch.save), not TorchScript; Lab Console never unpickles model "
                  "files because a pickle can run code. Fix: torch.jit.script(model).save(path) (or "
                  "torch.jit.trace(model, example).save(path)), or torch.export.save(torch.export.export(model, "
                  "example), 'model.pt2')")
_TORCH_SAVE_HINT = "save it with torch.jit.script(model).save(path) or torch.export.save(exported, 'model.pt2')"
_ONNX_STANDARD_DOMAINS = {"", "ai.onnx", "ai.onnx.ml", "ai.onnx.preview.training", "ai.onnx.training"}
_CHUNK = 1 << 20


class ModelFileError(ValueError):
    """A model file cannot be used; the message names the file, what is wrong with it and the fix."""


class UnsafeModelFile(ModelFileError):
    """The file would need unpickling (or native code) to load; it is refused, never loaded.

    Not a RuntimeError on purpose: torch.export.load swallows RuntimeError and retries an older format.
    """


# ---- Public API
def sha256(path: str | os.PathLike) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(_CHUNK), b""):
            digest.update(block)
    return digest.hexdigest()


def detect_format(path: str | os.PathLike) -> str:
    """'onnx' | 'torchscript' | 'pt2' from the file's content; anything else is a ModelFileError."""
    path = Path(path)
    head = _head(path)
    if head.startswith(b"PK\x03\x04") or head.startswith(b"PK\x05\x06"):
        return _zip_format(path)
    if _looks_like_pickle(head, _tail(path)):
        raise UnsafeModelFile(f"{path} {PICKLE_REFUSAL}")
    _parse_onnx(path)  # raises with a message fitting the extension when it is not ONNX either
    return "onnx"


def inspect(path: str | os.PathLike) -> dict[str, Any]:
    """Plain facts about a model file: format, inputs/outputs (name, dtype, shape), size, sha256, ….

    Dims are ints, symbolic names (str) or None (dynamic without a name). For TorchScript, which stores no
    shapes or dtypes, inputs list names and argument types only (shape None).
    """
    path = Path(path)
    fmt = detect_format(path)
    info: dict[str, Any] = {"file": str(path), "format": fmt, "size_bytes": path.stat().st_size,
                            "sha256": sha256(path)}
    if fmt == "onnx":
        info.update(inspect_onnx(path))
    elif fmt == "pt2":
        with _torch_quiet():
            program = load_exported_program(path)
        info.update(_pt2_signature(program))
    else:
        info.update(_torchscript_signature(path))
    return info


def inspect_onnx(path: str | os.PathLike) -> dict[str, Any]:
    """ONNX inputs/outputs, opsets, initializer counts and external data files (checked to exist and fit)."""
    path = Path(path)
    model = _parse_onnx(path)
    external = check_external_data(path, model)
    graph = model.graph
    initializers = {t.name for t in graph.initializer}
    params, param_bytes = initializer_totals(model)
    return {
        "inputs": [_onnx_value_info(v) for v in graph.input if v.name not in initializers],
        "outputs": [_onnx_value_info(v) for v in graph.output],
        "opsets": {(o.domain or "ai.onnx"): int(o.version) for o in model.opset_import},
        "ir_version": int(model.ir_version),
        "producer": f"{model.producer_name} {model.producer_version}".strip(),
        "external_data": external,
        "params": params,
        "param_bytes": param_bytes,
        "nodes": len(graph.node),
    }


def initializer_totals(model) -> tuple[int, int]:
    """(number of weight elements, their bytes) from the initializers' dims, without reading external data."""
    import numpy as np
    from onnx import helper

    count = size = 0
    for tensor in model.graph.initializer:
        n = int(np.prod(tensor.dims, dtype=np.int64)) if tensor.dims else 1
        try:
            itemsize = np.dtype(helper.tensor_dtype_to_np_dtype(tensor.data_type)).itemsize
        except (KeyError, TypeError, ValueError):
            itemsize = 1
        if tensor.data_type in (helper.TensorProto.INT4, helper.TensorProto.UINT4):
            nbytes = (n + 1) // 2
        else:
            nbytes = n * itemsize
        count += n
        size += nbytes
    return count, size


def check_external_data(path: Path, model) -> list[str]:
    """Every external data file named by the model must exist beside it and hold the bytes the model expects."""
    from onnx import TensorProto

    base = path.parent.resolve()
    needed: dict[str, int] = {}
    for tensor in _all_tensors(model):
        if tensor.data_location != TensorProto.EXTERNAL:
            continue
        entries = {e.key: e.value for e in tensor.external_data}
        location = entries.get("location", "")
        end = int(entries.get("offset", 0) or 0) + int(entries.get("length", 0) or 0)
        needed[location] = max(needed.get(location, 0), end)
    for location, end in needed.items():
        target = (base / location).resolve()
        if not location or os.path.isabs(location) or base not in (target, *target.parents):
            raise ModelFileError(f"{path}: external data location {location!r} points outside the model's folder; "
                                 "refused. Keep the data file beside the .onnx and reference it by file name")
        if not target.is_file():
            raise ModelFileError(f"{path}: its weights live in an external data file {location!r}, which is "
                                 f"missing (looked for {target}). Fix: keep the .onnx and its data file together "
                                 "in one folder, or re-export with torch.onnx.export(..., external_data=False)")
        if target.stat().st_size < end:
            raise ModelFileError(f"{path}: external data file {target} is truncated ({target.stat().st_size} bytes, "
                                 f"the model needs {end}). Fix: copy it again or re-export the model")
    return sorted(needed)


def load_exported_program(path: str | os.PathLike):
    """torch.export.load, after refusing archives that need unpickling or native code, with pickling held off."""
    import torch

    path = Path(path)
    _check_pt2_archive(path)
    with _no_unpickling(torch):
        try:
            return torch.export.load(str(path))
        except UnsafeModelFile as exc:
            if str(path) in str(exc):
                raise
            raise UnsafeModelFile(f"{path}: {exc}") from None
        except Exception as exc:  # noqa: BLE001 — a damaged archive, a newer schema …
            raise ModelFileError(f"{path}: torch.export could not load it ({type(exc).__name__}: "
                                 f"{_first_line(exc)}). Fix: re-save it with torch.export.save from this torch "
                                 f"version ({torch.__version__})") from exc


def load_torch(spec, device) -> tuple[Any, tuple[Any, ...], dict[str, Any]]:
    """A .pt2 or TorchScript file → (module, inputs on `device`, plain info dict).

    info: file, format, size_bytes, sha256, inputs [{name, dtype, shape, declared}], params.

    Inputs: .pt2 declares names, dtypes and shapes (dynamic dims symbolic: the first is the batch; others
    default to the size in the program's saved example inputs). TorchScript declares only argument names, so
    every tensor input needs `spec.inputs[name]`; its dtype is float32, or int64 for `*ids` names.
    Call the module as `module(*inputs)`.
    """
    import torch

    path = Path(spec.model)
    fmt = detect_format(path)
    device = torch.device(device)
    if fmt == "onnx":
        raise ModelFileError(f"{path} is an ONNX model, which runs on --engine onnxruntime, not torch"
                             + ("; rename it to .onnx" if path.suffix.lower() != ".onnx" else ""))
    info: dict[str, Any] = {"file": str(path), "format": fmt, "size_bytes": path.stat().st_size,
                            "sha256": sha256(path)}
    with _torch_quiet():
        if fmt == "pt2":
            program = load_exported_program(path)
            signature = _pt2_signature(program)
            declared = signature["inputs"]
            _check_no_kwargs(program, path)
            arrays, resolved = model_inputs.resolve_inputs(
                declared, spec.batch, spec.inputs, spec.input_values, defaults=signature["example_dims"])
            _check_ranges(path, resolved, signature["ranges"])
            if device.type != "cpu":
                from torch.export.passes import move_to_device_pass

                program = move_to_device_pass(program, device)
            module = program.module()
        else:
            try:
                module = torch.jit.load(str(path), map_location=device)
            except Exception as exc:  # noqa: BLE001
                raise ModelFileError(f"{path}: TorchScript could not load it ({type(exc).__name__}: "
                                     f"{_first_line(exc)}). Fix: {_TORCH_SAVE_HINT}") from exc
            module.eval()
            declared = _torchscript_declared(module, spec, path)
            python_scalars = {d["name"] for d in declared if d.pop("python_scalar", False)}
            arrays, resolved = model_inputs.resolve_inputs(declared, spec.batch, spec.inputs, spec.input_values)
    if fmt == "pt2":
        python_scalars = set(signature["scalars"])
    tensors = []
    for item in resolved:
        array = arrays[item["name"]]
        if item["name"] in python_scalars:
            tensors.append(array.item())
        else:
            tensors.append(torch.from_numpy(array).to(device))
    info["inputs"] = resolved
    info["params"] = int(sum(p.numel() for p in module.parameters()))
    return module, tuple(tensors), info


# ---- Private API
def _tail(path: Path) -> bytes:
    with open(path, "rb") as handle:
        handle.seek(max(0, path.stat().st_size - 1))
        return handle.read(1)


def _head(path: Path, size: int = 16) -> bytes:
    if not path.exists():
        raise ModelFileError(f"model file not found: {path}")
    if not path.is_file():
        raise ModelFileError(f"{path} is not a file")
    if path.stat().st_size == 0:
        raise ModelFileError(f"{path} is empty (0 bytes): the export or copy that made it did not finish. Fix: "
                             "export or copy the model again")
    with open(path, "rb") as handle:
        return handle.read(size)


def _looks_like_pickle(head: bytes, tail: bytes = b"") -> bool:
    """Pickle protocol 2+ starts with PROTO (0x80) and the protocol number (torch.save's legacy format too);
    protocols 0/1 start with a MARK/EMPTY_LIST/EMPTY_DICT/GLOBAL opcode and end with STOP ('.')."""
    if len(head) >= 2 and head[0] == 0x80 and 2 <= head[1] <= 5:
        return True
    return head[:1] in (b"(", b"]", b"}", b"c") and tail.endswith(b".")


def _zip_format(path: Path) -> str:
    try:
        with zipfile.ZipFile(path) as archive:
            names = archive.namelist()
    except (zipfile.BadZipFile, OSError, ValueError) as exc:
        raise ModelFileError(f"{path} is a damaged or truncated archive ({exc}); copy or save it again "
                             f"({_TORCH_SAVE_HINT})") from exc
    members = {_strip_root(name) for name in names}
    if "archive_format" in members or any(m.startswith("models/") and m.endswith(".json") for m in members) \
            or "serialized_exported_program.json" in members:
        return "pt2"
    if any(m.startswith("code/") for m in members) or "constants.pkl" in members:
        return "torchscript"
    if "data.pkl" in members:
        raise UnsafeModelFile(f"{path} {PICKLE_REFUSAL}")
    raise ModelFileError(f"{path} is a zip archive but neither TorchScript nor a torch.export program "
                         f"(members: {', '.join(sorted(members)[:5])}…). Fix: {_TORCH_SAVE_HINT}")


def _strip_root(name: str) -> str:
    """Torch archives put everything under one top folder (named after the file); drop it."""
    head, sep, rest = name.partition("/")
    return rest if sep else name


def _parse_onnx(path: Path):
    """The ModelProto without external data, or a ModelFileError that says what the file is instead."""
    import onnx
    from google.protobuf.message import DecodeError

    head = _head(path)
    suffix = path.suffix.lower()
    if head.startswith(b"PK\x03\x04"):
        raise ModelFileError(f"{path} is a PyTorch archive (zip), not an ONNX model. Fix: rename it to .pt2 or "
                             ".pt (whichever it is) and run it with --engine torch")
    if _looks_like_pickle(head, _tail(path)):
        raise UnsafeModelFile(f"{path} {PICKLE_REFUSAL}")
    try:
        model = onnx.load(str(path), load_external_data=False)
    except (DecodeError, ValueError, RuntimeError, OSError, UnicodeDecodeError, TypeError) as exc:
        model = None
        reason = f"{type(exc).__name__}: {_first_line(exc)}"
    else:
        reason = "no graph" if not (model.graph.node or model.graph.output) else ""
        if not reason and (model.ir_version < 1 or not model.opset_import):
            reason = "no IR version or opset"
    if reason:
        if suffix == ".onnx":
            raise ModelFileError(f"{path} is not a readable ONNX model ({reason}): it may be truncated or not ONNX "
                                 "at all. Fix: export it again (torch.onnx.export(..., external_data=False)) or "
                                 "copy the complete file")
        raise ModelFileError(f"{path} is not a TorchScript or torch.export archive (no zip signature; starts with "
                             f"bytes {head[:8].hex(' ')}), nor an ONNX model. Fix: {_TORCH_SAVE_HINT}")
    if suffix != ".onnx":
        raise ModelFileError(f"{path} is an ONNX model, not a PyTorch file. Fix: rename it to "
                             f"{path.with_suffix('.onnx').name} and run it with --engine onnxruntime")
    return model


def _all_tensors(model) -> Iterator[Any]:
    from onnx import AttributeProto

    yield from model.graph.initializer
    stack = [model.graph]
    while stack:
        graph = stack.pop()
        for node in graph.node:
            for attribute in node.attribute:
                if attribute.type == AttributeProto.TENSOR:
                    yield attribute.t
                elif attribute.type == AttributeProto.GRAPH:
                    yield from attribute.g.initializer
                    stack.append(attribute.g)
                elif attribute.type == AttributeProto.GRAPHS:
                    for sub in attribute.graphs:
                        yield from sub.initializer
                        stack.append(sub)


def _onnx_value_info(value) -> dict[str, Any]:
    from onnx import helper

    kind = value.type.WhichOneof("value")
    if kind != "tensor_type":
        return {"name": value.name, "dtype": kind or "unknown", "shape": None}
    tensor = value.type.tensor_type
    try:
        dtype = str(helper.tensor_dtype_to_np_dtype(tensor.elem_type))
    except (KeyError, TypeError, ValueError):
        dtype = helper.tensor_dtype_to_string(tensor.elem_type).replace("TensorProto.", "").lower()
    dtype = {"object": "string"}.get(dtype, dtype)
    if not tensor.HasField("shape"):
        return {"name": value.name, "dtype": dtype, "shape": None}
    dims: list[Any] = []
    for dim in tensor.shape.dim:
        if dim.HasField("dim_value"):
            dims.append(int(dim.dim_value))
        elif dim.dim_param:
            dims.append(str(dim.dim_param))
        else:
            dims.append(None)
    return {"name": value.name, "dtype": dtype, "shape": dims}


# ---- torch.export (.pt2)
def _check_pt2_archive(path: Path) -> None:
    """Refuse, before torch reads anything, archives that declare pickled payloads or carry native code."""
    try:
        with zipfile.ZipFile(path) as archive:
            names = archive.namelist()
            members = {_strip_root(n): n for n in names}
            if any(m.startswith("data/aotinductor/") for m in members):
                raise UnsafeModelFile(f"{path} carries AOTInductor native code (data/aotinductor/), which Lab Console "
                                      "does not load. Fix: save the exported program alone with torch.export.save")
            for member, name in members.items():
                if member.startswith(("data/weights/", "data/constants/")) and member.endswith(".pt"):
                    raise UnsafeModelFile(f"{path} stores its weights as a pickle ({member}, the pre-2.8 .pt2 "
                                          f"layout); refused because a pickle can run code. Fix: re-save it with "
                                          f"torch.export.save from a current torch")
                if member.endswith("_config.json") and member.startswith("data/"):
                    config = json.loads(archive.read(name) or b"{}")
                    for key, payload in (config.get("config") or {}).items():
                        pickled = payload.get("use_pickle") or str(payload.get("path_name", "")).startswith(
                            "opaque_obj")
                        if pickled:
                            raise UnsafeModelFile(f"{path}: entry {key!r} in {member} is stored as a pickle; "
                                                  "refused because a pickle can run code. Fix: export a model whose "
                                                  "weights and constants are plain tensors")
    except zipfile.BadZipFile as exc:
        raise ModelFileError(f"{path} is a damaged or truncated archive ({exc}); save it again") from exc
    except (json.JSONDecodeError, AttributeError) as exc:
        raise ModelFileError(f"{path}: its weight configuration is unreadable ({exc}); save it again") from exc


@contextlib.contextmanager
def _no_unpickling(torch) -> Iterator[None]:
    """While torch reads a .pt2: torch.load only with weights_only=True, and pickle.loads refuses outright.

    torch.export.load falls back to `torch.load(weights_only=False)` for sample inputs it cannot read
    safely, and unpickles "opaque" constants; this closes both doors whatever the archive claims.
    """
    import pickle

    from torch.export.pt2_archive import _package

    original_load = torch.load
    original_pickle = _package.pickle

    def safe_load(f, *args, weights_only=None, **kwargs):
        if weights_only is False:
            raise UnsafeModelFile("the archive holds a pickled object that only a full unpickle could read; "
                                  "refused because a pickle can run code. Fix: save plain tensors as example "
                                  "inputs, weights and constants")
        return original_load(f, *args, weights_only=True, **kwargs)

    class _RefusingPickle:
        def __getattr__(self, name):
            if name in ("loads", "load", "Unpickler"):
                def refuse(*_args, **_kwargs):
                    raise UnsafeModelFile("the archive holds an opaque pickled object; refused because a pickle "
                                          "can run code")
                return refuse
            return getattr(pickle, name)

    torch.load = safe_load
    _package.pickle = _RefusingPickle()
    try:
        yield
    finally:
        torch.load = original_load
        _package.pickle = original_pickle


def _pt2_signature(program) -> dict[str, Any]:
    """Inputs from the graph's placeholders (user inputs only), the dims' ranges and the example's sizes."""
    import torch

    user_inputs = list(program.graph_signature.user_inputs)
    placeholders = {node.name: node for node in program.graph.nodes if node.op == "placeholder"}
    ranges: dict[str, list[Any]] = {}
    for symbol, value_range in program.range_constraints.items():
        ranges[str(symbol)] = [_finite_int(value_range.lower), _finite_int(value_range.upper)]
    example_flat: list[Any] = []
    example = getattr(program, "example_inputs", None)
    if example:
        example_flat = torch.utils._pytree.tree_leaves(example)
    declared, scalars, example_dims = [], [], {}
    for index, name in enumerate(user_inputs):
        value = placeholders[name].meta.get("val") if name in placeholders else None
        if isinstance(value, torch.Tensor):
            dims: list[Any] = []
            for axis, size in enumerate(value.shape):
                if isinstance(size, int):
                    dims.append(int(size))
                else:
                    symbol = str(size)
                    dims.append(symbol)
                    sample = example_flat[index] if index < len(example_flat) else None
                    if isinstance(sample, torch.Tensor) and sample.dim() > axis:
                        example_dims.setdefault(symbol, int(sample.shape[axis]))
            declared.append({"name": name, "dtype": str(value.dtype).replace("torch.", ""), "shape": dims})
        elif isinstance(value, (bool, int, float)) or type(value).__name__ in ("SymInt", "SymFloat"):
            dtype = "float64" if isinstance(value, float) or type(value).__name__ == "SymFloat" else "int64"
            declared.append({"name": name, "dtype": dtype, "shape": []})
            scalars.append(name)
        else:
            raise ModelFileError(f"input {name!r} of the exported program is a {type(value).__name__}; Lab Console "
                                 "feeds tensors and numbers only")
    outputs = [{"name": str(spec.arg.name) if hasattr(spec.arg, "name") else f"output_{i}"}
               for i, spec in enumerate(program.graph_signature.output_specs)
               if str(spec.kind).endswith("USER_OUTPUT")]
    return {"inputs": declared, "outputs": outputs, "ranges": ranges, "scalars": scalars,
            "example_dims": example_dims}


def _finite_int(value: Any) -> int | None:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return int(number) if abs(number) < 2**62 else None


def _check_no_kwargs(program, path: Path) -> None:
    in_spec = getattr(program.call_spec, "in_spec", None)
    if in_spec is None or in_spec.num_children != 2:
        return
    kwargs = in_spec.children_specs[1]
    if kwargs.num_leaves:
        raise ModelFileError(f"{path}: the exported program takes keyword inputs ({', '.join(kwargs.context)}); "
                             "Lab Console calls models positionally. Fix: export with all inputs as positional args")


def _check_ranges(path: Path, resolved: list[dict[str, Any]], ranges: dict[str, list[Any]]) -> None:
    for item in resolved:
        for axis, (dim, size) in enumerate(zip(item["declared"], item["shape"], strict=True)):
            if isinstance(dim, str) and dim in ranges:
                lower, upper = ranges[dim]
                if (lower is not None and size < lower) or (upper is not None and size > upper):
                    raise ModelFileError(
                        f"input {item['name']!r} dim {axis} ({dim}) must be in [{lower}, {upper if upper else '∞'}] "
                        f"for this exported program, got {size}; change --batch or --input {item['name']}=…, or "
                        f"re-export {path.name} with a wider torch.export.Dim range")


# ---- TorchScript
def _torchscript_signature(path: Path) -> dict[str, Any]:
    import torch

    try:
        module = torch.jit.load(str(path), map_location="cpu")
    except Exception as exc:  # noqa: BLE001
        raise ModelFileError(f"{path}: TorchScript could not load it ({type(exc).__name__}: {_first_line(exc)}). "
                             f"Fix: {_TORCH_SAVE_HINT}") from exc
    arguments = list(module.forward.schema.arguments)[1:]
    return {"inputs": [{"name": a.name, "dtype": str(a.type), "shape": None} for a in arguments],
            "outputs": [{"name": "output", "dtype": str(r.type)} for r in module.forward.schema.returns]}


def _torchscript_declared(module, spec, path: Path) -> list[dict[str, Any]]:
    """TorchScript knows argument names and kinds, not shapes: shapes must come from spec.inputs."""
    declared, missing = [], []
    for argument in list(module.forward.schema.arguments)[1:]:
        kind = str(argument.type)
        name = argument.name
        if kind == "Tensor":
            if name not in spec.inputs:
                missing.append(name)
                continue
            dtype = "int64" if name.lower().endswith("ids") else "float32"
            declared.append({"name": name, "dtype": dtype, "shape": list(spec.inputs[name])})
        elif kind in ("int", "float", "bool"):
            if name not in spec.input_values and argument.has_default_value():
                continue  # the default applies; nothing to pass
            declared.append({"name": name, "dtype": {"int": "int64", "float": "float64", "bool": "bool"}[kind],
                             "shape": [], "python_scalar": True})
        elif argument.has_default_value():
            continue
        else:
            raise ModelFileError(f"{path}: input {name!r} has type {kind}; Lab Console feeds tensors and numbers only")
    if missing:
        example = " ".join(f"--input {n}=1x…" for n in missing)
        raise ModelFileError(f"{path}: a TorchScript file records no input shapes, so each tensor input needs one: "
                             f"{', '.join(missing)}. Fix: {example} (e.g. --input {missing[0]}=1x3x224x224)")
    names = [d["name"] for d in declared]
    for option, given in (("--input", spec.inputs), ("--input-value", spec.input_values)):
        for name in given:
            if name not in names:
                raise ModelFileError(f"{option} {name}: {path.name} has no input {name!r}; its inputs are "
                                     f"{', '.join(a.name for a in list(module.forward.schema.arguments)[1:])}")
    return declared


@contextlib.contextmanager
def _torch_quiet() -> Iterator[None]:
    import logging
    import warnings

    loggers = [logging.getLogger(n) for n in ("torch.export", "torch._export", "torch.export.pt2_archive")]
    levels = [lg.level for lg in loggers]
    for lg in loggers:
        lg.setLevel(logging.ERROR)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yield
    finally:
        for lg, level in zip(loggers, levels, strict=True):
            lg.setLevel(level)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0][:400] if text else type(exc).__name__
