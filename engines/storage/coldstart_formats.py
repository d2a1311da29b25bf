"""Per format: what a model file is (decided by its content), the safety checks before anything reads it for
real, and — from its bytes in memory — deserialize, copy to the device, first inference.

The hostile-file rules are the project's (engines.model_files, DESIGN §8): ONNX is parsed as protobuf (external
data checked); a .pt2 archive is refused when it declares pickles, native code or shape expressions that are not
plain arithmetic, and torch.export.load then runs with unpickling held off; safetensors is a JSON header and raw
bytes, deserialized by the safetensors library (which evaluates nothing); a pickle or a torch.save zip is refused
before anything reads it; TorchScript is code, loaded only with `trust_code` (--trust-code) and then inside the
project's sandbox where the OS offers one. The checks run on the file before its timed read, and the bytes read
are then checked to be the bytes checked (sha256), so a file swapped in between is refused, not loaded.

torch and onnxruntime are imported inside these functions only: this runs in the worker.
"""

from __future__ import annotations

import io
import json
import struct
import time
from pathlib import Path
from typing import Any

from engines.storage.errors import StorageError

FORMATS = ("onnx", "pt2", "safetensors", "torchscript")
NOT_APPLICABLE_WEIGHTS = "not applicable (weights only: a safetensors file holds tensors, no graph to run)"
_MAX_HEADER = 100 * 1024 ** 2  # the safetensors library's own limit on its JSON header


# ---- Public API
def identify(path: Path, trust_code: bool) -> dict[str, Any]:
    """{"format", "inputs" (declared), "sha256", "bytes", "sandbox"} after every check; StorageError otherwise."""
    from engines import model_files
    from engines.model_files import ModelFileError

    try:
        head = model_files.common.read_head(path, 9)
        if _looks_like_safetensors(path, head):
            fmt, inputs = "safetensors", []
        else:
            fmt = model_files.detect_format(path)  # refuses pickles and torch.save zips unread
            inputs = _checked(path, fmt, trust_code)
    except ModelFileError as exc:
        raise _storage_error(exc) from None
    facts = {"format": fmt, "inputs": inputs, "sha256": model_files.sha256(path), "bytes": path.stat().st_size,
             "sandbox": None, "path": str(path)}
    if fmt == "torchscript":
        from engines import sandbox

        facts["sandbox"] = sandbox.confine(sandbox.work_dir())  # before the code in the file can run
    return facts


def deserialize(fmt: str, data: bytes | Any, facts: dict[str, Any]) -> Any:
    """The loaded object from the file's bytes (ONNX: an InferenceSession; .pt2: the exported program;
    safetensors: a dict of tensors; TorchScript: the scripted module); a StorageError when the loader refuses."""
    import pickle

    from engines.model_files.common import UnsafeModelFile, first_line

    name = facts.get("path", "the model file")
    try:
        return _deserialize(fmt, data)
    except StorageError:
        raise
    except UnsafeModelFile as exc:
        error = _storage_error(exc)
        if name not in error.message:
            error = StorageError(f"{name}: {error.message}", error.fix)
        raise error from None
    except pickle.UnpicklingError:
        raise StorageError(f"{name} holds a pickled object that weights-only loading refuses; refused because a "
                           "pickle can run code", "save plain tensors as weights, constants and example inputs "
                           "(torch.export.save from a current torch)") from None
    except Exception as exc:  # noqa: BLE001 — a damaged or newer file: say which loader and what it said
        raise StorageError(f"{name}: the {fmt} loader could not read it ({type(exc).__name__}: {first_line(exc)})",
                           "export or copy the file again") from exc


def to_device(fmt: str, loaded: Any, device: str) -> tuple[Any, float | None, str]:
    """(the object on `device`, seconds the copy took or None, what happened)."""
    if device == "cpu":
        return loaded, None, "cpu — no copy (the weights are already in host memory)"
    if fmt == "onnx":
        return loaded, None, "ONNX Runtime here runs on the CPU provider: no copy"
    import torch

    target = torch.device(device)
    started = time.perf_counter()
    if fmt == "safetensors":
        moved = {k: v.to(target) for k, v in loaded.items()}
    elif fmt == "pt2":
        from torch.export.passes import move_to_device_pass

        moved = move_to_device_pass(loaded, target)
    else:
        moved = loaded.to(target)
    if target.type == "cuda":
        torch.cuda.synchronize(target)
    return moved, time.perf_counter() - started, f"copied to {device}"


