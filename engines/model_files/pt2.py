"""torch.export programs (.pt2): the archive checked before torch reads it, then loaded with unpickling held off.

Its graph is JSON and its weights raw bytes, but the format *may* carry pickles (weights or constants saved with
pickle, a fallback for sample inputs). Archives that declare pickled payloads or carry AOTInductor native code
are refused up front (`check_pt2_archive`), and so are symbolic-shape expressions that are not plain shape
arithmetic (torch hands them to sympy.sympify, which evaluates Python: `pt2_expressions`); while torch loads the archive `torch.load` is held to
`weights_only=True` and `pickle.loads` refuses (`no_unpickling`), so nothing slips through either way.
"""

from __future__ import annotations

import contextlib
import json
import os
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from engines import inputs as model_inputs
from engines.model_files.archives import open_archive
from engines.model_files.common import ModelFileError, UnsafeModelFile, first_line, strip_root
from engines.model_files.pt2_expressions import check_archive_expressions


def load_exported_program(path: str | os.PathLike):
    """torch.export.load, after refusing archives that need unpickling or native code, with pickling held off."""
    import torch

    path = Path(path)
    check_pt2_archive(path)
    with no_unpickling(torch):
        try:
            return torch.export.load(str(path))
        except UnsafeModelFile as exc:
            if str(path) in str(exc):
                raise
            raise UnsafeModelFile(f"{path}: {exc}") from None
        except Exception as exc:  # noqa: BLE001 — a damaged archive, a newer schema …
            raise ModelFileError(f"{path}: torch.export could not load it ({type(exc).__name__}: "
                                 f"{first_line(exc)}). Fix: re-save it with torch.export.save from this torch "
                                 f"version ({torch.__version__})") from exc


def load_pt2(path: Path, spec, device) -> tuple[Any, dict[str, Any], list[dict[str, Any]], set[str]]:
    """(module on `device`, input arrays by name, resolved inputs, names fed as Python numbers).

    The program declares names, dtypes and shapes; dynamic dims are symbolic: the first is the batch, others
    default to the size in the program's saved example inputs, and every size must lie in the exported range.
    """
    program = load_exported_program(path)
    signature = pt2_signature(program)
    _check_no_kwargs(program, path)
    arrays, resolved = model_inputs.resolve_inputs(
        signature["inputs"], spec.batch, spec.inputs, spec.input_values, defaults=signature["example_dims"])
    _check_ranges(path, resolved, signature["ranges"])
    if device.type != "cpu":
        from torch.export.passes import move_to_device_pass

        program = move_to_device_pass(program, device)
    return program.module(), arrays, resolved, set(signature["scalars"])


def check_pt2_archive(path: Path) -> None:
    """Refuse, before torch reads anything, archives that declare pickled payloads or carry native code."""
    try:
        with open_archive(path) as archive:  # members' declared sizes checked first
            names = archive.namelist()
            members = {strip_root(n): n for n in names}
            if any(m.startswith("data/aotinductor/") for m in members):
                raise UnsafeModelFile(f"{path} carries AOTInductor native code (data/aotinductor/), which Lab Console "
                                      "does not load. Fix: save the exported program alone with torch.export.save")
            for member, name in members.items():
                if member.startswith(("data/weights/", "data/constants/")) and member.endswith(".pt"):
                    raise UnsafeModelFile(f"{path} stores its weights as a pickle ({member}, the .pt2 layout of "
                                          f"torch before 2.9); refused because a pickle can run code. Fix: re-save "
                                          f"it with torch.export.save from torch 2.9 or later")
                if member.endswith("_config.json") and member.startswith("data/"):
                    config = json.loads(archive.read(name) or b"{}")
                    for key, payload in (config.get("config") or {}).items():
                        pickled = payload.get("use_pickle") or str(payload.get("path_name", "")).startswith(
                            "opaque_obj")
                        if pickled:
                            raise UnsafeModelFile(f"{path}: entry {key!r} in {member} is stored as a pickle; "
                                                  "refused because a pickle can run code. Fix: export a model whose "
                                                  "weights and constants are plain tensors")
            check_archive_expressions(path, archive, members)
    except zipfile.BadZipFile as exc:
        raise ModelFileError(f"{path} is a damaged or truncated archive ({exc}); save it again") from exc
    except (json.JSONDecodeError, AttributeError) as exc:
        raise ModelFileError(f"{path}: its weight configuration is unreadable ({exc}); save it again") from exc


@contextlib.contextmanager
def no_unpickling(torch) -> Iterator[None]:
    """While torch reads a .pt2: torch.load only with weights_only=True, and pickle.loads refuses outright.

    torch.export.load falls back to `torch.load(weights_only=False)` for sample inputs it cannot read
    safely, and unpickles "opaque" constants; this closes both doors whatever the archive claims.
    """
    import pickle

    from torch.export.pt2_archive import _package

    original_load = torch.load
    # torch 2.13's loader unpickles opaque constants with its module's `pickle`; 2.9-2.12 import no pickle
    # there (every pickled payload goes through torch.load, held above), so there is nothing more to hold.
    original_pickle = getattr(_package, "pickle", None)

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
    if original_pickle is not None:
        _package.pickle = _RefusingPickle()
    try:
        yield
    finally:
        torch.load = original_load
        if original_pickle is not None:
            _package.pickle = original_pickle


def pt2_signature(program) -> dict[str, Any]:
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


@contextlib.contextmanager
def quiet_torch_export() -> Iterator[None]:
    """torch.export logs and warns at length while it loads; the user sees our message, not pages of its log."""
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


# ---- Private API
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
