"""Target discovery with fakes for what this machine lacks (NVML), and the per-host cache."""

import sys
import types

import pytest

from console.machine import targets as console_targets
from engines import targets


def fake_pynvml(power_limit_mw=300_000, fail_init=None, power_not_supported=False):
    module = types.ModuleType("pynvml")

    class NVMLError(Exception):
        pass

    def init():
        if fail_init:
            raise NVMLError(fail_init)

    def power(handle):
        if power_not_supported:
            raise NVMLError("Not Supported")
        return power_limit_mw

    module.NVMLError = NVMLError
    module.nvmlInit = init
    module.nvmlShutdown = lambda: None
    module.nvmlSystemGetDriverVersion = lambda: b"550.54.15"
    module.nvmlDeviceGetCount = lambda: 2
    module.nvmlDeviceGetHandleByIndex = lambda i: i
    module.nvmlDeviceGetName = lambda h: f"NVIDIA H100 #{h}"
    module.nvmlDeviceGetMemoryInfo = lambda h: types.SimpleNamespace(total=80 * 2**30)
    module.nvmlDeviceGetEnforcedPowerLimit = power
    return module


def test_cpu_target_lists_engines_precisions_isa_and_memory():
    cpu = next(t for t in targets.discover() if t["id"] == "cpu")
    assert cpu["available"] and cpu["cores"] >= 1 and cpu["memory_bytes"] > 0
    assert set(cpu["engines"]) == {"torch", "onnxruntime"}
    assert "int8" in cpu["engine_details"]["torch"]["precisions"]
    ort = cpu["engine_details"]["onnxruntime"]
    assert "CPUExecutionProvider" in ort["providers"] and "fp16" not in ort["precisions"]
    assert "OpenVINOExecutionProvider" in ort["providers_missing"]
    assert all(isinstance(f, str) for f in cpu["isa"])


def test_gpus_without_a_usable_engine_say_why(monkeypatch):
    monkeypatch.setitem(sys.modules, "pynvml", fake_pynvml(fail_init="NVML Shared Library Not Found"))
    cuda = next(t for t in targets.discover() if t["id"].startswith("cuda"))
    assert not cuda["available"]
    assert "CPU-only build" in cuda["reason"] and "NVML Shared Library Not Found" in cuda["reason"]


def test_nvml_boards_give_driver_and_power_limit_even_for_a_cpu_build_of_torch(monkeypatch):
    monkeypatch.setitem(sys.modules, "pynvml", fake_pynvml())
    found = [t for t in targets.discover() if t["id"].startswith("cuda")]
    assert [t["id"] for t in found] == ["cuda:0", "cuda:1"]
    assert found[1]["name"] == "NVIDIA H100 #1" and found[1]["driver"] == "550.54.15"
    assert found[0]["power_limit_w"] == pytest.approx(300.0)
    # This PyTorch is a CPU build and onnxruntime has no CUDA provider: listed, not usable, with reasons.
    assert not found[0]["available"]
    assert "CPU-only build" in found[0]["reason"] and "onnxruntime-gpu" in found[0]["reason"]


def test_a_power_limit_that_is_not_supported_is_none_not_zero(monkeypatch):
    monkeypatch.setitem(sys.modules, "pynvml", fake_pynvml(power_not_supported=True))
    found = [t for t in targets.discover() if t["id"].startswith("cuda")]
    assert found[0]["power_limit_w"] is None


def test_cache_answers_without_a_worker_until_refresh(monkeypatch):
    calls = []

    def fake_worker(timeout_s):
        calls.append(timeout_s)
        return [{"id": "cpu", "name": f"call {len(calls)}", "available": True, "engines": ["torch"]}]

    monkeypatch.setattr(console_targets, "_discover_in_worker", fake_worker)
    first = console_targets.discover_targets()
    second = console_targets.discover_targets()
    assert len(calls) == 1 and second[0]["name"] == first[0]["name"] == "call 1"
    assert second[0]["cached_at"]
    assert console_targets.discover_targets(refresh=True)[0]["name"] == "call 2"


def test_a_changed_engine_version_invalidates_the_cache(monkeypatch):
    monkeypatch.setattr(console_targets, "_discover_in_worker",
                        lambda timeout_s: [{"id": "cpu", "name": "x", "available": True}])
    console_targets.discover_targets()
    key = console_targets._cache_key()
    assert console_targets._read_cache(key) is not None
    assert console_targets._read_cache({**key, "torch": "99.0"}) is None


def test_a_failed_discovery_still_offers_the_cpu_with_the_reason(monkeypatch):
    def boom(timeout_s):
        raise TimeoutError("worker took too long")

    monkeypatch.setattr(console_targets, "_discover_in_worker", boom)
    result = console_targets.discover_targets(refresh=True)
    assert result[0]["id"] == "cpu" and "worker took too long" in result[0]["note"]
    assert not console_targets.cache_path().exists()


def fake_cuda_torch(majors=(8, 7)):
    """A CUDA build of torch that sees one device per entry of `majors` (its compute capability's major)."""
    props = [types.SimpleNamespace(name=f"GPU {i}", total_memory=(i + 1) * 2**30, major=major, minor=0)
             for i, major in enumerate(majors)]
    cuda = types.SimpleNamespace(is_available=lambda: True, device_count=lambda: len(props),
                                 get_device_properties=lambda i: props[i])
    backends = types.SimpleNamespace(cuda=types.SimpleNamespace(is_built=lambda: True),
                                     mps=types.SimpleNamespace(is_available=lambda: False))
    return types.SimpleNamespace(__version__="9.9.9+cu999", cuda=cuda, backends=backends)


def test_the_torch_probe_lists_each_cuda_device_with_the_precisions_it_has(monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", fake_cuda_torch())
    monkeypatch.setitem(sys.modules, "pynvml", fake_pynvml(fail_init="NVML Shared Library Not Found"))
    found = {t["id"]: t for t in targets.discover()}
    ampere, turing = found["cuda:0"], found["cuda:1"]
    assert ampere["available"] and ampere["name"] == "GPU 0" and ampere["compute_capability"] == "8.0"
    assert ampere["memory_bytes"] == 2**30 and ampere["driver"] is None
    assert "bf16" in ampere["engine_details"]["torch"]["precisions"]
    assert "bf16" not in turing["engine_details"]["torch"]["precisions"]  # bf16 needs sm_80+
    assert ampere["engine_details"]["torch"]["version"] == "9.9.9+cu999"
    assert "torch" in ampere["engines"] and not found["mps"]["available"]
