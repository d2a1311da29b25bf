"""TorchScript files (`torch.jit.save`): code, so loaded only for a user who trusts the file, in a sandboxed worker.

TorchScript is code, not data: a scripted module's `forward` and `__setstate__` run as whoever made the file
wrote them, and TorchScript can create and write files (`torch.from_file(path, shared=True, size=N)`) when it
loads and when it runs. So `torch.jit.load` runs only with `spec.trust_code` (`--trust-code`, or Yes to the
window's question), in a worker confined by engines.sandbox where the OS offers it. `inspect` never loads the
file: it reads the root module's `forward` signature from the archive's source text (`code/…py`, parsed by `ast`,
never run; the root class named in `data.pkl`, read by `pickletools`, never unpickled).

A TorchScript file records argument names and kinds but no shapes or dtypes, so every tensor input needs its
shape from the spec (`--input x=1x3x224x224`); its dtype is float32, or int64 for `*ids` names. A zip made by
`torch.save` looks alike but is a pickle; `detect` refuses it before this runs.
"""

from __future__ import annotations

import ast
import pickletools
import zipfile
from pathlib import Path
from typing import Any

from engines import inputs as model_inputs
from engines.model_files.archives import open_archive
from engines.model_files.common import (
    TORCH_SAVE_HINT,
    ModelFileError,
    UnsafeModelFile,
    first_line,
    strip_root,
)

CODE_REFUSAL = ("is TorchScript, and TorchScript is code: its forward and __setstate__ run as whoever made the "
                "file wrote them, and can create and write files (torch.from_file(..., shared=True)). It is not "
                "loaded unless you trust it. Fix: if you trust where it came from, run it with --trust-code (the "
                "window asks); the worker is then sandboxed where the OS allows (writes only in its own temporary "
                "folder, no TCP). Or export the model as data: torch.onnx.export(...) to .onnx, or "
                "torch.export.save(torch.export.export(model, example), 'model.pt2')")
INSPECT_NOTE = ("TorchScript is code: these inputs were read from its source text without running it; it runs "
                "only when you trust it (--trust-code)")
UNREAD_NOTE = "TorchScript is code: inputs are read once you trust it (--trust-code)"
MAX_SOURCE = 16 * 1024 ** 2  # bytes of data.pkl or of one code file read to find the signature


class UntrustedCode(UnsafeModelFile):
    """The file is code (TorchScript) and the user has not said they trust it: refused before it is loaded."""


def load_torchscript(path: Path, spec, device) -> tuple[Any, dict[str, Any], list[dict[str, Any]], set[str]]:
    """(module on `device` in eval mode, input arrays by name, resolved inputs, names fed as Python numbers)."""
    require_trust(path, spec)
    module = _jit_load(path, device)
    module.eval()
    declared = _declared_inputs(module, spec, path)
    python_scalars = {d["name"] for d in declared if d.pop("python_scalar", False)}
    arrays, resolved = model_inputs.resolve_inputs(declared, spec.batch, spec.inputs, spec.input_values)
    return module, arrays, resolved, python_scalars


def require_trust(path: Path, spec) -> None:
    """Refuse, before anything loads it, a TorchScript file the user has not said they trust."""
    if not getattr(spec, "trust_code", False):
        raise UntrustedCode(f"{path} {CODE_REFUSAL}")


def torchscript_signature(path: Path) -> dict[str, Any]:
    """Inputs (names and argument types; shape None: the file does not say) and outputs, for `inspect`, read
    from the source text without loading the file; none, with a note saying why, when the text does not tell."""
    forward = _static_forward(path)
    facts: dict[str, Any] = {"runs_code": True, "trusted": False}
    if forward is None:
        return {**facts, "inputs": [], "outputs": [], "note": UNREAD_NOTE}
    arguments = forward.args.args[1:]  # after self
    inputs = [{"name": a.arg, "dtype": _annotation(a.annotation), "shape": None} for a in arguments]
    return {**facts, "inputs": inputs, "outputs": [{"name": "output", "dtype": _annotation(forward.returns)}],
            "note": INSPECT_NOTE}


# ---- Private API
def _static_forward(path: Path) -> ast.FunctionDef | None:
    """The root module's `forward` as a syntax tree: the root class from data.pkl's first __torch__ global
    (pickletools lists opcodes, it builds nothing), its source from code/<module path>.py."""
    with open_archive(path) as archive:  # refusals (sizes, damage) propagate; what the text does not tell is None
        members = {strip_root(n): n for n in archive.namelist()}
        try:
            root = _root_class(_member(archive, members, "data.pkl"))
            if root is None:
                return None
            module, _, name = root.rpartition(".")
            text = _member(archive, members, f"code/{module.replace('.', '/')}.py").decode("utf-8")
        except (KeyError, ValueError, EOFError, UnicodeDecodeError, zipfile.BadZipFile):
            return None
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == name:
            for item in node.body:
                if isinstance(item, ast.FunctionDef) and item.name == "forward" and item.args.args:
                    return item
    return None


def _member(archive: zipfile.ZipFile, members: dict[str, str], member: str) -> bytes:
    info = archive.getinfo(members[member])
    if info.file_size > MAX_SOURCE:
        raise ValueError(f"{member} is larger than {MAX_SOURCE} bytes")
    return archive.read(info)


def _root_class(data: bytes) -> str | None:
    """'__torch__.pkg.Class' of the first __torch__ class the pickle names (GLOBAL or STACK_GLOBAL)."""
    strings: list[str] = []
    for opcode, argument, _ in pickletools.genops(data):
        if opcode.name == "GLOBAL" and isinstance(argument, str):
            module, _, name = argument.partition(" ")
        elif opcode.name == "STACK_GLOBAL" and len(strings) >= 2:
            module, name = strings[-2], strings[-1]
        else:
            if isinstance(argument, str):
                strings.append(argument)
            continue
        if module.startswith("__torch__") and name.isidentifier():
            return f"{module}.{name}"
    return None


def _annotation(node: ast.expr | None) -> str:
    return ast.unparse(node) if node is not None else "Any"


def _jit_load(path: Path, device):
    import torch

    try:
        return torch.jit.load(str(path), map_location=device)
    except Exception as exc:  # noqa: BLE001
        raise ModelFileError(f"{path}: TorchScript could not load it ({type(exc).__name__}: {first_line(exc)}). "
                             f"Fix: {TORCH_SAVE_HINT}") from exc


def _declared_inputs(module, spec, path: Path) -> list[dict[str, Any]]:
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
