"""A user model's batch is read from its inputs; unnamed dynamic dims are dims of their own; values fit dtypes."""

import numpy as np
import pytest

from engines.inputs import InputError, resolve_inputs, samples_per_call
from engines.spec import RunSpec, SpecError
from engines.worker import _adopt_batch_of_inputs

FEATURES = [{"name": "features", "dtype": "float32", "shape": ["batch", 512]}]


def test_an_input_shape_sets_the_samples_per_call():
    _, resolved = resolve_inputs(FEATURES, 1, {"features": [3, 512]})
    assert samples_per_call(resolved) == 3
    _, resolved = resolve_inputs(FEATURES, 4)  # no shape given: the batch fills the dynamic dim
    assert samples_per_call(resolved) == 4


def test_a_torchscript_style_input_with_only_fixed_dims_counts_dim_0():
    declared = [{"name": "x", "dtype": "float32", "shape": [3, 512]}]  # TorchScript: the shape is the user's
    _, resolved = resolve_inputs(declared, 1, {"x": [3, 512]})
    assert samples_per_call(resolved) == 3


def test_a_fixed_side_input_does_not_hide_the_batch():
    declared = FEATURES + [{"name": "table", "dtype": "float32", "shape": [10, 4]}]
    _, resolved = resolve_inputs(declared, 1, {"features": [6, 512]})
    assert samples_per_call(resolved) == 6


def test_a_batch_the_shapes_contradict_is_refused():
    with pytest.raises(InputError) as err:
        resolve_inputs(FEATURES, 4, {"features": [3, 512]})
    assert "--batch 4 does not fit the inputs: --input features=3x512, which hold 3 samples a call" in str(err.value)
    with pytest.raises(InputError, match=r"the model declares x \[1, 3, 8, 8\], which hold 1 sample a call"):
        resolve_inputs([{"name": "x", "dtype": "float32", "shape": [1, 3, 8, 8]}], 8)
    with pytest.raises(InputError, match="scalar inputs only"):
        resolve_inputs([{"name": "rate", "dtype": "int64", "shape": []}], 2, {}, {"rate": 1})


def test_the_worker_counts_the_samples_the_inputs_hold(tmp_path):
    model = tmp_path / "features.onnx"
    model.write_bytes(b"not parsed by validation")
    spec = RunSpec(model=str(model), engine="onnxruntime", inputs={"features": [3, 512]}).validate()
    details = {"inputs": resolve_inputs(FEATURES, spec.batch, spec.inputs)[1]}
    _adopt_batch_of_inputs(spec, details)
    assert spec.batch == 3 and details["samples_per_call"] == 3  # throughput = calls × 3
    torch_details = {"inputs": [{"name": "features", "shape": [5, 512], "dtype": "float32"}],
                     "file": {"inputs": resolve_inputs(FEATURES, 1, {"features": [5, 512]})[1]}}
    _adopt_batch_of_inputs(spec, torch_details)  # the torch backend keeps the resolved list under "file"
    assert spec.batch == 5


def test_a_batch_read_from_the_inputs_is_checked_against_the_scenario(tmp_path):
    model = tmp_path / "features.onnx"
    model.write_bytes(b"x")
    spec = RunSpec(model=str(model), engine="onnxruntime", scenario="multi-stream").validate()  # 8 streams
    with pytest.raises(SpecError, match="served in calls of batch 3"):
        _adopt_batch_of_inputs(spec, {"inputs": resolve_inputs(FEATURES, 1, {"features": [3, 512]})[1]})


def test_a_catalog_model_refuses_input_shapes_and_values():
    with pytest.raises(SpecError) as err:
        RunSpec(model="mlp", inputs={"x": [1, 16]}).validate()
    assert err.value.field == "inputs.x" and "apply to model files only" in str(err.value)
    with pytest.raises(SpecError, match="input_values.rate: input shapes and values apply to model files only"):
        RunSpec(model="mlp", input_values={"rate": 16000}).validate()


def test_unnamed_dynamic_dims_are_each_their_own_dim():
    declared = [{"name": "image", "dtype": "float32", "shape": [None, 3, None, None]}]
    arrays, resolved = resolve_inputs(declared, 1, {"image": [2, 3, 64, 32]})  # ? = 64 and ? = 32: not one dim
    assert arrays["image"].shape == (2, 3, 64, 32) and samples_per_call(resolved) == 2
    with pytest.raises(InputError) as err:
        resolve_inputs(declared, 1)
    assert "dynamic dims ['dim 2', 'dim 3']" in str(err.value) and "[?, 3, ?, ?]" in str(err.value)
    two = declared + [{"name": "mask", "dtype": "float32", "shape": [None, 1, None, None]}]
    arrays, _ = resolve_inputs(two, 2, {"image": [2, 3, 64, 32], "mask": [2, 1, 16, 8]})
    assert arrays["mask"].shape == (2, 1, 16, 8)  # unnamed dims of two inputs are not bound to each other


