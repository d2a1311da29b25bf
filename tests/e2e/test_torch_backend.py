"""The PyTorch backend end to end: every catalog model × precision × mode on this CPU, options, generate, errors.

Runs go through `engines.worker.run_spec` in-process (the same code a worker runs, minus the spawn), one
through a real spawned worker. Sizes are tiny; the structure (depth, attention, cache) is the real one.
"""


import pytest

from engines import protocol
from engines.worker import run_spec

SMALL = {
    "mlp": {"in_features": 16, "hidden": 32},
    "resnet18": {"image_size": 32, "width": 8, "classes": 10},
    "resnet50": {"image_size": 32, "width": 8, "classes": 10},
    "bert": {"layers": 2, "hidden": 32, "heads": 2, "seq_len": 16, "vocab": 128},
    "gpt": {"layers": 2, "hidden": 32, "heads": 2, "vocab": 128, "max_seq": 64},
}
TINY_GENERATION = {"prompt_tokens": 8, "output_tokens": 6}


def run(**spec):
    data = {"iterations": 3, "warmup_s": 0, "batch": 2, **spec}
    if data.get("model") in SMALL and "model_params" not in data:
        data["model_params"] = SMALL[data["model"]]
    if data.get("model") == "gpt":
        data.setdefault("generation", TINY_GENERATION)
    if "torch" in data:  # the PyTorch backend's own options
        data["engine_options"] = {"torch": data.pop("torch")}
    events = []
    run_spec(data, events.append)
    for event in events:
        protocol.check(event)
    by_type = {}
    for event in events:
        by_type.setdefault(event["type"], []).append(event)
    return events[-1], by_type


def error_of(**spec) -> str:
    last, _ = run(**spec)
    assert last["type"] == "error", last
    return last["message"]


def fp16_supported_here() -> bool:
    import torch
    from torch.nn import functional as F

    try:
        F.conv2d(torch.ones(1, 2, 5, 5, dtype=torch.float16), torch.ones(2, 2, 3, 3, dtype=torch.float16))
        F.linear(torch.ones(2, 4, dtype=torch.float16), torch.ones(3, 4, dtype=torch.float16))
    except (RuntimeError, NotImplementedError):
        return False
    return True


# ---- every model × precision × mode
@pytest.mark.parametrize("mode", ["inference", "training"])
@pytest.mark.parametrize("precision", ["fp32", "bf16", "fp16", "int8"])
@pytest.mark.parametrize("model", list(SMALL))
def test_every_catalog_model_runs_in_every_precision_and_mode_this_cpu_allows(model, precision, mode):
    last, events = run(model=model, precision=precision, mode=mode)
    if mode == "training" and precision == "int8":
        assert last["type"] == "error" and "int8 training is not supported" in last["message"]
        return
    if mode == "training" and precision == "fp16":
        assert last["type"] == "error" and "fp16 training on cpu is refused" in last["message"]
        assert "train in bf16 (autocast) or fp32" in last["message"]
        return
    if precision == "fp16" and not fp16_supported_here():
        assert last["type"] == "error" and "has no Half kernel in this PyTorch" in last["message"]
        return
    assert last["type"] == "result", last.get("message")
    assert last["iterations"] == 3 and last["batch"] == 2
    assert sum(len(e["latency_ns"]) for e in events["latencies"]) == 3
    details = events["loaded"][0]["details"]
    assert details["precision"] == precision and details["mode"] == mode and details["device"] == "cpu"
    assert details["model_params"]["hidden" if "hidden" in SMALL[model] else "width"] in (32, 8)
    assert details["inputs"][0]["shape"][0] == 2
    if mode == "training":
        assert details["peak_memory_bytes"] > 10_000_000
        assert details["peak_memory_method"].startswith("process peak RSS (ru_maxrss)")
        assert details["optimizer"].startswith("AdamW" if model in ("bert", "gpt") else "SGD with momentum")
        assert details["first_step_ms"] > 0
        if precision == "bf16":
            assert details["dtype"] == "bfloat16 (autocast), float32 master weights"
    elif precision == "int8":
        assert details["quantization"]["quantized_modules"] >= 1
        assert "only nn.Linear" in details["quantization"]["note"]
    else:
        expected = {"fp32": "float32", "bf16": "bfloat16", "fp16": "float16"}[precision]
        assert details["dtype"] == expected
        floating = [i for i in details["inputs"] if i["dtype"].startswith(("float", "bfloat"))]
        assert all(i["dtype"] == expected for i in floating)


# ---- options
@pytest.fixture
def restore_threads():
    import torch

    threads = torch.get_num_threads()
    yield
    torch.set_num_threads(threads)  # runs share this process: leave the thread count as found


def test_channels_last_and_threads_on_a_resnet(restore_threads):
    last, events = run(model="resnet50", torch={"channels_last": True}, threads=1, precision="bf16")
    assert last["type"] == "result", last.get("message")
    details = events["loaded"][0]["details"]
    assert details["channels_last"] is True and details["threads"] == 1


