"""torch.export programs (engines.model_files.pt2): archives with pickles refused up front or while torch reads
them, inputs read from the program, its dims' ranges enforced."""

import json
import pickle

import pytest
import torch
from model_file_samples import Marker, rewrite_zip, sample_files, spec_for

from engines import model_files
from engines.model_files import ModelFileError, UnsafeModelFile


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    return sample_files(tmp_path_factory)


# ---- pickles inside the archive
def test_pt2_with_a_pickled_sample_input_is_refused_and_never_runs(files):
    """torch.export.load would fall back to torch.load(weights_only=False) here; the guard stops it."""
    marker = files["root"] / "pt2_pickle_ran"
    evil = files["root"] / "evil_inputs.pt2"
    rewrite_zip(files["pt2"], evil, {"sample_inputs/model.pt": pickle.dumps(Marker(marker))})
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
    rewrite_zip(files["pt2"], evil, {"model_weights_config.json": pickled})
    with pytest.raises(UnsafeModelFile, match="stored as a pickle"):
        model_files.load_torch(spec_for(evil), "cpu")


# ---- inspect and load
def test_inspect_pt2(files):
    pt2 = model_files.inspect(files["pt2"])
    assert pt2["format"] == "pt2"
    (x,) = pt2["inputs"]
    assert x["name"] == "x" and x["dtype"] == "float32" and isinstance(x["shape"][0], str) and x["shape"][1] == 8
    json.dumps(pt2)  # plain data


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


# ---- symbolic-shape expressions (torch hands them to sympy.sympify, which evaluates Python)
@pytest.mark.parametrize("load", ["run", "inspect"])
def test_pt2_with_code_in_a_shape_expression_is_refused_and_never_runs(files, load):
    """The reproduction from the hardening issue: a dynamic batch's Symbol('s…') with a Python call before it."""
    marker = files["root"] / f"pt2_sympify_ran_{load}"
    evil = files["root"] / f"evil_shape_{load}.pt2"
    payload = f"__import__('os').system('touch {marker}') or Symbol('s".encode()
    rewrite_zip(files["pt2"], evil, {"models/model.json": lambda data: data.replace(b"Symbol('s", payload, 1)})
    assert payload in zipfile_member(evil, "models/model.json")  # the file really carries it
    with pytest.raises(UnsafeModelFile, match="symbolic shape in models/model.json is not shape arithmetic"):
        model_files.load_torch(spec_for(evil), "cpu") if load == "run" else model_files.inspect(evil)
    assert not marker.exists()


def test_pt2_refusal_never_quotes_the_file(files):
    evil = files["root"] / "evil_quote.pt2"
    rewrite_zip(files["pt2"], evil, {"models/model.json": lambda data: data.replace(
        b"Symbol('s", b"getattr(Symbol('x'), 'y') or Symbol('s", 1)})
    with pytest.raises(UnsafeModelFile) as caught:
        model_files.inspect(evil)
    assert "getattr" not in str(caught.value)


@pytest.mark.parametrize("expression, ok", [
    ("Symbol('s77', positive=True, integer=True)", True),
    ("Mul(Integer(2), Symbol('s0', integer=True))", True),
    ("FloorDiv(Symbol('s1'), 2) + Max(s0, u1) - 1", True),
    ("Symbol('s0').__class__", False),
    ("__import__('os').system('x')", False),
    ("Pow(Integer(10), Integer(1000000000000))", False),  # a trillion-digit number
    ("Symbol('s0') + 1" + "0" * 30, False),
    ("Symbol(\"s0\"); print(1)", False),
])
def test_shape_expressions_are_held_to_a_grammar(expression, ok):
    from engines.model_files.pt2_expressions import problem_in

    assert (problem_in(expression) == "") is ok


def zipfile_member(path, suffix: str) -> bytes:
    import zipfile

    with zipfile.ZipFile(path) as archive:
        return next(archive.read(n) for n in archive.namelist() if n.endswith(suffix))
