"""ONNX Runtime end to end: catalog models exported, checked and measured; user .onnx files; bad input.

Runs go through `engines.worker.run_spec` in-process (the same loop a worker runs) and, once each way, through a
real spawned worker (`console.run.runner.WorkerRun`). Model files are made here: torch.onnx.export (one with external
data) and onnx.helper (a dynamic sequence, a scalar input, an operator nobody implements).
"""

import os
import shutil
import time

import numpy as np
import onnx
import pytest
import torch
from onnx import TensorProto, helper
from torch import nn

from console.run.runner import WorkerRun
from engines import catalog, onnx_export
from engines.backends.onnxruntime_config import OrtOptions
from engines.spec import RunLimits, RunSpec
from engines.worker import run_spec

# Small sizes with the real layouts, so every catalog model exports and runs in a few seconds.
SMALL = {
    "mlp": {"in_features": 64, "hidden": 128, "layers": 2, "out_features": 10},
    "cnn": {"image_size": 32, "width": 8, "classes": 10},
    "resnet18": {"image_size": 32, "width": 8, "classes": 10},
    "resnet50": {"image_size": 32, "width": 8, "classes": 10},
    "bert": {"layers": 2, "hidden": 64, "heads": 2, "seq_len": 16, "vocab": 500},
    "gpt": {"layers": 2, "hidden": 64, "heads": 2, "vocab": 500, "max_seq": 64},
}


@pytest.fixture(scope="module")
def cache_root(tmp_path_factory):
    return tmp_path_factory.mktemp("labconsole-cache")


@pytest.fixture(autouse=True)
def _cache(cache_root, monkeypatch):
    monkeypatch.setenv("LABCONSOLE_CACHE", str(cache_root))  # spawned workers inherit it too


def small(name):
    known = catalog.get(name).params
    return {k: v for k, v in SMALL.get(name, {}).items() if k in known}


def spec(model="mlp", **kwargs):
    kwargs.setdefault("duration_s", 0.3)
    kwargs.setdefault("warmup_s", 0.05)
    if not str(model).endswith(".onnx"):
        kwargs.setdefault("model_params", small(model))
    if "ort" in kwargs:
        kwargs["engine_options"] = {"onnxruntime": kwargs.pop("ort")}
    return RunSpec(model=str(model), engine="onnxruntime", **kwargs)


def run(run_spec_obj):
    events = []
    run_spec(run_spec_obj.to_dict(), events.append)
    by_type = {}
    for event in events:
        by_type.setdefault(event["type"], event)
    return events, by_type


def completed(run_spec_obj):
    events, by_type = run(run_spec_obj)
    assert "error" not in by_type, by_type.get("error", {}).get("message")
    assert by_type["result"]["iterations"] > 0
    return by_type["loaded"], by_type["result"]


def load_error(run_spec_obj):
    events, by_type = run(run_spec_obj)
    assert "result" not in by_type, "expected the load to fail"
    error = by_type["error"]
    assert error["kind"] == "load"
    return error["message"]


# ---- model files made by the tests
class Small(nn.Module):
    def __init__(self, features=64):
        super().__init__()
        torch.manual_seed(0)
        self.fc1 = nn.Linear(features, 256)
        self.fc2 = nn.Linear(256, 4)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))


def _helper_model(path, nodes, inputs, outputs, opsets=(("", 18),)):
    graph = helper.make_graph(nodes, "g", inputs, outputs)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid(d, v) for d, v in opsets])
    model.ir_version = 9
    onnx.save(model, str(path))
    return path


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    root = tmp_path_factory.mktemp("onnx_files")
    model = Small().eval()
    example = (torch.randn(2, 64),)
    batch = torch.export.Dim("batch")
    torch.onnx.export(model, example, str(root / "small.onnx"), dynamo=True, external_data=False,
                      input_names=["x"], dynamic_shapes=({0: batch},), verbose=False)
    (root / "ext").mkdir()
    torch.onnx.export(model, example, str(root / "ext" / "ext.onnx"), dynamo=True, external_data=True,
                      input_names=["x"], dynamic_shapes=({0: batch},), verbose=False)
    f = TensorProto.FLOAT
    _helper_model(root / "seq.onnx", [helper.make_node("Relu", ["x"], ["y"])],
                  [helper.make_tensor_value_info("x", f, ["batch", "seq", 4])],
                  [helper.make_tensor_value_info("y", f, ["batch", "seq", 4])])
    _helper_model(root / "scalar.onnx", [helper.make_node("Mul", ["x", "gain"], ["y"])],
                  [helper.make_tensor_value_info("x", f, ["batch", 4]), helper.make_tensor_value_info("gain", f, [])],
                  [helper.make_tensor_value_info("y", f, ["batch", 4])])
    _helper_model(root / "madeup.onnx", [helper.make_node("Frobnicate", ["x"], ["y"], domain="lab.madeup", name="frob")],
                  [helper.make_tensor_value_info("x", f, ["batch", 4])],
                  [helper.make_tensor_value_info("y", f, ["batch", 4])], opsets=(("", 18), ("lab.madeup", 1)))
    return {"root": root, "small": root / "small.onnx", "ext": root / "ext" / "ext.onnx", "seq": root / "seq.onnx",
            "scalar": root / "scalar.onnx", "madeup": root / "madeup.onnx", "model": model}


