"""Format detection (engines.model_files.detect): decided by content, and a file that is not what its name says
is named for what it is."""

import zipfile

import numpy as np
import pytest
from model_file_samples import sample_files, spec_for

from engines import model_files
from engines.model_files import ModelFileError


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    return sample_files(tmp_path_factory)


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


def test_zip_that_is_neither(files):
    other = files["root"] / "other.pt"
    with zipfile.ZipFile(other, "w") as archive:
        archive.writestr("other/readme.txt", "hello")
    with pytest.raises(ModelFileError, match="neither TorchScript nor a torch.export program"):
        model_files.detect_format(other)