@pytest.mark.parametrize(("dtype", "value", "words"), [
    ("int64", 1e30, "int64, which holds whole numbers from -9,223,372,036,854,775,808"),
    ("int32", 2.5, "int32, which holds whole numbers"),
    ("float32", 1e300, "float32, which holds numbers between -3.403e+38 and 3.403e+38"),
    ("bool", 2, "is a bool; give 0 or 1"),
    ("float64", float("inf"), "not a finite number"),
])
def test_a_scalar_value_must_fit_the_inputs_dtype(dtype, value, words):
    declared = [{"name": "v", "dtype": dtype, "shape": []}]
    with pytest.raises(InputError) as err:
        resolve_inputs(declared, 1, {}, {"v": value})
    assert f"--input-value v={value}" in str(err.value) and words in str(err.value)


def test_values_that_fit_are_fed_exactly():
    declared = [{"name": "n", "dtype": "int64", "shape": []}, {"name": "gain", "dtype": "float32", "shape": [2]}]
    arrays, _ = resolve_inputs(declared, 1, {}, {"n": 2**40, "gain": 0.5})
    assert int(arrays["n"]) == 2**40 and np.all(arrays["gain"] == np.float32(0.5))


# ---- end to end through the worker loop (in this process): the engines see what the rules say
def run_events(spec):
    from engines.worker import run_spec

    events = []
    run_spec(spec.to_dict(), events.append)
    errors = [e["message"] for e in events if e["type"] == "error"]
    assert not errors, errors
    return {e["type"]: e for e in events}


def test_an_onnx_input_with_unnamed_dynamic_dims_runs_with_each_dim_its_own(tmp_path):
    pytest.importorskip("onnxruntime")
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper

    image = helper.make_tensor_value_info("image", TensorProto.FLOAT, [None, 3, None, None])  # dim_param empty
    out = helper.make_tensor_value_info("out", TensorProto.FLOAT, None)
    graph = helper.make_graph([helper.make_node("Relu", ["image"], ["out"])], "g", [image], [out])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    path = tmp_path / "image.onnx"
    onnx.save(model, str(path))
    spec = RunSpec(model=str(path), engine="onnxruntime", inputs={"image": [2, 3, 16, 8]}, iterations=5, warmup_s=0)
    events = run_events(spec)
    details = events["loaded"]["details"]
    assert details["inputs"][0]["shape"] == [2, 3, 16, 8] and details["inputs"][0]["declared"] == [None, 3, None, None]
    assert details["samples_per_call"] == 2 and events["result"]["iterations"] == 5
    assert events["result"]["batch"] == 2  # the scenario counts 2 samples a call


def test_a_torchscript_int_and_float_argument_get_their_input_values_end_to_end(tmp_path):
    torch = pytest.importorskip("torch")

    class Scaled(torch.nn.Module):
        def forward(self, x: torch.Tensor, factor: int, gain: float) -> torch.Tensor:
            return x * factor * gain

    path = tmp_path / "scaled.pt"
    torch.jit.script(Scaled()).save(str(path))
    spec = RunSpec(model=str(path), engine="torch", trust_code=True, inputs={"x": [3, 4]},
                   input_values={"factor": 2, "gain": 0.5}, iterations=5, warmup_s=0)
    events = run_events(spec)
    inputs = {i["name"]: i for i in events["loaded"]["details"]["file"]["inputs"]}
    assert inputs["factor"]["shape"] == [] and inputs["factor"]["dtype"] == "int64"
    assert inputs["gain"]["dtype"] == "float64"
    assert events["loaded"]["details"]["samples_per_call"] == 3 and events["result"]["iterations"] == 5
    assert events["result"]["batch"] == 3  # --input x=3x4: 3 samples a call, not the default batch 1


def test_a_run_counts_the_samples_its_input_shapes_hold_in_the_throughput(tmp_path):
    pytest.importorskip("onnxruntime")
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper

    from console.history import HistoryWriter
    from console.run.session import RunSession

    features = helper.make_tensor_value_info("features", TensorProto.FLOAT, ["batch", 512])
    out = helper.make_tensor_value_info("out", TensorProto.FLOAT, ["batch", 512])
    graph = helper.make_graph([helper.make_node("Relu", ["features"], ["out"])], "g", [features], [out])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    path = tmp_path / "features.onnx"
    onnx.save(model, str(path))
    writer = HistoryWriter.open(tmp_path / "history.db")
    try:
        session = RunSession(RunSpec(model=str(path), engine="onnxruntime", inputs={"features": [3, 512]},
                                     iterations=30, warmup_s=0), writer, telemetry_hz=None)
        session.start()
        record = session.wait(120)
    finally:
        writer.close()
    assert record is not None and record["status"] == "completed", record and record["message"]
    summary = record["summary"]
    assert record["spec"]["batch"] == 3 and summary["batch"] == 3
    assert summary["throughput_per_s"] == pytest.approx(summary["iterations"] * 3 / summary["duration_s"], rel=1e-6)
