"""Model files: formats told apart by content, inputs read from the file, and pickles never unpickled.

Every file here is made by the test itself: torch.onnx.export, torch.export.save, torch.jit.script/trace.save,
and the bad ones (empty, truncated, random bytes, renamed, pickled, tampered) from those.
"""

import json
import os
import pickle
import zipfile
from pathlib import Path

import numpy as np
import pytest
import torch
from torch import nn

from engines import model_files
from engines.model_files import ModelFileError, UnsafeModelFile
from engines.spec import RunSpec


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


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    root = tmp_path_factory.mktemp("model_files")
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


def spec_for(path, **kwargs):
    return RunSpec(model=str(path), engine="torch", **kwargs)


# ---- format detection and refusals
def test_formats_are_told_apart_by_content(files):
    assert model_files.detect_format(files["pt2"]) == "pt2"
    assert model_files.detect_format(files["script"]) == "torchscript"
    assert model_files.detect_format(files["trace"]) == "torchscript"
    assert model_files.detect_format(files["onnx"]) == "onnx"


def test_empty_file(files):
    empty = files["root"] / "empty.pt"
    empty.write_bytes(b"")
    with pytest.raises(ModelFileError, match=r"empty\.pt is empty \(0 bytes\).*export or copy the model again"):
        model_files.detect_format(empty)


def test_random_bytes_pt(files):
    noise = files["root"] / "noise.pt"
    noise.write_bytes(np.random.default_rng(3).integers(0, 256, 4096, dtype=np.uint8).tobytes())
    with pytest.raises(ModelFileError) as err:
        model_files.detect_format(noise)
    assert "noise.pt is not a TorchScript or torch.export archive" in str(err.value)
    assert "torch.jit.script(model).save" in str(err.value)


