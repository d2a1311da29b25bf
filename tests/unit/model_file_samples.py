"""Model files made by the tests themselves, shared by tests/unit/test_model_files_*.py.

torch.onnx.export, torch.export.save, torch.jit.script/trace.save; the bad ones (empty, truncated, random bytes,
renamed, pickled, tampered) are made from these inside each test. Built once per session: exporting is slow.
"""

from __future__ import annotations

import os
import zipfile
from pathlib import Path

import torch
from torch import nn

from engines.spec import RunSpec

_BUILT: dict = {}


class Tiny(nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.fc = nn.Linear(8, 4)

    def forward(self, x):
        return torch.relu(self.fc(x))


class Scaled(nn.Module):
    """A tensor and a scalar argument (TorchScript keeps the int in the signature)."""

    def forward(self, x: torch.Tensor, factor: int) -> torch.Tensor:
        return x * factor


class Marker:
    """Unpickling this would create a directory: proof that code ran."""

    def __init__(self, path):
        self.path = str(path)

    def __reduce__(self):
        return (os.mkdir, (self.path,))


def sample_files(tmp_path_factory) -> dict:
    """{"root", "model", "pt2", "seq_pt2", "script", "trace", "scaled", "onnx"}: made on the first call of the
    session, shared by every test module (each wraps this in its own `files` fixture)."""
    if not _BUILT:
        _BUILT.update(_build(tmp_path_factory.mktemp("model_files")))
    return _BUILT


def spec_for(path, **kwargs):
    return RunSpec(model=str(path), engine="torch", **kwargs)


def rewrite_zip(source: Path, target: Path, replace: dict) -> None:
    """A copy of an archive with the members ending in each key replaced (bytes, or a function of the old bytes)."""
    with zipfile.ZipFile(source) as src, zipfile.ZipFile(target, "w") as dst:
        for item in src.infolist():
            data = src.read(item.filename)
            for suffix, new in replace.items():
                if item.filename.endswith(suffix):
                    data = new(data) if callable(new) else new
            dst.writestr(item, data)


def _build(root: Path) -> dict:
    model = Tiny().eval()
    example = torch.randn(2, 8)
    out = {"root": root, "model": model}

    program = torch.export.export(model, (example,), dynamic_shapes=({0: torch.export.Dim("batch", max=64)},))
    torch.export.save(program, root / "tiny.pt2")
    out["pt2"] = root / "tiny.pt2"

    seq = torch.export.export(model, (torch.randn(2, 5, 8),), dynamic_shapes=(
        {0: torch.export.Dim("batch"), 1: torch.export.Dim("seq")},))
    torch.export.save(seq, root / "seq.pt2")
    out["seq_pt2"] = root / "seq.pt2"

    torch.jit.script(model).save(str(root / "tiny_script.pt"))
    torch.jit.trace(model, example).save(str(root / "tiny_trace.jit"))
    torch.jit.script(Scaled()).save(str(root / "scaled.pt"))
    out["script"], out["trace"], out["scaled"] = root / "tiny_script.pt", root / "tiny_trace.jit", root / "scaled.pt"

    torch.onnx.export(model, (example,), str(root / "tiny.onnx"), dynamo=True, external_data=False,
                      input_names=["x"], dynamic_shapes=({0: torch.export.Dim("batch")},), verbose=False)
    out["onnx"] = root / "tiny.onnx"
    return out
