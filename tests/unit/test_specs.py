"""The one spec builder: flat option values from any surface → a validated RunSpec, errors in the user's words."""

from __future__ import annotations

import pytest

from console.spec.build import (
    SpecError,
    build_spec,
    engine_fields,
    flag_for,
    label_for,
    scenario_fields,
    spec_data,
)


def test_flat_values_become_a_nested_spec_and_none_means_default():
    spec = build_spec({"model": "mlp", "batch": 4, "threads": None, "torch.compile": "default",
                       "onnxruntime.opset": 17, "scenario": "server", "scenario_options.qps": 25.0,
                       "generation.output_tokens": 4, "model_params": ["layers=2"]})
    assert spec.batch == 4 and spec.threads is None
    assert spec.options_for("torch").compile == "default"
    assert spec.options_for("onnxruntime").opset == 17
    assert spec.scenario_options.qps == 25.0
    assert spec.generation.output_tokens == 4
    assert spec.model_params == {"layers": 2}


def test_repeated_name_value_flags_and_form_mappings_give_the_same_spec(tmp_path):
    model = tmp_path / "model.onnx"  # input shapes and values apply to model files only
    model.write_bytes(b"x")
    on_file = {"model": str(model), "engine": "onnxruntime"}
    from_flags = build_spec({**on_file, "inputs": ["x=1x3x8x8"], "input_values": ["rate=16000", "gain=0.5"],
                             "onnxruntime.provider_options": ["device_id=0"]})
    from_form = build_spec({**on_file, "inputs": {"x": [1, 3, 8, 8]}, "input_values": {"rate": 16000, "gain": 0.5},
                            "onnxruntime.provider_options": {"device_id": "0"}})
    assert from_flags == from_form


@pytest.mark.parametrize(("values", "path", "words"), [
    ({"model_params": ["layers"]}, "model_params", "expected NAME=VALUE"),
    ({"model_params": ["layers=two"]}, "model_params.layers", "not a whole number"),
    ({"input_values": ["rate=fast"]}, "input_values.rate", "not a number"),
    ({"inputs": ["x=1x0"]}, "inputs.x", "whole number ≥ 1"),
    ({"batchsize": 3}, "batchsize", "unknown option"),
    ({"scenario_options.concurrency": 2}, "scenario_options.concurrency", "applies to scenario offline"),
    ({"torch.compile": "turbo"}, "torch.compile", "allowed: default, reduce-overhead, max-autotune"),
])
def test_errors_name_the_option_path(values, path, words):
    with pytest.raises(SpecError) as info:
        build_spec(values)
    assert info.value.field == path
    assert words in str(info.value)


def test_paths_turn_into_the_flag_typed_and_the_label_seen():
    assert flag_for("scenario_options.qps") == "--qps"
    assert flag_for("model_params.layers") == "--param layers"
    assert flag_for("onnxruntime.graph_optimization") == "--graph-opt"
    assert flag_for("duration_s") == "--duration"
    assert label_for("scenario_options.latency_bound_ms") == "p99 bound (ms)"
    assert label_for("inputs.pixels") == "Input shapes (pixels)"


def test_each_scenario_declares_the_fields_its_form_section_shows():
    assert [f.path for f in scenario_fields("server")] == [
        "scenario_options.warmup_until_stable", "scenario_options.warmup_cap_s", "scenario_options.max_queries",
        "scenario_options.qps", "scenario_options.latency_bound_ms", "scenario_options.find_peak"]
    assert {f.path for f in scenario_fields("generate")} == {"generation.prompt_tokens", "generation.output_tokens"} | {
        f"scenario_options.kv_{name}" for name in ("offload", "budget_mb", "block_tokens", "repeat_rate", "seed",
                                                   "write_p95_ms", "read_p95_ms", "min_hit_rate")}
    assert {f.name for f in scenario_fields("offline")} >= {"concurrency", "samples_per_query", "max_queries"}


def test_each_backend_declares_its_options():
    assert [f.flag for f in engine_fields("torch")] == ["--channels-last", "--compile", "--ranks", "--scaling",
                                                        "--bucket-mb", "--grad-accum", "--inject-straggler"]
    assert "--allow-fallback" in [f.flag for f in engine_fields("onnxruntime")]


def test_spec_data_leaves_the_base_of_a_sweep_unvalidated():
    """A sweep's base may be invalid on its own (server without a rate) where every point is fine."""
    assert spec_data({"scenario": "server", "batch": None}) == {"scenario": "server"}
