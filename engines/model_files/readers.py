"""From a path to plain facts (`inspect`) or a runnable torch module (`load_torch`), through the reader of the
file's real format; the same facts (format, size, sha256, inputs) whichever format it is. A file that is code
(TorchScript) is never loaded by `inspect`, and by `load_torch` only when the spec trusts it (`trust_code`)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from engines.model_files.common import ModelFileError, sha256
from engines.model_files.detect import detect_format
from engines.model_files.onnx_model import inspect_onnx
from engines.model_files.pt2 import load_exported_program, load_pt2, pt2_signature, quiet_torch_export
from engines.model_files.torchscript import load_torchscript, require_trust, torchscript_signature


def inspect(path: str | os.PathLike) -> dict[str, Any]:
    """Plain facts about a model file: format, inputs/outputs (name, dtype, shape), size, sha256, ….

    Dims are ints, symbolic names (str) or None (dynamic without a name). For TorchScript, which stores no
    shapes or dtypes, inputs list names and argument types only (shape None), read from its source text without
    loading it (TorchScript is code): `runs_code` is True and `note` says so.
    """
    path = Path(path)
    fmt = detect_format(path)
    info = _file_facts(path, fmt)
    if fmt == "onnx":
        info.update(inspect_onnx(path))
    elif fmt == "pt2":
        with quiet_torch_export():
            program = load_exported_program(path)
        info.update(pt2_signature(program))
    else:
        info.update(torchscript_signature(path))
    return info


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
    if fmt == "torchscript":
        require_trust(path, spec)  # before anything reads it as TorchScript
    info = _file_facts(path, fmt)
    with quiet_torch_export():
        load = load_pt2 if fmt == "pt2" else load_torchscript
        module, arrays, resolved, python_scalars = load(path, spec, device)
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


def _file_facts(path: Path, fmt: str) -> dict[str, Any]:
    return {"file": str(path), "format": fmt, "size_bytes": path.stat().st_size, "sha256": sha256(path)}
