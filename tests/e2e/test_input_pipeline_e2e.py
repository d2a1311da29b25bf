"""The input-pipeline scenario end to end on the catalog MLP: files made by make-data feed the real engine, the
run completes with its block, checkpoints are measured, and bad data fails the run with the file — stored, with
the history intact."""

import pytest

from console.history import HistoryStore, HistoryWriter
from console.run.session import RunSession
from engines import protocol
from engines.datafiles import layout_for_catalog
from engines.sample_writer import write_samples
from engines.spec import RunSpec
from engines.worker import run_spec

BASE = {"model": "mlp", "threads": 1, "batch": 4, "warmup_s": 0.1, "duration_s": 0.4, "scenario": "input-pipeline"}


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    folder = tmp_path_factory.mktemp("samples")
    write_samples(folder, layout_for_catalog("mlp"), 16, "npy")
    return folder


def run(**spec):
    events = []
    run_spec({**BASE, **spec}, events.append)
    for event in events:
        protocol.check(event)
    return events[-1], events


@pytest.mark.parametrize("engine", ["torch", "onnxruntime"])
def test_files_feed_the_engine_and_the_result_has_the_pipeline_figures(data, engine):
    last, events = run(engine=engine, scenario_options={"data_dir": str(data), "loader_workers": 2})
    assert last["type"] == "result", last.get("message")
    assert 0.0 <= last["wait_fraction"] <= 1.0 and last["loader_workers"] == 2
    assert last["samples_per_s"] > 0 and last["samples"] == 4 * last["iterations"]
    assert last["cache_state"] in ("cold", "warm") and last["cache_reason"]
    for key in ("disk_read_mb_s", "iops", "iowait", "loader_read_mb_s", "model_load_s"):
        assert key in last, key
    latencies = [x for e in events if e["type"] == "latencies" for x in e["latency_ns"]]
    assert len(latencies) == last["iterations"]


def test_checkpoint_save_and_load_are_measured_on_the_data_storage(data):
    last, _ = run(iterations=3, scenario_options={"data_dir": str(data), "checkpoint": True, "cache": "warm"})
    assert last["type"] == "result", last.get("message")
    assert last["checkpoint_bytes"] > 4 * 512 * 1024  # the MLP's first layer alone is 512 × 1024 floats
    assert last["checkpoint_save_mb_s"] > 0 and last["checkpoint_load_mb_s"] > 0
    assert last["checkpoint_dir"] == str(data)
    assert not list(data.glob(".labconsole-checkpoint-*"))  # removed afterwards


def test_a_file_that_does_not_decode_fails_the_run_and_the_history_keeps_it(tmp_path):
    folder = tmp_path / "bad"
    write_samples(folder, layout_for_catalog("mlp"), 4, "npy")
    (folder / "sample-000002.npy").write_bytes(b"not numpy")
    writer = HistoryWriter.open(tmp_path / "h.db")
    try:
        earlier = RunSession(RunSpec(duration_s=0.3, warmup_s=0.1), writer)
        earlier.start()
        assert earlier.wait(120)["status"] == "completed"
        session = RunSession(RunSpec.from_dict({**BASE, "scenario_options": {"data_dir": str(folder)}}), writer)
        session.start()
        record = session.wait(120)
    finally:
        writer.close()
    assert record["status"] == "failed"
    assert "sample-000002.npy is not an .npy file" in record["message"]
    with HistoryStore(tmp_path / "h.db") as store:
        stored = store.get_run(record["run_id"])
        assert stored["status"] == "failed" and "sample-000002.npy is not an .npy file" in stored["error"]
        assert store.get_run(earlier.run_id)["status"] == "completed"


def test_a_missing_directory_fails_the_run_naming_it(tmp_path):
    last, _ = run(scenario_options={"data_dir": str(tmp_path / "nowhere")})
    assert last["type"] == "error" and last["kind"] == "runtime"
    assert "nowhere does not exist" in last["message"] and "labconsole make-data" in last["message"]


def test_serial_loading_feeds_the_model_too(data):
    last, _ = run(iterations=2, scenario_options={"data_dir": str(data), "loader_workers": 0, "cache": "warm"})
    assert last["type"] == "result", last.get("message")
    assert last["iterations"] == 2 and last["loader_workers"] == 0 and last["loader_busy_fraction"] is None
