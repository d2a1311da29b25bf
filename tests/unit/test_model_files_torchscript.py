"""TorchScript files (engines.model_files.torchscript): no shapes in the file, so each tensor input needs one;
scalar arguments take --input-value; unknown names are refused."""

import json

import pytest
import torch
from model_file_samples import sample_files, spec_for

from engines import model_files
from engines.model_files import ModelFileError


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    return sample_files(tmp_path_factory)


def test_inspect_torchscript(files):
    script = model_files.inspect(files["script"])
    assert script["format"] == "torchscript" and script["inputs"] == [{"name": "x", "dtype": "Tensor", "shape": None}]
    json.dumps(script)  # plain data


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
