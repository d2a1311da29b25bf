"""The input-pipeline scenario's logic on a fake engine: the files' bytes reach the model, the result block has
every figure the verdict reads, and bad data or an engine that cannot be fed fails with the cause."""

import numpy as np
import pytest

from engines import protocol
from engines.backends.base import LoadedModel
from engines.datafiles import DataError
from engines.options import SpecError
from engines.scenarios import input_pipeline
from engines.spec import RunSpec

INPUTS = [{"name": "features", "shape": [2, 4], "dtype": "float32"}]


class FakeEngine:
    """Records every fed batch; `infer` does nothing (the scenario's bookkeeping is what is tested)."""

    def __init__(self):
        self.fed, self.calls = [], 0

    def model(self, feed=True):
        return LoadedModel(infer=self.infer, load_s=0.5, params=10, model_bytes=40,
                           details={"inputs": INPUTS}, feed=self.feed if feed else None)

    def feed(self, arrays):
        self.fed.append({k: v.copy() for k, v in arrays.items()})

    def infer(self):
        self.calls += 1


def spec(data_dir, **options):
    return RunSpec.from_dict({"model": "mlp", "batch": 2, "warmup_s": 0.0, "iterations": 6,
                              "scenario": "input-pipeline",
                              "scenario_options": {"data_dir": str(data_dir), **options}}).validate()


@pytest.fixture
def data(tmp_path):
    for index in range(3):
        np.save(tmp_path / f"s{index}.npy", np.full(4, index, dtype=np.float32))
    return tmp_path


def run(engine, run_spec, feed=True):
    events = []
    result = input_pipeline.run(engine.model(feed), run_spec, events.append, lambda: False)
    for event in events:
        protocol.check(event)
    return result, events


@pytest.mark.parametrize("workers", [0, 2])
def test_files_reach_the_model_and_the_block_has_every_figure(data, workers):
    engine = FakeEngine()
    result, events = run(engine, spec(data, loader_workers=workers, cache="warm"))
    assert result["iterations"] == 6 and result["samples"] == 12 and result["loader_workers"] == workers
    measured = engine.fed[-6:]
    assert all(set(f) == {"features"} and f["features"].shape == (2, 4) for f in measured)
    firsts = sorted(int(v) for f in engine.fed for v in f["features"][:, 0])
    assert set(firsts) == {0, 1, 2}  # every file was read, its values fed as written
    for key in ("wait_fraction", "feed_fraction", "compute_fraction"):
        assert 0.0 <= result[key] <= 1.0
    assert result["wait_fraction"] + result["feed_fraction"] + result["compute_fraction"] == pytest.approx(1.0)
    for key in ("samples_per_s", "disk_read_mb_s", "iops", "iowait", "cache_state", "cache_reason",
                "loader_read_mb_s", "loader_decode_ms_per_sample", "model_load_s", "model_read_note", "io_method"):
        assert key in result, key
    assert result["cache_state"] == "warm" and "--cache warm" in result["cache_reason"]
    assert result["data_files"] == 3 and result["sample_bytes"] == (data / "s0.npy").stat().st_size
    latencies = [x for e in events if e["type"] == "latencies" for x in e["latency_ns"]]
    assert len(latencies) == 6
    assert [e["phase"] for e in events if e["type"] == "phase"] == ["warmup", "measuring"]


def test_an_engine_that_cannot_be_fed_is_named(data):
    with pytest.raises(RuntimeError, match="engine torch cannot take fed inputs"):
        run(FakeEngine(), spec(data), feed=False)


def test_a_missing_directory_fails_before_anything_runs(tmp_path):
    engine = FakeEngine()
    with pytest.raises(DataError, match="does not exist"):
        run(engine, spec(tmp_path / "nope"))
    assert engine.calls == 0


def test_a_file_that_does_not_fit_fails_with_its_name(data):
    np.save(data / "s1.npy", np.zeros(5, dtype=np.float32))
    with pytest.raises(DataError, match=r"s1.npy holds shape 5 but input 'features' \(4 per sample"):
        run(FakeEngine(), spec(data, loader_workers=1))


def test_options_need_a_directory_and_refuse_a_checkpoint_of_a_file(tmp_path):
    with pytest.raises(SpecError, match="give --data-dir DIR"):
        RunSpec.from_dict({"model": "mlp", "scenario": "input-pipeline"}).validate()
    model = tmp_path / "m.onnx"
    model.write_bytes(b"x")
    with pytest.raises(SpecError, match="turn --checkpoint off for files"):
        RunSpec.from_dict({"model": str(model), "engine": "onnxruntime", "scenario": "input-pipeline",
                           "scenario_options": {"data_dir": str(tmp_path), "checkpoint": True}}).validate()


@pytest.mark.parametrize("asked, cold, storage, read, state", [
    ("warm", True, 1000, 1000, "warm"),      # warm asked for
    ("cold", False, 1000, 1000, "warm"),     # the OS cannot drop the cache
    ("cold", True, 900, 1000, "cold"),       # dropped and the reads reached storage
    ("cold", True, 10, 1000, "warm"),        # dropped, yet served from memory
    ("cold", True, None, 1000, "cold"),      # no counters to confirm: cold, said unconfirmed
])
def test_cold_is_claimed_only_when_dropped_and_confirmed(asked, cold, storage, read, state):
    got, reason = input_pipeline._cache_state(asked, cold, "why", storage, read)
    assert got == state and reason
    if storage is None:
        assert "not confirmed" in reason
    if (asked, cold, storage) == ("cold", True, 10):
        assert "1% of the bytes read came from storage" in reason