def test_compile_on_a_tiny_mlp_is_timed_apart_or_fails_clearly():
    last, events = run(model="mlp", torch={"compile": "default"}, iterations=5)
    if last["type"] == "error":  # no working C++ toolchain: the message must say so and how to go on
        assert "torch.compile (mode default) failed on cpu" in last["message"]
        assert "Run without --compile" in last["message"]
        return
    details = events["loaded"][0]["details"]
    assert details["compile"] == "default" and details["compile_s"] > 0
    assert last["iterations"] == 5


def test_a_compile_failure_is_reported_with_the_fix(monkeypatch):
    import torch

    def broken(*args, **kwargs):
        def call(*a, **k):
            raise RuntimeError("InvalidCxxCompiler: No working C++ compiler found in torch._inductor.config.cpp.cxx")
        return call

    monkeypatch.setattr(torch, "compile", broken)
    message = error_of(model="mlp", torch={"compile": "max-autotune"})
    assert "torch.compile (mode max-autotune) failed on cpu: RuntimeError: InvalidCxxCompiler" in message
    assert "needs a working C++ compiler (gcc or clang)" in message and "Run without --compile" in message


# ---- generate
def test_generate_reports_ttft_and_tpot_and_streams_decode_latencies():
    last, events = run(model="gpt", scenario="generate", iterations=4, batch=1)
    assert last["type"] == "result", last.get("message")
    assert last["requests"] == 4 and last["prompt_tokens"] == 8 and last["output_tokens"] == 6
    assert len(last["ttft_ms"]) == len(last["tpot_ms"]) == 4
    assert all(t > 0 for t in last["ttft_ms"] + last["tpot_ms"])
    assert last["iterations"] == 4 * 5  # decode steps: output_tokens - 1 per request
    assert sum(len(e["latency_ns"]) for e in events["latencies"]) == last["iterations"]
    assert last["tokens"] == 4 * 6 and last["output_tokens_per_s"] > 0
    assert last["first_inference_ms"] > 0 and last["ttft_ms_p50"] > 0 and last["tpot_ms_p50"] > 0
    assert len(last["tokens_sample"]) == 6
    again, _ = run(model="gpt", scenario="generate", iterations=1, batch=1)
    assert again["tokens_sample"] == last["tokens_sample"]  # greedy on fixed weights: same tokens every run


def test_generate_token_by_token_matches_the_full_sequence():
    """The backend's cached decode picks exactly the tokens a full, uncached pass would."""
    import torch

    from engines.backends import torch_backend
    from engines.spec import RunSpec

    spec = RunSpec.from_dict({"model": "gpt", "model_params": SMALL["gpt"], "scenario": "generate",
                              "generation": TINY_GENERATION}).validate()
    loaded = torch_backend.load(spec)
    gen = loaded.generator
    state = gen.prefill()
    for _ in range(gen.output_tokens - 1):
        state = gen.decode_step(state)
    tokens = gen.tokens(state)[0]
    from engines.catalog import gpt

    params = {**spec.to_dict()["model_params"]}
    model = gpt.build({**gpt.catalog.params_for("gpt", params)})
    ids = gpt.example_inputs(1, gpt.catalog.params_for("gpt", params), TINY_GENERATION)[0]
    with torch.no_grad():
        for _ in range(gen.output_tokens):
            ids = torch.cat((ids, gpt.greedy(model(ids)[0])), dim=1)
    assert tokens == ids[0, -gen.output_tokens:].tolist()


def test_generate_through_a_spawned_worker():
    from console.run.runner import WorkerRun
    from engines.spec import RunSpec

    spec = RunSpec.from_dict({"model": "gpt", "model_params": SMALL["gpt"], "scenario": "generate",
                              "generation": TINY_GENERATION, "duration_s": 0.3, "warmup_s": 0.1})
    events = []
    worker = WorkerRun(spec, events.append, lambda outcome: None)
    worker.start()
    outcome = worker.wait(120)
    assert outcome is not None and outcome.status == "completed", outcome and outcome.message
    result = outcome.result
    assert result["requests"] >= 1 and len(result["ttft_ms"]) == result["requests"]
    loaded = next(e for e in events if e["type"] == "loaded")
    assert loaded["details"]["model_params"]["max_seq"] == 64


# ---- bad input: clear errors naming the setting and the fix
def test_cuda_on_a_cpu_only_build_says_so():
    import torch

    if torch.version.cuda is not None:
        pytest.skip("this PyTorch has CUDA")
    message = error_of(model="mlp", target="cuda:0")
    assert ("cuda:0 is not available: this PyTorch is a CPU-only build — pick --target cpu or install a CUDA "
            "build of PyTorch") in message


