"""The synthetic suite end to end: every graph runs on both engines (ONNX export checked against PyTorch), its
profile is taken and judged; sizes are tiny here, so only behaviour is asserted (verdicts at real sizes are the
benchmark's job: tests/benchmarks/test_verdicts.py)."""

import pytest

from console.analysis import bottleneck
from engines import catalog
from engines.catalog.synthetic import common as synthetic
from engines.spec import RunSpec
from engines.worker import run_spec

TINY = {
    "synth-gemm": {"rows": 8, "features": 32, "layers": 2},
    "synth-stream": {"rows": 64, "features": 32, "passes": 4},
    "synth-reduce": {"rows": 64, "features": 32},
    "synth-tiny-ops": {"rows": 1, "features": 4, "ops": 40},
    "synth-cached": {"rows": 8, "features": 32, "passes": 3},
    "synth-mixed": {"rows": 8, "features": 32, "hidden": 64},
}


@pytest.fixture(autouse=True)
def _cache(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("LABCONSOLE_CACHE", str(tmp_path_factory.getbasetemp() / "synthetic-cache"))


def events_of(spec):
    events = []
    run_spec(spec.to_dict(), events.append)
    errors = [e for e in events if e["type"] == "error"]
    assert not errors, errors[0]["message"]
    return events


def test_the_suite_is_in_the_catalog_with_its_sizes():
    names = [n for n in catalog.names() if catalog.get(n).task == catalog.SYNTHETIC]
    assert names == list(TINY)
    stream, cached = catalog.params_for("synth-stream"), catalog.params_for("synth-cached")
    assert synthetic.tensor_bytes(1, stream) >= 4 * (8 << 20)  # ≥ 4× an 8 MiB last-level cache by default
    assert synthetic.tensor_bytes(1, cached) <= 1 << 20
    assert catalog.get("synth-tiny-ops").params["ops"] >= 1000


@pytest.mark.parametrize("engine", ["torch", "onnxruntime"])
@pytest.mark.parametrize("name", list(TINY))
def test_every_synthetic_graph_runs_and_is_profiled_on_both_engines(name, engine):
    spec = RunSpec(model=name, engine=engine, model_params=TINY[name], iterations=5, warmup_s=0.02,
                   profile_iterations=3, threads=1)
    events = events_of(spec)
    by_type = {e["type"]: e for e in events}
    assert by_type["result"]["iterations"] == 5
    if engine == "onnxruntime":
        assert by_type["loaded"]["details"]["export"]["check"]["passed"]
    profile = by_type["profile"]
    assert profile["ops"] and profile["engine"] == engine
    run = {"spec": spec.to_dict(), "summary": {"cv": 0.05}, "ops": profile["ops"],
           "profile": {k: v for k, v in profile.items() if k != "ops"}, "machine": None, "counters": None}
    verdict = bottleneck.diagnose(run)
    assert verdict["class"] in (*bottleneck.CLASSES, bottleneck.INCONCLUSIVE) and verdict["sentence"]


def test_elementwise_in_place_and_out_of_place_compute_the_same():
    import torch

    from engines.catalog.synthetic import elementwise

    params = catalog.params_for("synth-stream", TINY["synth-stream"])
    model = elementwise.build(params)
    x = elementwise.example_inputs(2, params)[0]
    with torch.no_grad():
        in_place = model(x.clone())
    out_of_place = model(x.clone())
    torch.testing.assert_close(in_place, out_of_place.detach())
    assert elementwise.bytes_moved(1, params) == 2 * 4 * 64 * 32 * 4
