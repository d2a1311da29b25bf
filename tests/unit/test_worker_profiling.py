"""The worker's profiling phase on a fake engine: after the measurement, never inside it, and never fatal."""

import os
import types

import pytest

from engines import profiling, worker
from engines.backends.base import LoadedModel

SPEC = {"model": "mlp", "iterations": 5, "warmup_s": 0.0}


def fake_engine(monkeypatch, profile):
    model = LoadedModel(infer=lambda: None, load_s=0.0, params=1, model_bytes=4, profile=profile)
    monkeypatch.setattr(worker.backends, "module", lambda name: types.SimpleNamespace(load=lambda spec: model))


def run(spec, cancelled=lambda: False):
    events = []
    worker.run_spec({**SPEC, **spec}, events.append, cancelled)
    return events


def canned_profile(iterations, trace_path):
    with open(trace_path, "w", encoding="utf-8") as handle:
        handle.write('{"traceEvents": []}')
    calls = [{"op": "aten::linear", "time_s": 2e-3, "flops": 4e6, "bytes": 1e5, "shapes": [[1, 8]]}]
    return profiling.profile_event("torch", iterations, 3e-3, profiling.aggregate(calls), trace_path, ["canned"])


def test_the_profile_comes_after_the_measurement_in_its_own_phase(monkeypatch):
    fake_engine(monkeypatch, canned_profile)
    events = run({"profile_iterations": 3})
    kinds = [e["phase"] if e["type"] == "phase" else e["type"] for e in events if e["type"] != "latencies"]
    assert kinds[-4:] == ["profiling", "profile", "finishing", "result"]
    assert kinds.index("measuring") < kinds.index("profiling")
    profile = next(e for e in events if e["type"] == "profile")
    assert profile["iterations"] == 3 and profile["ops"][0]["op"] == "aten::linear"
    assert profile["op_time_s"] == pytest.approx(2e-3)
    assert os.path.isfile(profile["trace_path"])  # the console moves it; here nobody does
    os.unlink(profile["trace_path"])
    # Counters: read by engines.counters.measure where the build has it, else None with the reason.
    assert profile["counters"] is not None or any("counters" in note for note in profile["notes"])
    result = next(e for e in events if e["type"] == "result")
    assert result["iterations"] == 5  # the timed measurement is the scenario's alone


def test_without_profile_iterations_there_is_no_profiling_phase(monkeypatch):
    fake_engine(monkeypatch, canned_profile)
    events = run({})
    assert not any(e["type"] == "profile" or e.get("phase") == "profiling" for e in events)


def test_an_engine_without_a_profiler_says_so_and_the_run_completes(monkeypatch):
    fake_engine(monkeypatch, None)
    events = run({"profile_iterations": 3})
    profile = next(e for e in events if e["type"] == "profile")
    assert profile["ops"] == [] and profile["trace_path"] is None
    assert "has no profiler hook" in profile["notes"][0]
    assert events[-1]["type"] == "result"


def test_a_failing_profiler_leaves_the_measured_run_intact_and_no_file_behind(monkeypatch):
    written = []

    def broken(iterations, trace_path):
        written.append(trace_path)
        raise RuntimeError("kineto is not available")

    fake_engine(monkeypatch, broken)
    events = run({"profile_iterations": 3})
    profile = next(e for e in events if e["type"] == "profile")
    assert "profiling failed (RuntimeError: kineto is not available)" in profile["notes"][0]
    assert profile["ops"] == [] and profile["trace_path"] is None
    assert not os.path.exists(written[0])
    assert events[-1]["type"] == "result" and events[-1]["iterations"] == 5


def test_a_cancelled_run_is_not_profiled(monkeypatch):
    fake_engine(monkeypatch, canned_profile)
    events = run({"profile_iterations": 3, "iterations": None, "duration_s": 60}, cancelled=lambda: True)
    assert not any(e["type"] == "profile" for e in events)
    assert events[-1]["type"] == "result" and events[-1]["cancelled"] is True
