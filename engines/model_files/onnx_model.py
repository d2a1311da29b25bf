"""ONNX files: a protobuf parsed by onnx without evaluating anything in it, and its external data checked.

The weights of a large model live in an external data file (`model.onnx.data`) beside the .onnx; it is checked
before loading (inside the model's folder, present, long enough), so a missing or short data file is named
rather than reported by ONNX Runtime as a parse error.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from engines.inputs import unknown_dim
from engines.model_files.common import TORCH_SAVE_HINT, ModelFileError, first_line, read_head, sha256
from engines.model_files.pickles import refuse_if_pickle


def inspect_onnx(path: str | os.PathLike) -> dict[str, Any]:
    """ONNX inputs/outputs, opsets, initializer counts and external data files (checked to exist and fit)."""
    path = Path(path)
    model = parse_onnx(path)
    external = check_external_data(path, model)
    graph = model.graph
    initializers = {t.name for t in graph.initializer}
    params, param_bytes = initializer_totals(model)
    return {
        "inputs": [_value_info(v) for v in graph.input if v.name not in initializers],
        "outputs": [_value_info(v) for v in graph.output],
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


def parse_onnx(path: Path):
    """The ModelProto without external data, or a ModelFileError that says what the file is instead."""
    import onnx
    from google.protobuf.message import DecodeError

    head = read_head(path)
    suffix = path.suffix.lower()
    if head.startswith(b"PK\x03\x04"):
        raise ModelFileError(f"{path} is a PyTorch archive (zip), not an ONNX model. Fix: rename it to .pt2 or "
                             ".pt (whichever it is) and run it with --engine torch")
    refuse_if_pickle(path, head)
    try:
        model = onnx.load(str(path), load_external_data=False)
    except (DecodeError, ValueError, RuntimeError, OSError, UnicodeDecodeError, TypeError) as exc:
        model = None
        # A decoding error quotes the bytes it choked on: name the error only.
        reason = type(exc).__name__
        if not isinstance(exc, UnicodeDecodeError):
            reason += f": {first_line(exc)}"
    else:
        reason = "no graph" if not (model.graph.node or model.graph.output) else ""
        if not reason and (model.ir_version < 1 or not model.opset_import):
            reason = "no IR version or opset"
    if reason:
        if suffix == ".onnx":
            raise ModelFileError(f"{path} is not a readable ONNX model ({reason}): it may be truncated or not ONNX "
                                 "at all. Fix: export it again (torch.onnx.export(..., external_data=False)) or "
                                 "copy the complete file")
        # Never the file's own bytes (they end up in the history): what it is not, its size and fingerprint.
        raise ModelFileError(f"{path} is not a TorchScript or torch.export archive (no zip signature), nor a "
                             f"pickle, nor an ONNX model ({path.stat().st_size:,} bytes, sha256 "
                             f"{sha256(path)[:12]}…). Fix: {TORCH_SAVE_HINT}")
    if suffix != ".onnx":
        raise ModelFileError(f"{path} is an ONNX model, not a PyTorch file. Fix: rename it to "
                             f"{path.with_suffix('.onnx').name} and run it with --engine onnxruntime")
    return model


# ---- Private API
def _all_tensors(model) -> Iterator[Any]:
    """Initializers and tensor attributes, in subgraphs (If, Loop, Scan) too: any of them may be external."""
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


def _value_info(value) -> dict[str, Any]:
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
    # An unknown dim as exporters write it (no dim_param, "?" — Paddle2ONNX —, "", a dim_value ≤ 0) is None: its
    # own dim, never tied to another "?" (engines.inputs.unknown_dim).
    dims: list[Any] = []
    for dim in tensor.shape.dim:
        if dim.HasField("dim_value"):
            dims.append(unknown_dim(int(dim.dim_value)))
        else:
            dims.append(unknown_dim(str(dim.dim_param)))
    return {"name": value.name, "dtype": dtype, "shape": dims}
