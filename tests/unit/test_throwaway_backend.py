"""A backend is 2 files + 1 registration line: written here into a temporary package, registered, and then found by
target discovery (with its own targets and why-nots) and run by the worker — no target injected, nothing patched."""

from __future__ import annotations

import importlib
import sys
import textwrap

import pytest

from engines import backends, targets, worker

CONFIG = '''
"""The toy engine's options and capabilities."""
from dataclasses import dataclass

from engines.backends.info import BackendInfo
from engines.options import option


@dataclass
class ToyOptions:
    width: int = option(16, flag="--toy-width", maximum=64, label="Width", help="toyengine: the matrix width")


INFO = BackendInfo(name="toyengine", label="Toy Engine", module="toyplug.toy_backend", options=ToyOptions,
                   precisions={"cpu": ("fp32",), "cuda": ("fp32",)})
'''

BACKEND = '''
"""The toy engine: a numpy matrix product, on the CPU only."""
import time

from engines.backends.base import LoadedModel
from engines.backends.probe import ANY, Probe, unusable, usable


def probe(machine):
    return Probe(entries={"cpu": usable(["fp32"], version="0.1", notes={"fp32": f"{len(machine.cpu_flags)} flags"}),
                          ANY: unusable("the toy engine has CPU kernels only (run it with --target cpu)")},
                 absent={"toy:0": "no toy board found (plug one in)"})


def load(spec):
    import numpy as np

    start = time.perf_counter()
    width = spec.options_for("toyengine").width
    x, w = np.ones((spec.batch, width), dtype=np.float32), np.ones((width, width), dtype=np.float32)
    return LoadedModel(infer=lambda: x @ w, load_s=time.perf_counter() - start, params=w.size,
                       model_bytes=w.nbytes, versions={"toyengine": "0.1"})
'''


@pytest.fixture
def toy_backend(tmp_path, monkeypatch):
    package = tmp_path / "toyplug"
    package.mkdir()
    (package / "toy_config.py").write_text(textwrap.dedent(CONFIG))
    (package / "toy_backend.py").write_text(textwrap.dedent(BACKEND))
    monkeypatch.syspath_prepend(str(tmp_path))
    backends.register(importlib.import_module("toyplug.toy_config").INFO)  # the one registration line
    yield
    backends.unregister("toyengine")
    for name in [m for m in sys.modules if m == "toyplug" or m.startswith("toyplug.")]:
        del sys.modules[name]


def test_discovery_lists_the_new_engine_with_its_targets_and_why_nots(toy_backend):
    found = {t["id"]: t for t in targets.discover()}
    cpu = found["cpu"]["engine_details"]["toyengine"]
    assert "toyengine" in found["cpu"]["engines"]
    assert cpu["available"] and cpu["precisions"] == ["fp32"] and cpu["version"] == "0.1"
    assert cpu["notes"]["fp32"].endswith("flags")  # the probe was handed the machine's facts
    assert not found["toy:0"]["available"] and found["toy:0"]["reason"] == "no toy board found (plug one in)"
    assert found["cpu"]["engine_details"]["torch"]["available"]  # the built-in engines are still there


def test_on_gpus_the_new_engine_says_why_not(toy_backend, monkeypatch):
    from tests.unit.test_targets import fake_pynvml

    monkeypatch.setitem(sys.modules, "pynvml", fake_pynvml())  # two boards (hardware faked, not the discovery)
    found = {t["id"]: t for t in targets.discover()}
    gpu = found["cuda:1"]["engine_details"]["toyengine"]
    assert not gpu["available"] and gpu["reason"] == "the toy engine has CPU kernels only (run it with --target cpu)"
    assert "toyengine" not in found["cuda:1"]["engines"]
    assert "the toy engine has CPU kernels only" in found["cuda:0"]["reason"] or found["cuda:0"]["available"]
    assert "toy:0" in found


def test_the_worker_runs_a_tiny_model_on_the_new_engine(toy_backend):
    events = []
    worker.run_spec({"model": "mlp", "engine": "toyengine", "engine_options": {"toyengine": {"width": 8}},
                     "batch": 2, "iterations": 5, "warmup_s": 0.0}, events.append)
    assert events[-1]["type"] == "result", events[-1]
    loaded = next(e for e in events if e["type"] == "loaded")
    assert loaded["params"] == 64 and loaded["versions"] == {"toyengine": "0.1"}
    assert events[-1]["iterations"] == 5


def test_a_probe_that_fails_makes_the_engine_unusable_everywhere_with_the_reason(toy_backend, monkeypatch):
    module = importlib.import_module("toyplug.toy_backend")

    def broken(machine):
        raise RuntimeError("driver went away")

    monkeypatch.setattr(module, "probe", broken)
    cpu = next(t for t in targets.discover() if t["id"] == "cpu")
    assert "toyengine" not in cpu["engines"]
    assert cpu["engine_details"]["toyengine"]["reason"] == "Toy Engine's probe failed: driver went away"
    assert {"torch", "onnxruntime"} <= set(cpu["engines"])  # the others are unaffected