def test_mps_unavailable_says_why():
    import torch

    if torch.backends.mps.is_available():
        pytest.skip("this machine has MPS")
    assert "mps is not available" in error_of(model="mlp", target="mps")


def test_int8_on_a_gpu_is_refused(monkeypatch):

    from engines.backends import torch_backend
    from engines.spec import RunSpec

    monkeypatch.setattr(torch_backend, "resolve_device", lambda torch_module, target: torch_module.device(target))
    spec = RunSpec.from_dict({"model": "mlp", "target": "cuda:0", "precision": "int8"}).validate()
    with pytest.raises(torch_backend.UnsupportedConfig, match=r"int8 on cuda:0: dynamic quantization .* runs on CPU "
                                                               r"only; use --target cpu for int8"):
        torch_backend.load(spec)


def test_fp16_training_off_cuda_is_refused_also_on_mps(monkeypatch):

    from engines.backends import torch_backend
    from engines.spec import RunSpec

    monkeypatch.setattr(torch_backend, "resolve_device", lambda torch_module, target: torch_module.device(target))
    spec = RunSpec.from_dict({"model": "mlp", "target": "mps", "precision": "fp16", "mode": "training"}).validate()
    with pytest.raises(torch_backend.UnsupportedConfig, match="fp16 training on mps is refused"):
        torch_backend.load(spec)


def test_channels_last_on_a_model_without_image_input():
    message = error_of(model="bert", torch={"channels_last": True})
    assert "channels_last: bert has no 4-D (image) input" in message and "turn it off" in message


def test_a_missing_half_kernel_is_named_before_the_run(monkeypatch):
    from engines.backends import torch_backend

    def no_half(torch, F, options):
        raise RuntimeError("\"slow_conv2d_cpu\" not implemented for 'Half'")

    monkeypatch.setitem(torch_backend._PROBES, "conv2d", no_half)
    message = error_of(model="resnet18", precision="fp16")
    assert "fp16 on cpu: conv2d has no Half kernel in this PyTorch" in message and "use bf16 or fp32" in message


def test_generate_on_a_model_that_is_not_a_decoder():
    message = error_of(model="bert", scenario="generate")
    assert "scenario generate needs a decoder model (gpt); bert is not one" in message


def test_generate_past_the_position_table_and_with_one_output_token():
    message = error_of(model="gpt", scenario="generate", generation={"prompt_tokens": 60, "output_tokens": 8})
    assert "prompt_tokens (60) + output_tokens (8) = 68 exceeds max_seq (64); raise model_params.max_seq" in message
    message = error_of(model="gpt", scenario="generate", generation={"prompt_tokens": 8, "output_tokens": 1})
    assert "needs generation.output_tokens ≥ 2" in message


def test_generate_in_training_mode_is_refused():
    assert "scenario generate measures inference" in error_of(model="gpt", scenario="generate", mode="training")


def test_bad_model_size_names_the_parameters():
    message = error_of(model="gpt", model_params={**SMALL["gpt"], "hidden": 30, "heads": 4})
    assert "gpt: hidden (30) must be a multiple of heads (4)" in message


def test_training_step_failure_says_it_was_the_training_step():
    # BatchNorm cannot train on one value per channel: batch 1 with a 1×1 last feature map.
    message = error_of(model="resnet18", mode="training", batch=1)
    assert "the first training step of resnet18 failed" in message and "Expected more than 1 value" in message


# ---- model files: a real TorchScript file, loaded through engines.model_files
@pytest.fixture
def torchscript_file(tmp_path):
    import hashlib

    import torch

    model = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.Flatten(), torch.nn.Linear(4 * 6 * 6, 2)).eval()
    path = tmp_path / "model.pt"
    torch.jit.trace(model, torch.randn(1, 3, 8, 8)).save(str(path))
    return str(path), hashlib.sha256(path.read_bytes()).hexdigest()


def test_a_model_file_runs_with_its_info_in_the_details(torchscript_file):
    path, digest = torchscript_file
    last, events = run(model=path, inputs={"input": [2, 3, 8, 8]}, torch={"channels_last": True}, trust_code=True)
    assert last["type"] == "result", last.get("message")
    details = events["loaded"][0]["details"]
    assert details["file"]["sha256"] == digest and details["inputs"][0]["name"] == "input"
    assert details["channels_last"] is True and events["loaded"][0]["params"] > 0


def test_a_model_file_is_not_cast_to_another_precision(torchscript_file):
    path, _ = torchscript_file
    message = error_of(model=path, precision="bf16", inputs={"input": [2, 3, 8, 8]}, trust_code=True)
    assert "model.pt computes in float32, not bfloat16: run it with --precision fp32" in message
    assert "int8 (dynamic quantization) applies to catalog models" in error_of(model=path, precision="int8",
                                                                               inputs={"input": [2, 3, 8, 8]},
                                                                               trust_code=True)