# ---- catalog models
@pytest.mark.parametrize("precision", ["fp32", "int8"])
@pytest.mark.parametrize("name", [n for n in catalog.names() if catalog.get(n).task != catalog.SYNTHETIC])
def test_catalog_model_runs_on_onnxruntime(name, precision):
    loaded, result = completed(spec(name, precision=precision, batch=2 if name == "bert" else 1))
    details = loaded["details"]
    check = details["export"]["check"]
    assert check["passed"] and check["max_abs_diff"] <= check["tolerance"]["atol"] + 1e-2
    assert check["batches"] == [2, 1] and check["outputs"] >= 1
    assert details["providers_used"] == ["CPUExecutionProvider"] and details["precision"] == precision
    names = [i["name"] for i in onnx_export.input_layout(name, catalog.params_for(name, small(name))
                                                         if hasattr(catalog, "params_for") else small(name))]
    assert [i["name"] for i in details["inputs"]] == names
    assert loaded["params"] > 0 and loaded["model_bytes"] > 0
    if precision == "int8":
        assert details["quantization"]["weight_type"] == "QInt8"
        assert loaded["model_bytes"] < loaded["params"] * 4  # int8 weights (plus fp32 biases / scales)
    assert result["batch"] == (2 if name == "bert" else 1)


def test_export_is_cached_and_reused(cache_root):
    first_path, first = onnx_export.export_catalog(spec("mlp", model_params={**small("mlp"), "layers": 3}))
    started = time.perf_counter()
    again_path, again = onnx_export.export_catalog(spec("mlp", model_params={**small("mlp"), "layers": 3}))
    assert again_path == first_path and again["cached"] and time.perf_counter() - started < 1.0
    assert again["onnx_sha256"] == first["onnx_sha256"] and again["max_abs_diff"] == first["max_abs_diff"]
    assert first_path.parent == cache_root / "onnx" and first_path.name.startswith("mlp-fp32-")
    # one self-contained file, dynamic batch, input names from the catalog; nothing half-written left behind
    model = onnx.load(str(first_path), load_external_data=False)
    assert all(t.data_location != TensorProto.EXTERNAL for t in model.graph.initializer)
    dims = model.graph.input[0].type.tensor_type.shape.dim
    assert dims[0].dim_param == "batch"
    assert not [p for p in first_path.parent.iterdir() if p.name.endswith(".tmp") or ".tmp." in p.name]
    # other parameters or opset → another file
    other_path, _ = onnx_export.export_catalog(spec("mlp", model_params={**small("mlp"), "layers": 1}))
    assert other_path != first_path
    # a damaged cache file is noticed (sha256 differs from its check) and exported again
    first_path.write_bytes(first_path.read_bytes()[:100])
    redone_path, redone = onnx_export.export_catalog(spec("mlp", model_params={**small("mlp"), "layers": 3}))
    assert redone_path == first_path and not redone["cached"] and redone["passed"]


def test_text_models_get_a_dynamic_sequence_axis():
    path, _ = onnx_export.export_catalog(spec("bert"))
    model = onnx.load(str(path), load_external_data=False)
    for value in model.graph.input:
        dims = [d.dim_param or d.dim_value for d in value.type.tensor_type.shape.dim]
        assert dims[0] == "batch" and isinstance(dims[1], str)


