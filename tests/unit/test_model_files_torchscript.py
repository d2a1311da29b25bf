"""TorchScript files (engines.model_files.torchscript): code, so loaded only when trusted and never by `inspect`;
no shapes in the file, so each tensor input needs one; scalar arguments take --input-value; unknown names are
refused."""

import json
import zipfile

import pytest
import torch
from model_file_samples import rewrite_zip, sample_files, spec_for

from engines import model_files
from engines.model_files import ModelFileError
from engines.model_files.torchscript import UntrustedCode


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    return sample_files(tmp_path_factory)


def trusted(path, **kwargs):
    return spec_for(path, trust_code=True, **kwargs)


@pytest.fixture
def jit_loads(monkeypatch):
    """Every torch.jit.load call, recorded (and still made)."""
    calls = []
    real = torch.jit.load

    def spy(*args, **kwargs):
        calls.append(args[0] if args else kwargs.get("f"))
        return real(*args, **kwargs)

    monkeypatch.setattr(torch.jit, "load", spy)
    return calls


# ---- code: refused unless trusted, never loaded to be inspected
@pytest.mark.parametrize("kind", ["script", "trace", "scaled"])
def test_an_untrusted_torchscript_file_is_refused_before_it_is_loaded(files, kind, jit_loads):
    with pytest.raises(UntrustedCode) as refused:
        model_files.load_torch(spec_for(files[kind], inputs={"x": [1, 8]}), "cpu")
    message = str(refused.value)
    assert f"{files[kind]} is TorchScript, and TorchScript is code" in message
    assert "--trust-code" in message and ".onnx" in message and ".pt2" in message
    assert jit_loads == []


def test_inspect_reads_the_signature_without_loading(files, jit_loads):
    script = model_files.inspect(files["script"])
    assert script["format"] == "torchscript" and script["inputs"] == [{"name": "x", "dtype": "Tensor", "shape": None}]
    assert script["outputs"] == [{"name": "output", "dtype": "Tensor"}]
    assert script["runs_code"] is True and "TorchScript is code" in script["note"]
    scaled = model_files.inspect(files["scaled"])
    assert [(i["name"], i["dtype"]) for i in scaled["inputs"]] == [("x", "Tensor"), ("factor", "int")]
    assert model_files.inspect(files["trace"])["inputs"][0]["name"] == "x"
    assert jit_loads == []
    json.dumps(script)  # plain data


def test_inspect_of_unreadable_source_says_inputs_come_once_trusted(files, jit_loads):
    odd = files["root"] / "no_source.pt"
    with zipfile.ZipFile(files["script"]) as source:
        code = [n for n in source.namelist() if "/code/" in n and n.endswith(".py")]
    rewrite_zip(files["script"], odd, {name: b"this is not python (" for name in code})
    info = model_files.inspect(odd)
    assert info["inputs"] == [] and "inputs are read once you trust it (--trust-code)" in info["note"]
    assert jit_loads == []


# ---- trusted: inputs from the spec
def test_torchscript_needs_input_shapes(files):
    with pytest.raises(ModelFileError) as err:
        model_files.load_torch(trusted(files["script"]), "cpu")
    assert "records no input shapes" in str(err.value) and "--input x=" in str(err.value)
    module, inputs, info = model_files.load_torch(trusted(files["trace"], inputs={"x": [2, 8]}), "cpu")
    assert inputs[0].shape == (2, 8)
    with torch.inference_mode():
        assert module(*inputs).shape == (2, 4)
    assert info["format"] == "torchscript"


def test_torchscript_scalar_argument_takes_input_value(files):
    with pytest.raises(ValueError, match="--input-value factor="):
        model_files.load_torch(trusted(files["scaled"], inputs={"x": [1, 3]}), "cpu")
    module, inputs, _ = model_files.load_torch(
        trusted(files["scaled"], inputs={"x": [1, 3]}, input_values={"factor": 3}), "cpu")
    assert inputs[1] == 3 and isinstance(inputs[1], int)
    assert torch.allclose(module(*inputs), inputs[0] * 3)


def test_torchscript_unknown_input_name(files):
    with pytest.raises(ModelFileError, match="has no input 'y'"):
        model_files.load_torch(trusted(files["trace"], inputs={"x": [1, 8], "y": [1]}), "cpu")


def test_trust_code_is_a_flag_and_a_spec_field():
    from engines.spec import RunSpec, SpecError, spec_fields

    (field,) = [f for f in spec_fields() if f.path == "trust_code"]
    assert field.flag == "--trust-code" and field.kind == "bool" and field.default is False
    assert RunSpec.from_dict({}).trust_code is False  # stored runs from before keep working
    with pytest.raises(SpecError, match="trust_code: must be true or false"):
        RunSpec(trust_code="yes").validate()
