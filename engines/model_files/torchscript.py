"""TorchScript files (`torch.jit.save`): read by TorchScript's own C++ loader, which builds only TorchScript types.

TorchScript is code, not data. A TorchScript file records argument names and kinds but no shapes or dtypes, so
every tensor input needs its shape from the spec (`--input x=1x3x224x224`); its dtype is float32, or int64 for
`*ids` names. A zip made by `torch.save` looks alike but is a pickle; `detect` refuses it before this runs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from engines import inputs as model_inputs
from engines.model_files.common import TORCH_SAVE_HINT, ModelFileError, first_line


def load_torchscript(path: Path, spec, device) -> tuple[Any, dict[str, Any], list[dict[str, Any]], set[str]]:
    """(module on `device` in eval mode, input arrays by name, resolved inputs, names fed as Python numbers)."""
    module = _jit_load(path, device)
    module.eval()
    declared = _declared_inputs(module, spec, path)
    python_scalars = {d["name"] for d in declared if d.pop("python_scalar", False)}
    arrays, resolved = model_inputs.resolve_inputs(declared, spec.batch, spec.inputs, spec.input_values)
    return module, arrays, resolved, python_scalars


def torchscript_signature(path: Path) -> dict[str, Any]:
    """Inputs (names and argument types; shape None: the file does not say) and outputs, for `inspect`."""
    module = _jit_load(path, "cpu")
    arguments = list(module.forward.schema.arguments)[1:]
    return {"inputs": [{"name": a.name, "dtype": str(a.type), "shape": None} for a in arguments],
            "outputs": [{"name": "output", "dtype": str(r.type)} for r in module.forward.schema.returns]}


# ---- Private API
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