def test_truncated_torchscript(files):
    data = files["script"].read_bytes()
    cut = files["root"] / "cut.pt"
    cut.write_bytes(data[: len(data) // 2])
    with pytest.raises(ModelFileError, match=r"cut\.pt is a damaged or truncated archive"):
        model_files.detect_format(cut)


def test_onnx_named_pt_says_what_it_is(files):
    renamed = files["root"] / "really_onnx.pt"
    renamed.write_bytes(files["onnx"].read_bytes())
    with pytest.raises(ModelFileError) as err:
        model_files.load_torch(spec_for(renamed), "cpu")
    assert "really_onnx.pt is an ONNX model, not a PyTorch file" in str(err.value)
    assert "really_onnx.onnx" in str(err.value) and "--engine onnxruntime" in str(err.value)


def test_torch_save_of_a_module_is_refused_unread(files):
    saved = files["root"] / "saved_module.pt"
    torch.save(files["model"], saved)
    legacy = files["root"] / "legacy.pt"
    torch.save(files["model"].state_dict(), legacy, _use_new_zipfile_serialization=False)
    for path in (saved, legacy):
        with pytest.raises(UnsafeModelFile) as err:
            model_files.load_torch(spec_for(path, inputs={"x": [1, 8]}), "cpu")
        message = str(err.value)
        assert path.name in message and "is a pickled Python object (torch.save), not TorchScript" in message
        assert "never unpickles" in message and "torch.jit.script(model).save(path)" in message


def test_raw_pickle_is_refused_and_never_runs(files):
    marker = files["root"] / "pickle_ran"
    evil = files["root"] / "evil.pt"
    evil.write_bytes(pickle.dumps(Marker(marker)))
    old = files["root"] / "evil_p0.jit"
    old.write_bytes(pickle.dumps(Marker(marker), protocol=0))
    for path in (evil, old):
        with pytest.raises(UnsafeModelFile, match="pickled Python object"):
            model_files.load_torch(spec_for(path, inputs={"x": [1, 8]}), "cpu")
        with pytest.raises(UnsafeModelFile):
            model_files.inspect(path)
    assert not marker.exists()


def _rewrite_zip(source: Path, target: Path, replace: dict) -> None:
    with zipfile.ZipFile(source) as src, zipfile.ZipFile(target, "w") as dst:
        for item in src.infolist():
            data = src.read(item.filename)
            for suffix, new in replace.items():
                if item.filename.endswith(suffix):
                    data = new(data) if callable(new) else new
            dst.writestr(item, data)


def test_pt2_with_a_pickled_sample_input_is_refused_and_never_runs(files):
    """torch.export.load would fall back to torch.load(weights_only=False) here; the guard stops it."""
    marker = files["root"] / "pt2_pickle_ran"
    evil = files["root"] / "evil_inputs.pt2"
    _rewrite_zip(files["pt2"], evil, {"sample_inputs/model.pt": pickle.dumps(Marker(marker))})
    with pytest.raises(UnsafeModelFile, match="refused because a pickle can run code"):
        model_files.load_torch(spec_for(evil), "cpu")
    assert not marker.exists()


def test_pt2_declaring_pickled_weights_is_refused_up_front(files):
    def pickled(data):
        config = json.loads(data)
        for entry in config["config"].values():
            entry["use_pickle"] = True
        return json.dumps(config).encode()

    evil = files["root"] / "pickled_weights.pt2"
    _rewrite_zip(files["pt2"], evil, {"model_weights_config.json": pickled})
    with pytest.raises(UnsafeModelFile, match="stored as a pickle"):
        model_files.load_torch(spec_for(evil), "cpu")


def test_zip_that_is_neither(files):
    other = files["root"] / "other.pt"
    with zipfile.ZipFile(other, "w") as archive:
        archive.writestr("other/readme.txt", "hello")
    with pytest.raises(ModelFileError, match="neither TorchScript nor a torch.export program"):
        model_files.detect_format(other)


# ---- inspect
def test_inspect_onnx_reads_symbolic_dims(files):
    info = model_files.inspect(files["onnx"])
    assert info["format"] == "onnx" and info["size_bytes"] == files["onnx"].stat().st_size
    assert info["sha256"] == model_files.sha256(files["onnx"]) and len(info["sha256"]) == 64
    assert info["inputs"] == [{"name": "x", "dtype": "float32", "shape": ["batch", 8]}]
    assert info["outputs"][0]["shape"] == ["batch", 4]
    assert info["params"] == 8 * 4 + 4 and info["external_data"] == []


def test_inspect_pt2_and_torchscript(files):
    pt2 = model_files.inspect(files["pt2"])
    assert pt2["format"] == "pt2"
    (x,) = pt2["inputs"]
    assert x["name"] == "x" and x["dtype"] == "float32" and isinstance(x["shape"][0], str) and x["shape"][1] == 8
    script = model_files.inspect(files["script"])
    assert script["format"] == "torchscript" and script["inputs"] == [{"name": "x", "dtype": "Tensor", "shape": None}]
    json.dumps(pt2), json.dumps(script)  # plain data


# ---- load_torch
def test_pt2_loads_with_the_batch_and_runs(files):
    module, inputs, info = model_files.load_torch(spec_for(files["pt2"], batch=3), "cpu")
    assert inputs[0].shape == (3, 8) and inputs[0].dtype == torch.float32
    with torch.inference_mode():
        assert torch.allclose(module(*inputs), files["model"](inputs[0]))
    assert info["format"] == "pt2" and info["sha256"] == model_files.sha256(files["pt2"])
    assert info["inputs"][0]["shape"] == [3, 8] and info["size_bytes"] > 0
    json.dumps(info)


def test_pt2_extra_dynamic_dims_default_to_the_example_or_take_inputs(files):
    _, inputs, _ = model_files.load_torch(spec_for(files["seq_pt2"]), "cpu")
    assert tuple(inputs[0].shape) == (1, 5, 8)  # seq from the saved example
    _, inputs, _ = model_files.load_torch(spec_for(files["seq_pt2"], inputs={"x": [2, 11, 8]}), "cpu")
    assert tuple(inputs[0].shape) == (2, 11, 8)


def test_pt2_batch_outside_the_exported_range(files):
    with pytest.raises(ModelFileError, match=r"must be in \[.*64\].*got 100"):
        model_files.load_torch(spec_for(files["pt2"], batch=100), "cpu")


def test_pt2_wrong_fixed_dim(files):
    with pytest.raises(ValueError, match=r"dim 1 must be 8, got 9"):
        model_files.load_torch(spec_for(files["pt2"], inputs={"x": [1, 9]}), "cpu")


def test_torchscript_needs_input_shapes(files):
    with pytest.raises(ModelFileError) as err:
        model_files.load_torch(spec_for(files["script"]), "cpu")
    assert "records no input shapes" in str(err.value) and "--input x=" in str(err.value)
    module, inputs, info = model_files.load_torch(spec_for(files["trace"], inputs={"x": [2, 8]}), "cpu")
    assert inputs[0].shape == (2, 8)
    with torch.inference_mode():
        assert module(*inputs).shape == (2, 4)
    assert info["format"] == "torchscript"


def test_torchscript_scalar_argument_takes_input_value(files):
    with pytest.raises(ValueError, match="--input-value factor="):
        model_files.load_torch(spec_for(files["scaled"], inputs={"x": [1, 3]}), "cpu")
    module, inputs, _ = model_files.load_torch(
        spec_for(files["scaled"], inputs={"x": [1, 3]}, input_values={"factor": 3}), "cpu")
    assert inputs[1] == 3 and isinstance(inputs[1], int)
    assert torch.allclose(module(*inputs), inputs[0] * 3)


def test_torchscript_unknown_input_name(files):
    with pytest.raises(ModelFileError, match="has no input 'y'"):
        model_files.load_torch(spec_for(files["trace"], inputs={"x": [1, 8], "y": [1]}), "cpu")


def test_sha256_streams(tmp_path):
    path = tmp_path / "blob"
    data = os.urandom(3 * (1 << 20) + 5)
    path.write_bytes(data)
    import hashlib

    assert model_files.sha256(path) == hashlib.sha256(data).hexdigest()


# ---- the cache folder exported and quantized models live in
def test_cache_dir_precedence(monkeypatch, tmp_path):
    import sys

    from engines import cache

    monkeypatch.setenv("LABCONSOLE_CACHE", str(tmp_path / "explicit"))
    assert cache.cache_dir() == tmp_path / "explicit"
    monkeypatch.delenv("LABCONSOLE_CACHE")
    if sys.platform.startswith("linux"):
        monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
        assert cache.cache_dir() == tmp_path / "xdg" / "labconsole"
        monkeypatch.delenv("XDG_CACHE_HOME")
        assert cache.cache_dir() == Path.home() / ".cache" / "labconsole"


def test_atomic_write_leaves_no_temporary_files(monkeypatch, tmp_path):
    from engines import cache

    monkeypatch.setenv("LABCONSOLE_CACHE", str(tmp_path))
    target = cache.subdir("onnx") / "file.bin"
    cache.atomic_write_bytes(target, b"abc")
    cache.atomic_write_bytes(target, b"defg")
    assert target.read_bytes() == b"defg" and [p.name for p in target.parent.iterdir()] == ["file.bin"]
