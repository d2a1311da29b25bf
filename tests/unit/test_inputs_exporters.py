"""Model inputs as exporters write them: "?", "" and dim_value ≤ 0 are dims of their own; a named dim the user's
shapes give two sizes is a warning carried to the run, not a refusal (ONNX Runtime's own check decides)."""

import json

import numpy as np
import pytest

from engines.inputs import InputError, input_warnings, resolve_inputs, symbol_warnings, unknown_dim
from engines.spec import RunSpec


@pytest.mark.parametrize("dim", [None, "?", "", " ? ", -1, 0, np.int64(-1)])
def test_unknown_dims_as_exporters_write_them(dim):
    assert unknown_dim(dim) is None


@pytest.mark.parametrize("dim, kept", [(3, 3), (np.int64(48), 48), ("batch", "batch"), ("seq", "seq")])
def test_fixed_and_named_dims_are_kept(dim, kept):
    assert unknown_dim(dim) == kept


def test_paddleocr_classifier_shape_takes_two_different_question_marks():
    declared = [{"name": "x", "dtype": "float32", "shape": [-1, 3, "?", "?"]}]  # as Paddle2ONNX writes it
    arrays, resolved = resolve_inputs(declared, 1, {"x": [1, 3, 48, 192]})
    assert arrays["x"].shape == (1, 3, 48, 192)
    assert resolved[0]["declared"] == [None, 3, None, None] and "warnings" not in resolved[0]


def test_question_mark_dims_in_two_inputs_are_not_tied():
    declared = [{"name": "a", "dtype": "float32", "shape": ["?", "?"]},
                {"name": "b", "dtype": "float32", "shape": [0, "?"]}]
    arrays, resolved = resolve_inputs(declared, 1, {"a": [1, 7], "b": [1, 9]})
    assert arrays["a"].shape == (1, 7) and arrays["b"].shape == (1, 9)
    assert input_warnings(resolved) == []


def test_an_unknown_dim_is_not_filled_from_another_input():
    declared = [{"name": "a", "dtype": "float32", "shape": ["?", "?"]},
                {"name": "b", "dtype": "float32", "shape": ["?", "?"]}]
    with pytest.raises(InputError, match=r"input 'b' has dynamic dims \['dim 1'\]"):
        resolve_inputs(declared, 1, {"a": [1, 7]})


def test_a_zero_or_negative_dim_value_is_not_a_fixed_dim():
    declared = [{"name": "x", "dtype": "float32", "shape": [-1, 0, 8]}]
    arrays, _ = resolve_inputs(declared, 1, {"x": [2, 5, 8]})
    assert arrays["x"].shape == (2, 5, 8)
    with pytest.raises(InputError, match="dim 2 must be 8, got 9"):
        resolve_inputs(declared, 1, {"x": [2, 5, 9]})


def test_a_named_dim_given_two_sizes_is_a_warning_on_that_input():
    declared = [{"name": "input_ids", "dtype": "int64", "shape": ["batch", "seq"]},
                {"name": "attention_mask", "dtype": "int64", "shape": ["batch", "seq"]}]
    user = {"input_ids": [1, 16], "attention_mask": [1, 8]}
    arrays, resolved = resolve_inputs(declared, 1, user)
    assert arrays["input_ids"].shape == (1, 16) and arrays["attention_mask"].shape == (1, 8)  # as given
    (warning,) = input_warnings(resolved)
    assert warning.startswith("--input attention_mask: dim 'seq' is 8 here but 16 in --input input_ids")
    assert "Fix" in warning and "warnings" not in resolved[0] and resolved[1]["warnings"] == [warning]
    assert symbol_warnings(declared, user) == [warning]


def test_a_named_dim_repeated_in_one_input_given_two_sizes_warns():
    declared = [{"name": "square", "dtype": "float32", "shape": ["n", "n"]}]
    _, resolved = resolve_inputs(declared, 1, {"square": [3, 4]})
    (warning,) = input_warnings(resolved)
    assert "dim 'n' is 4 here but 3 earlier in this shape" in warning


def test_the_first_size_of_a_named_dim_fills_inputs_left_out():
    declared = [{"name": "a", "dtype": "float32", "shape": ["batch", "seq"]},
                {"name": "b", "dtype": "float32", "shape": ["batch", "seq"]},
                {"name": "c", "dtype": "float32", "shape": ["batch", "seq"]}]
    arrays, resolved = resolve_inputs(declared, 1, {"a": [1, 16], "b": [1, 8]})
    assert arrays["c"].shape == (1, 16) and len(input_warnings(resolved)) == 1


