"""ONNX files (engines.model_files.onnx_model): inputs with symbolic dims, weight totals, and external data
checked before anything loads it (inside the model's folder, present, long enough)."""

import onnx
import pytest
from model_file_samples import sample_files

from engines import model_files
from engines.model_files import ModelFileError


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    return sample_files(tmp_path_factory)


def test_inspect_onnx_reads_symbolic_dims(files):
    info = model_files.inspect(files["onnx"])
    assert info["format"] == "onnx" and info["size_bytes"] == files["onnx"].stat().st_size
    assert info["sha256"] == model_files.sha256(files["onnx"]) and len(info["sha256"]) == 64
    assert info["inputs"] == [{"name": "x", "dtype": "float32", "shape": ["batch", 8]}]
    assert info["outputs"][0]["shape"] == ["batch", 4]
    assert info["params"] == 8 * 4 + 4 and info["external_data"] == []


def test_external_data_is_checked_before_loading(files, tmp_path):
    model = onnx.load(str(files["onnx"]))
    path = tmp_path / "big.onnx"
    onnx.save_model(model, str(path), save_as_external_data=True, all_tensors_to_one_file=True,
                    location="big.onnx.data", size_threshold=0)
    data = tmp_path / "big.onnx.data"
    assert model_files.inspect(path)["external_data"] == ["big.onnx.data"]

    data.write_bytes(data.read_bytes()[:10])
    with pytest.raises(ModelFileError, match=r"big\.onnx\.data is truncated \(10 bytes"):
        model_files.inspect(path)
    data.unlink()
    with pytest.raises(ModelFileError, match=r"external data file 'big\.onnx\.data', which is missing"):
        model_files.inspect(path)

    escaping = onnx.load(str(path), load_external_data=False)
    for tensor in escaping.graph.initializer:
        for entry in tensor.external_data:
            if entry.key == "location":
                entry.value = "../elsewhere.data"
    outside = tmp_path / "outside.onnx"
    onnx.save_model(escaping, str(outside))
    with pytest.raises(ModelFileError, match="points outside the model's folder; refused"):
        model_files.inspect(outside)
