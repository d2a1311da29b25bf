import json

import pytest

from engines.spec import RunLimits, RunSpec, SpecError


def test_defaults_validate_and_round_trip_through_json():
    spec = RunSpec(model="resnet18", batch=4, duration_s=2.5, iterations=100, name="x").validate()
    again = RunSpec.from_dict(json.loads(json.dumps(spec.to_dict())))
    assert again == spec
    assert isinstance(again.limits, RunLimits)


@pytest.mark.parametrize(
    ("change", "field", "words"),
    [
        ({"model": "resnet9000"}, "model", "allowed: mlp, resnet18, resnet50, bert, gpt"),
        ({"engine": "tensorflow"}, "engine", "allowed: torch, onnxruntime"),
        ({"target": "tpu"}, "target", "cpu, cuda:N or mps"),
        ({"target": "cuda:x"}, "target", "cuda:N"),
        ({"batch": 0}, "batch", "from 1 to"),
        ({"batch": 2.5}, "batch", "whole number"),
        ({"batch": True}, "batch", "whole number"),
        ({"duration_s": 0}, "duration_s", "> 0"),
        ({"duration_s": -1}, "duration_s", "> 0"),
        ({"duration_s": float("nan")}, "duration_s", "> 0"),
        ({"iterations": 0}, "iterations", "from 1"),
        ({"warmup_s": -0.5}, "warmup_s", "≥ 0 and ≤ 3,600 s"),
        ({"threads": 0}, "threads", "from 1"),
        ({"scenario": "burst"}, "scenario", "single-stream"),
        ({"limits": RunLimits(stall_timeout_s=0)}, "limits.stall_timeout_s", "> 0"),
    ],
)
def test_invalid_fields_are_named_with_what_is_allowed(change, field, words):
    with pytest.raises(SpecError) as info:
        RunSpec(**change).validate()
    assert info.value.field == field
    assert words in str(info.value)


def test_unknown_keys_are_refused_not_ignored():
    with pytest.raises(SpecError) as info:
        RunSpec.from_dict({"model": "mlp", "batchsize": 8})
    assert info.value.field == "batchsize"
    with pytest.raises(SpecError):
        RunSpec.from_dict({"limits": {"stall": 3}})


def test_label_is_short_and_readable():
    assert RunSpec(model="mlp", batch=8).label() == "mlp · torch · cpu · b8"


@pytest.mark.parametrize(
    ("change", "field", "words"),
    [
        ({"model": "/nowhere/model.onnx", "engine": "onnxruntime"}, "model", "model file not found"),
        ({"model": "weights.pth"}, "model", "never loads"),
        ({"model": "model.pkl"}, "model", "pickles are never loaded"),
        ({"model": "model.h5"}, "model", "unknown model file type '.h5'"),
        ({"model": "mlp", "model_params": {"depth": 3}}, "model_params.depth", "has no parameter 'depth'"),
        ({"model": "mlp", "model_params": {"layers": 0}}, "model_params.layers", "from 1"),
        ({"precision": "fp8"}, "precision", "allowed: fp32, fp16, bf16, int8"),
        ({"mode": "training", "engine": "onnxruntime"}, "mode", "--engine torch"),
        ({"inputs": {"x": [1, 0, 3]}}, "inputs.x", "whole numbers ≥ 1"),
        ({"input_values": {"rate": "fast"}}, "input_values.rate", "must be a number"),
        ({"engine_options": {"torch": {"compile": "turbo"}}}, "torch.compile", "reduce-overhead"),
        ({"engine_options": {"onnxruntime": {"provider": "CUDA"}}}, "onnxruntime.provider",
         "not an execution provider name"),
        ({"engine_options": {"onnxruntime": {"graph_optimization": "max"}}}, "onnxruntime.graph_optimization",
         "extended"),
    ],
)
def test_model_files_and_engine_options_are_checked(change, field, words):
    with pytest.raises(SpecError) as info:
        RunSpec.from_dict(change).validate()
    assert info.value.field == field
    assert words in str(info.value)


def test_a_model_file_must_match_its_engine(tmp_path):
    model = tmp_path / "net.onnx"
    model.write_bytes(b"\x08\x07")
    with pytest.raises(SpecError, match="net.onnx is a .onnx file, which runs on --engine onnxruntime"):
        RunSpec(model=str(model), engine="torch").validate()
    assert RunSpec(model=str(model), engine="onnxruntime").validate().is_file


def test_nested_options_round_trip_and_unknown_nested_keys_are_named():
    spec = RunSpec.from_dict({"model": "mlp", "engine_options": {"torch": {"channels_last": True, "compile": "default"},
                                                                 "onnxruntime": {"allow_fallback": True}},
                              "generation": {"output_tokens": 8}})
    assert RunSpec.from_dict(spec.to_dict()) == spec
    assert spec.options_for("onnxruntime").allow_fallback and spec.options_for("torch").channels_last
    with pytest.raises(SpecError) as info:
        RunSpec.from_dict({"engine_options": {"onnxruntime": {"providr": "x"}}})
    assert info.value.field == "onnxruntime.providr"
    with pytest.raises(SpecError) as info:
        RunSpec.from_dict({"engine_options": {"tensorflow": {}}})
    assert info.value.field == "engine_options.tensorflow"


def test_a_version_1_spec_from_an_older_history_is_read():
    """Runs stored before spec version 2 kept engine options under "torch"/"ort" and one flat scenario block."""
    old = {"version": 1, "model": "mlp", "scenario": "server", "torch": {"channels_last": True, "compile": None},
           "ort": {"provider": None, "provider_options": {}, "graph_optimization": "basic", "inter_op_threads": None,
                   "execution_mode": "sequential", "allow_fallback": False, "opset": 17},
           "scenario_options": {"qps": 40.0, "latency_bound_ms": None, "find_peak": False, "concurrency": None,
                                "streams": None, "samples_per_query": None, "max_queries": None,
                                "warmup_until_stable": False, "warmup_cap_s": None}}
    spec = RunSpec.from_dict(old).validate()
    assert spec.version == 2
    assert spec.options_for("onnxruntime").graph_optimization == "basic"
    assert spec.options_for("onnxruntime").opset == 17
    assert spec.options_for("torch").channels_last
    assert spec.scenario_options.qps == 40.0
    assert "concurrency" not in spec.to_dict()["scenario_options"]  # offline's option, left at its default