# ---- ONNX files built here, read and run as a user's file is
def _save(tmp_path, name, inputs, node):
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper

    values = [helper.make_tensor_value_info(n, TensorProto.FLOAT, dims) for n, dims in inputs]
    out = helper.make_tensor_value_info("out", TensorProto.FLOAT, None)
    graph = helper.make_graph([node], "g", values, [out])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    path = tmp_path / f"{name}.onnx"
    onnx.save(model, str(path))
    return path


def _paddle_style(tmp_path):
    """x: [-1, 3, "?", "?"], dim_value -1 and dim_param "?" twice, as Paddle2ONNX writes its classifier."""
    onnx = pytest.importorskip("onnx")
    from onnx import helper

    path = _save(tmp_path, "cls", [("x", [1, 3, "?", "?"])], helper.make_node("Relu", ["x"], ["out"]))
    model = onnx.load(str(path))
    model.graph.input[0].type.tensor_type.shape.dim[0].dim_value = -1
    onnx.save(model, str(path))
    return path


def test_inspecting_a_paddle_style_file_reads_each_unknown_dim_as_its_own(tmp_path):
    from engines.model_files import inspect_onnx

    info = inspect_onnx(_paddle_style(tmp_path))
    assert info["inputs"][0]["shape"] == [None, 3, None, None]


def _events(spec):
    from engines.worker import run_spec

    events = []
    run_spec(spec.to_dict(), events.append)
    errors = [e["message"] for e in events if e["type"] == "error"]
    assert not errors, errors
    return {e["type"]: e for e in events}


def test_a_paddle_style_classifier_runs_at_48_by_192_on_onnx_runtime(tmp_path):
    pytest.importorskip("onnxruntime")
    spec = RunSpec(model=str(_paddle_style(tmp_path)), engine="onnxruntime", inputs={"x": [1, 3, 48, 192]},
                   iterations=5, warmup_s=0)
    events = _events(spec)
    details = events["loaded"]["details"]
    assert details["inputs"][0]["shape"] == [1, 3, 48, 192] and "input_warnings" not in details
    assert events["result"]["iterations"] == 5


def test_a_named_dim_given_two_sizes_runs_with_the_warning_in_its_notes(tmp_path):
    pytest.importorskip("onnxruntime")
    from onnx import helper

    from console.analysis.summary import summarize

    # Two inputs share the name "seq" but the graph does not tie them (each is reduced alone): ORT runs it.
    path = _save(tmp_path, "pair", [("a", ["batch", "seq"]), ("b", ["batch", "seq"])],
                 helper.make_node("Concat", ["a", "b"], ["out"], axis=1))
    spec = RunSpec(model=str(path), engine="onnxruntime", inputs={"a": [1, 16], "b": [1, 8]}, iterations=5,
                   warmup_s=0)
    events = _events(spec)
    (warning,) = events["loaded"]["details"]["input_warnings"]
    assert "dim 'seq' is 8 here but 16 in --input a" in warning
    summary = summarize(np.full(5, 1_000_000), events["result"], events["loaded"], 1)
    assert warning in summary["notes"]


def test_a_named_dim_the_model_ties_is_refused_by_onnx_runtime_not_by_us(tmp_path):
    pytest.importorskip("onnxruntime")
    from onnx import helper

    from engines.worker import run_spec

    path = _save(tmp_path, "tied", [("a", ["batch", "seq"]), ("b", ["batch", "seq"])],
                 helper.make_node("Add", ["a", "b"], ["out"]))
    spec = RunSpec(model=str(path), engine="onnxruntime", inputs={"a": [1, 16], "b": [1, 8]}, iterations=5,
                   warmup_s=0)
    events = []
    run_spec(spec.to_dict(), events.append)
    errors = [e["message"] for e in events if e["type"] == "error"]
    assert errors and "must agree" not in errors[0]  # the engine's own message, not our refusal


def test_the_command_line_prints_the_named_dim_warning_and_runs(tmp_path, capsys):
    pytest.importorskip("onnxruntime")
    from onnx import helper

    from console.cli import main

    path = _save(tmp_path, "pair", [("a", ["batch", "seq"]), ("b", ["batch", "seq"])],
                 helper.make_node("Concat", ["a", "b"], ["out"], axis=1))
    argv = ["run", "--model", str(path), "--engine", "onnxruntime", "--input", "a=1x16", "--input", "b=1x8",
            "--iterations", "5", "--warmup", "0", "--no-telemetry", "--db", str(tmp_path / "h.db")]
    assert main([*argv, "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["status"] == "completed"
    assert any("dim 'seq' is 8 here but 16 in --input a" in warning for warning in report["warnings"])
    assert main(argv) == 0
    assert "warning: --input b: dim 'seq' is 8 here but 16" in capsys.readouterr().out
