"""The user's PyTorch model files through the worker: .pt2 and TorchScript run; bad files fail as load errors.

The files are made here (torch.export.save, torch.jit.script/trace(...).save, torch.save, pickle.dumps); the
worker loop is `engines.worker.run_spec`, in-process. A pickle that would create a marker directory proves that
nothing was unpickled.
"""

import os
import pickle

import numpy as np
import pytest
import torch
from torch import nn

from engines.spec import RunSpec
from engines.worker import run_spec


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.fc = nn.Linear(16, 4)

    def forward(self, x):
        return torch.tanh(self.fc(x))


class Marker:
    def __init__(self, path):
        self.path = str(path)

    def __reduce__(self):
        return (os.mkdir, (self.path,))


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    root = tmp_path_factory.mktemp("torch_files")
    model = Net().eval()
    example = torch.randn(2, 16)
    torch.export.save(torch.export.export(model, (example,), dynamic_shapes=({0: torch.export.Dim("batch")},)),
                      root / "net.pt2")
    torch.jit.script(model).save(str(root / "net.pt"))
    torch.jit.trace(model, example).save(str(root / "net.jit"))
    torch.onnx.export(model, (example,), str(root / "net.onnx"), dynamo=True, external_data=False,
                      input_names=["x"], verbose=False)
    return {"root": root, "model": model, "pt2": root / "net.pt2", "script": root / "net.pt",
            "trace": root / "net.jit", "onnx": root / "net.onnx"}


def spec(path, **kwargs):
    kwargs.setdefault("duration_s", 0.2)
    kwargs.setdefault("warmup_s", 0.05)
    return RunSpec(model=str(path), engine="torch", **kwargs)


def outcome(run):
    events = []
    run_spec(run.to_dict(), events.append)
    return events[-1], {e["type"]: e for e in events}


def load_error(run):
    last, _ = outcome(run)
    assert last["type"] == "error" and last["kind"] == "load", last
    return last["message"]


def test_pt2_runs_with_shapes_from_the_file(files):
    last, by_type = outcome(spec(files["pt2"], batch=4))
    assert last["type"] == "result", last.get("message")
    info = by_type["loaded"]["details"]["file"]
    assert info["format"] == "pt2" and len(info["sha256"]) == 64
    assert info["inputs"][0]["shape"] == [4, 16]


@pytest.mark.parametrize("kind", ["script", "trace"])
def test_torchscript_runs_with_given_shapes(files, kind):
    last, by_type = outcome(spec(files[kind], inputs={"x": [3, 16]}, trust_code=True))
    assert last["type"] == "result", last.get("message")
    assert by_type["loaded"]["details"]["file"]["format"] == "torchscript"
    assert by_type["loaded"]["details"]["file"]["inputs"][0]["shape"] == [3, 16]


def _write(files, name, data):
    path = files["root"] / name
    path.write_bytes(data)
    return path


def test_torchscript_without_shapes_names_the_fix(files):
    message = load_error(spec(files["script"], trust_code=True))
    assert "net.pt: a TorchScript file records no input shapes" in message and "--input x=" in message


def test_empty_pt(files):
    assert "empty.pt is empty (0 bytes)" in load_error(spec(_write(files, "empty.pt", b"")))


def test_random_bytes_pt(files):
    noise = np.random.default_rng(11).integers(0, 256, 3000, dtype=np.uint8).tobytes()
    message = load_error(spec(_write(files, "noise.pt", noise), inputs={"x": [1, 16]}))
    assert "noise.pt is not a TorchScript or torch.export archive" in message


def test_truncated_pt2(files):
    data = files["pt2"].read_bytes()
    message = load_error(spec(_write(files, "cut.pt2", data[: len(data) // 3])))
    assert "cut.pt2 is a damaged or truncated archive" in message


def test_onnx_file_named_pt(files):
    message = load_error(spec(_write(files, "model_onnx.pt", files["onnx"].read_bytes()), inputs={"x": [1, 16]}))
    assert "model_onnx.pt is an ONNX model, not a PyTorch file" in message and "--engine onnxruntime" in message


def test_torch_save_module_is_refused(files):
    path = files["root"] / "saved.pt"
    torch.save(files["model"], path)
    message = load_error(spec(path, inputs={"x": [1, 16]}))
    assert "saved.pt is a pickled Python object (torch.save), not TorchScript" in message
    assert "never unpickles" in message and "torch.jit.script(model).save(path)" in message


def test_raw_pickle_is_refused_and_no_code_runs(files):
    marker = files["root"] / "marker"
    path = _write(files, "evil.pt", pickle.dumps(Marker(marker)))
    message = load_error(spec(path, inputs={"x": [1, 16]}))
    assert "evil.pt is a pickled Python object" in message
    assert not marker.exists()