def test_decoder_generates_the_same_tokens_on_both_engines():
    """gpt on ONNX Runtime: prefill on the forward export, decode steps on a second (decode) export; greedy
    decoding of the same prompt must give the tokens PyTorch gives."""
    common = dict(scenario="generate", batch=2, duration_s=0.3, warmup_s=0.05, model_params=small("gpt"))
    torch_events, torch_by_type = run(RunSpec(model="gpt", engine="torch", **common))
    loaded, result = completed(spec("gpt", **common))
    assert torch_by_type["result"]["tokens_sample"] == result["tokens_sample"]
    decode = loaded["details"]["decode_export"]
    assert decode["check"]["passed"] and decode["check"]["input_names"] == ["input_ids", "past_key_values"]
    assert result["ttft_ms_p50"] > 0 and result["tpot_ms_p50"] > 0


def test_a_failed_check_is_an_error_with_the_numbers(monkeypatch, cache_root):
    original = onnx_export.compare
    monkeypatch.setattr(onnx_export, "compare",
                        lambda got, expected, **tol: original(got, [e + 0.5 for e in expected], **tol))
    message = load_error(spec("mlp", model_params={**small("mlp"), "hidden": 96}))
    assert "ONNX export of mlp does not match PyTorch" in message and "max |diff| 0.5" in message
    assert "tolerance atol 0.0001 + rtol 0.001" in message
    assert not list((cache_root / "onnx").glob("*.tmp*")), "a failed export must leave no file behind"


# ---- user files
def test_user_onnx_with_dynamic_batch(files):
    loaded, result = completed(spec(files["small"], batch=3))
    details = loaded["details"]
    assert details["inputs"] == [{"name": "x", "dtype": "float32", "shape": [3, 64], "declared": ["batch", 64]}]
    from engines.model_files import sha256

    assert details["model_file"]["sha256"] == sha256(files["small"])
    assert loaded["params"] == 64 * 256 + 256 + 256 * 4 + 4
    assert result["batch"] == 3


def test_user_onnx_with_external_data(files):
    data = files["ext"].parent / "ext.onnx.data"
    assert data.is_file(), "torch.onnx.export(external_data=True) should write ext.onnx.data"
    loaded, _ = completed(spec(files["ext"]))
    assert loaded["details"]["model_file"]["external_data"] == ["ext.onnx.data"]
    assert loaded["model_bytes"] == (64 * 256 + 256 + 256 * 4 + 4) * 4


def test_user_onnx_int8(files):
    loaded, _ = completed(spec(files["small"], precision="int8"))
    assert loaded["details"]["quantization"]["source"] == str(files["small"])
    assert loaded["model_bytes"] < (64 * 256 + 256 * 4) * 4 / 2


def test_dynamic_dims_from_inputs_and_scalars_from_values(files):
    loaded, _ = completed(spec(files["seq"], inputs={"x": [2, 7, 4]}))
    assert loaded["details"]["inputs"][0]["shape"] == [2, 7, 4]
    loaded, _ = completed(spec(files["scalar"], batch=2, input_values={"gain": 3.5}))
    shapes = {i["name"]: i["shape"] for i in loaded["details"]["inputs"]}
    assert shapes == {"x": [2, 4], "gain": []}


def test_fallback_is_refused_unless_allowed(files, monkeypatch):
    """Ask for CUDA where ORT 'has' it but cannot start it: ORT silently runs on the CPU; we do not."""
    import onnxruntime

    real = onnxruntime.get_available_providers
    monkeypatch.setattr(onnxruntime, "get_available_providers", lambda: ["CUDAExecutionProvider", *real()])
    message = load_error(spec(files["small"], target="cuda:0"))
    assert "CUDAExecutionProvider was requested but ONNX Runtime fell back to CPUExecutionProvider" in message
    assert "--allow-fallback" in message
    loaded, _ = completed(spec(files["small"], target="cuda:0", ort=OrtOptions(allow_fallback=True)))
    details = loaded["details"]
    assert details["fallback"] is True and details["providers_used"] == ["CPUExecutionProvider"]
    assert details["provider_requested"] == "CUDAExecutionProvider" and details["provider_options"] == {
        "device_id": "0"}


def test_session_options_are_applied_and_recorded(files):
    loaded, _ = completed(spec(files["small"], threads=1, ort=OrtOptions(
        graph_optimization="basic", inter_op_threads=1, execution_mode="parallel")))
    details = loaded["details"]
    assert details["intra_op_threads"] == 1 and details["inter_op_threads"] == 1
    assert details["graph_optimization"] == "basic" and details["execution_mode"] == "parallel"


# ---- bad input: each a load error naming the file or field and the fix
def _bad_file(files, name, data):
    path = files["root"] / name
    path.write_bytes(data)
    return path


