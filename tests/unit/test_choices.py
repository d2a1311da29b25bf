"""The run form offers only what is usable for this model on this target, and says why not."""

from console.spec.choices import engine_choices, mode_choices, model_choices, precision_choices

CPU = {"id": "cpu", "available": True, "engine_details": {
    "torch": {"available": True, "precisions": ["fp32", "bf16", "int8"], "notes": {"bf16": "emulated"},
              "version": "2.13"},
    "onnxruntime": {"available": True, "precisions": ["fp32", "int8"], "providers": ["CPUExecutionProvider"]},
}}
GPU_WITHOUT_ORT = {"id": "cuda:0", "available": True, "engine_details": {
    "torch": {"available": True, "precisions": ["fp32", "fp16", "bf16"]},
    "onnxruntime": {"available": False, "reason": "no CUDAExecutionProvider (install onnxruntime-gpu)"},
}}


def by_value(items):
    return {value: (enabled, tip) for value, _label, enabled, tip in items}


def test_an_engine_missing_on_the_target_is_disabled_with_the_reason():
    engines = by_value(engine_choices(["torch", "onnxruntime"], "mlp", GPU_WITHOUT_ORT))
    assert engines["torch"][0]
    assert engines["onnxruntime"] == (False, "no CUDAExecutionProvider (install onnxruntime-gpu)")


def test_a_model_file_allows_only_the_engine_that_reads_it():
    engines = by_value(engine_choices(["torch", "onnxruntime"], "/models/net.onnx", CPU))
    assert engines["onnxruntime"][0]
    assert engines["torch"] == (False, "a .onnx file runs on ONNX Runtime")


def test_precisions_follow_engine_and_target():
    torch_cpu = by_value(precision_choices("torch", CPU))
    assert torch_cpu["fp32"][0] and torch_cpu["int8"][0]
    assert torch_cpu["bf16"] == (True, "emulated")
    assert torch_cpu["fp16"] == (False, "PyTorch offers no fp16 on cpu")
    ort_cpu = by_value(precision_choices("onnxruntime", CPU))
    assert not ort_cpu["bf16"][0] and ort_cpu["int8"][0]


def test_before_discovery_only_fp32_is_offered():
    assert [v for v, _l, enabled, _t in precision_choices("torch", None) if enabled] == ["fp32"]


def test_training_needs_torch_and_a_catalog_model():
    assert by_value(mode_choices("torch", "mlp"))["training"][0]
    assert not by_value(mode_choices("onnxruntime", "mlp"))["training"][0]
    assert not by_value(mode_choices("torch", "/m/net.pt2"))["training"][0]


def test_missing_model_files_stay_listed_but_disabled(tmp_path):
    present = tmp_path / "a.onnx"
    present.write_bytes(b"x")
    items = by_value(model_choices([{"name": "mlp", "description": "MLP", "input": "float32"}],
                                   [str(present), str(tmp_path / "gone.pt2")]))
    assert items["mlp"][0] and items[str(present)][0]
    assert items[str(tmp_path / "gone.pt2")] == (False, f"{tmp_path / 'gone.pt2'}: file not found")