def first_inference(fmt: str, loaded: Any, facts: dict[str, Any], device: str) -> tuple[float | None, str]:
    """(seconds of the first call on inputs made from the declared shapes, or None, what was run or why not)."""
    from engines.inputs import InputError, resolve_inputs

    if fmt == "safetensors":
        return None, NOT_APPLICABLE_WEIGHTS
    if fmt == "torchscript":
        return None, "not available (a TorchScript file declares no input shapes to make an input from)"
    try:
        if fmt == "onnx":
            arrays, resolved = resolve_inputs(facts["inputs"], 1)
            started = time.perf_counter()
            loaded.run(None, arrays)
            return time.perf_counter() - started, f"session.run on {_shapes(resolved)}"
        import torch

        from engines.model_files.pt2 import pt2_signature, quiet_torch_export

        with quiet_torch_export():
            signature = pt2_signature(loaded)
            arrays, resolved = resolve_inputs(signature["inputs"], 1, defaults=signature["example_dims"])
            scalars = set(signature["scalars"])
            inputs = [arrays[r["name"]].item() if r["name"] in scalars else
                      torch.from_numpy(arrays[r["name"]]).to(device) for r in resolved]
            started = time.perf_counter()
            with torch.no_grad():
                loaded.module()(*inputs)
            if device.startswith("cuda"):
                torch.cuda.synchronize()
            return time.perf_counter() - started, f"the exported program's module() called on {_shapes(resolved)}"
    except (InputError, ValueError) as exc:
        return None, f"not available (no input could be made from the declared shapes: {exc})"


def same_bytes(data: Any, facts: dict[str, Any]) -> None:
    """Refuse bytes that are not the ones checked (the file changed between the checks and the timed read)."""
    import hashlib

    if hashlib.sha256(memoryview(data)).hexdigest() != facts["sha256"]:
        raise StorageError("the model file changed between its safety checks and the timed read",
                           "measure a file nothing else is writing")


# ---- Private API
def _deserialize(fmt: str, data: bytes | Any) -> Any:
    from engines.storage.coldstart_read import as_bytes

    if fmt == "onnx":
        import onnxruntime as ort

        return ort.InferenceSession(as_bytes(data), providers=["CPUExecutionProvider"])
    if fmt == "safetensors":
        from safetensors import torch as st

        return st.load(as_bytes(data))
    import torch

    from engines.model_files.pt2 import no_unpickling, quiet_torch_export

    if fmt == "pt2":
        with quiet_torch_export(), no_unpickling(torch):
            return torch.export.load(io.BytesIO(data))
    return torch.jit.load(io.BytesIO(data), map_location="cpu")  # trusted TorchScript only (identify checked)


def _checked(path: Path, fmt: str, trust_code: bool) -> list[dict[str, Any]]:
    """The format's checks (reading the file, before its cache is dropped); the declared inputs."""
    from engines.model_files.onnx_model import inspect_onnx
    from engines.model_files.pt2 import check_pt2_archive
    from engines.model_files.torchscript import require_trust

    if fmt == "onnx":
        facts = inspect_onnx(path)
        if facts["external_data"]:
            raise StorageError(f"{path} keeps its weights in external data files ({', '.join(facts['external_data'])})"
                               "; the cold start measures one file", "re-export it as one file "
                               "(torch.onnx.export(..., external_data=False)) or measure the data file's read "
                               "with `labconsole storage sweep`")
        return facts["inputs"]
    if fmt == "pt2":
        check_pt2_archive(path)
        return []
    require_trust(path, type("Trust", (), {"trust_code": trust_code})())
    return []


def _looks_like_safetensors(path: Path, head: bytes) -> bool:
    """An 8-byte little-endian header length that fits the file, then a JSON object (checked to parse)."""
    if len(head) < 9 or head[8:9] != b"{":
        return False
    (length,) = struct.unpack("<Q", head[:8])
    size = path.stat().st_size
    if not 2 <= length <= min(_MAX_HEADER, size - 8):
        return False
    with open(path, "rb") as handle:
        handle.seek(8)
        try:
            header = json.loads(handle.read(length))
        except (ValueError, UnicodeDecodeError):
            return False
    return isinstance(header, dict)


def _shapes(resolved: list[dict[str, Any]]) -> str:
    return ", ".join(f"{r['name']} {'x'.join(map(str, r['shape'])) or 'scalar'}" for r in resolved) or "no inputs"


def _storage_error(exc: Exception) -> StorageError:
    text = str(exc)
    message, sep, fix = text.partition(" Fix: ")
    return StorageError(message.rstrip(". ") if sep else text, fix if sep else "")