def _missing_data(files):
    lonely = files["root"] / "lonely"
    lonely.mkdir(exist_ok=True)
    shutil.copy(files["ext"], lonely / "ext.onnx")
    return lonely / "ext.onnx"


def _torch_archive_named_onnx(files):
    path = files["root"] / "script_named.onnx"
    torch.jit.script(files["model"]).save(str(path))
    return path


BAD = {
    "empty file": (lambda f: spec(_bad_file(f, "empty.onnx", b"")), ["empty.onnx is empty (0 bytes)"]),
    "truncated onnx": (lambda f: spec(_bad_file(f, "cut.onnx", f["small"].read_bytes()[:3000])),
                       ["cut.onnx is not a readable ONNX model", "truncated", "export it again"]),
    "random bytes onnx": (lambda f: spec(_bad_file(f, "noise.onnx", np.random.default_rng(7).integers(
        0, 256, 5000, dtype=np.uint8).tobytes())), ["noise.onnx is not a readable ONNX model"]),
    "torch archive named .onnx": (lambda f: spec(_torch_archive_named_onnx(f)),
                                  ["script_named.onnx is a PyTorch archive (zip), not an ONNX model", "--engine torch"]),
    "missing external data": (lambda f: spec(_missing_data(f)),
                              ["external data file 'ext.onnx.data'", "missing", "keep the .onnx and its data file"]),
    "wrong rank": (lambda f: spec(f["small"], inputs={"x": [1, 64, 2]}),
                   ["input 'x'", "rank 3 instead of 2", "[batch, 64]", "--input x=1x64"]),
    "wrong fixed dim": (lambda f: spec(f["small"], inputs={"x": [1, 65]}), ["dim 1 must be 64, got 65"]),
    "unknown input name": (lambda f: spec(f["small"], inputs={"y": [1, 64]}), ["no input 'y'; its inputs are x"]),
    "missing dynamic dim": (lambda f: spec(f["seq"]),
                            ["input 'x' has dynamic dims ['seq']", "--input x=1x128x4"]),
    "missing scalar value": (lambda f: spec(f["scalar"]),
                             ["input 'gain' is a scalar", "--input-value gain="]),
    "provider not installed": (lambda f: spec(f["small"], target="cuda:0"),
                               ["CUDAExecutionProvider is not installed", "installed: ", "CPUExecutionProvider",
                                "pip install onnxruntime-gpu"]),
    "provider not installed (asked by name)": (
        lambda f: spec(f["small"], ort=OrtOptions(provider="TensorrtExecutionProvider")),
        ["TensorrtExecutionProvider is not installed"]),
    "fp16 on the CPU provider": (lambda f: spec("mlp", precision="fp16"),
                                 ["fp16 needs a GPU execution provider", "use fp32 or int8"]),
    "bf16": (lambda f: spec(f["small"], precision="bf16"), ["bf16 is not offered on ONNX Runtime", "use fp32 or int8"]),
    "operator ORT lacks": (lambda f: spec(f["madeup"]),
                           ["has no implementation for operator lab.madeup::Frobnicate", "node 'frob'",
                            "register_custom_ops_library"]),
}


@pytest.mark.parametrize("case", list(BAD))
def test_bad_input_is_a_clear_load_error(files, case):
    make, expected = BAD[case]
    message = load_error(make(files))
    for fragment in expected:
        assert fragment in message, f"{fragment!r} not in {message!r}"
    assert message.startswith("could not load ")


# ---- a real spawned worker
def _worker(run_spec_obj, timeout=120):
    events = []
    worker = WorkerRun(run_spec_obj, events.append, lambda outcome: None)
    worker.start()
    outcome = worker.wait(timeout)
    assert outcome is not None
    return outcome, events


def test_spawned_worker_runs_onnxruntime():
    outcome, events = _worker(spec("mlp", duration_s=0.5, limits=RunLimits(load_timeout_s=120)))
    assert outcome.status == "completed", outcome.message
    loaded = next(e for e in events if e["type"] == "loaded")
    assert loaded["versions"]["onnxruntime"] and loaded["details"]["export"]["check"]["passed"]
    assert sum(len(e["latency_ns"]) for e in events if e["type"] == "latencies") == outcome.result["iterations"]


def test_spawned_worker_reports_a_bad_file(files):
    path = _bad_file(files, "worker_noise.onnx", os.urandom(2048))
    outcome, _ = _worker(spec(path))
    assert outcome.status == "failed" and outcome.error["kind"] == "load"
    assert "worker_noise.onnx is not a readable ONNX model" in outcome.message
    assert "during model loading" in outcome.message
