"""Storage faults are failures: what a run lost is counted, text SQLite cannot store is refused up front, and an
interrupted run gets a summary from what it stored."""

from __future__ import annotations

import sqlite3
import threading

import numpy as np
import pytest

from console.history import INTERRUPTED_ERROR, HistoryError, HistoryStore, HistoryWriter, v4_upgrade
from console.run.session import storage_problem

SPEC = {"model": "mlp", "engine": "torch", "target": "cpu", "batch": 2, "scenario": "single-stream"}
FULL = "database or disk is full"


@pytest.fixture
def db_path(tmp_path):
    return tmp_path / "history.db"


def _disk_fills_up(monkeypatch, full: threading.Event):
    """Latency chunks cannot be written while `full` is set, as on a disk that filled up mid-run."""
    real = v4_upgrade.insert_chunks

    def insert_chunks(*args, **kwargs):
        if full.is_set():
            raise sqlite3.OperationalError(FULL)
        return real(*args, **kwargs)

    monkeypatch.setattr(v4_upgrade, "insert_chunks", insert_chunks)


def test_a_disk_that_fills_mid_run_is_counted_against_the_run(db_path, monkeypatch):
    full = threading.Event()
    _disk_fills_up(monkeypatch, full)
    writer = HistoryWriter.open(db_path, commit_interval_s=0.05)
    try:
        run_id = writer.create_run(SPEC)
        other = writer.create_run(SPEC)
        writer.add_latencies(run_id, np.arange(10), np.full(10, 1000))
        assert writer.flush() and writer.unstored(run_id) is None
        full.set()
        writer.add_latencies(run_id, np.arange(10, 40), np.full(30, 1000))
        writer.finish_run(run_id, "completed", summary={"iterations": 40})
        assert not writer.flush(timeout=5)
        missing = writer.unstored(run_id)
        assert missing["iterations"] == 30 and missing["writes"] == 1  # the batch and the run's end
        assert isinstance(missing["error"], HistoryError) and "full" in missing["error"].problem
        assert "free disk space" in missing["error"].fix
        assert writer.unstored(other) is None  # another run lost nothing

        lost = storage_problem(writer, run_id, measured=40)
        assert lost["stored_iterations"] == 10 and lost["missing_iterations"] == 30
        assert "30 of its 40 measured iterations" in lost["message"] and "free disk space" in lost["message"]

        full.clear()  # space freed before the end: nothing is missing any more
        assert writer.flush(timeout=5)
        assert writer.unstored(run_id) is None and storage_problem(writer, run_id, 40) is None
    finally:
        writer.close()
    with HistoryStore(db_path) as store:
        assert store.latency_count(run_id) == 40 and store.get_run(run_id)["status"] == "completed"


def test_rows_still_unwritten_at_close_are_missing_and_close_says_so(db_path, monkeypatch):
    full = threading.Event()
    _disk_fills_up(monkeypatch, full)
    writer = HistoryWriter.open(db_path)
    run_id = writer.create_run(SPEC)
    assert writer.flush()
    full.set()
    writer.add_latencies(run_id, np.arange(5), np.full(5, 1000))
    assert writer.close() is False
    assert writer.flush() is False  # after close: says whether everything was committed
    missing = writer.unstored(run_id)
    assert missing["iterations"] == 5 and "full" in str(missing["error"])


def test_a_name_sqlite_cannot_store_is_refused_before_anything_is_measured(db_path):
    writer = HistoryWriter.open(db_path)
    try:
        with pytest.raises(HistoryError) as info:
            writer.create_run({**SPEC, "name": "bench-\udcff"})
        assert "name" in info.value.problem and "\\udcff" in info.value.problem
        assert "--name" in info.value.fix
        assert writer.flush() and writer.is_alive()
    finally:
        writer.close()
    with HistoryStore(db_path) as store:
        assert store.list_runs() == []
        with pytest.raises(HistoryError, match="model"):  # the store refuses it too, with the field named
            store.create_run({**SPEC, "model": "/models/r\udce9seau.onnx"})
        assert store.list_runs() == []


def test_data_of_a_run_whose_creation_was_refused_is_dropped_once_and_counted(db_path, monkeypatch):
    errors = []
    real = HistoryStore.create_run

    def refused(self, spec, run_id=None):
        raise HistoryError("creating the run was refused", "fix the spec.")

    writer = HistoryWriter.open(db_path, on_error=errors.append)
    try:
        monkeypatch.setattr(HistoryStore, "create_run", refused)
        run_id = writer.create_run(SPEC)
        for start in range(0, 30, 10):
            writer.add_latencies(run_id, np.arange(start, start + 10), np.full(10, 5))
        writer.finish_run(run_id, "completed")
        assert writer.flush()
        monkeypatch.setattr(HistoryStore, "create_run", real)
        assert len(errors) == 1 and "refused" in str(errors[0])  # said once, not once per batch
        missing = writer.unstored(run_id)
        assert missing["iterations"] == 30 and missing["writes"] == 2 and missing["error"] is errors[0]
    finally:
        writer.close()


def test_an_interrupted_run_gets_a_summary_from_the_latencies_it_stored(db_path):
    latency_ns = np.random.default_rng(3).integers(1_000_000, 3_000_000, 700)
    t_ns = np.cumsum(np.full(700, 4_000_000))
    store = HistoryStore(db_path)
    run_id = store.create_run(SPEC)
    done = store.create_run(SPEC)
    store.finish_run(done, "completed", summary={"iterations": 0})
    store.add_latencies(run_id, t_ns, latency_ns)
    store.commit()
    store.add_latencies(run_id, t_ns[-1] + np.arange(1, 51), np.full(50, 9_000_000))  # after the last commit
    store._abandon()  # the console dies: no close, no final commit
    with HistoryStore(db_path) as reopened:  # the next write-open recovers it
        run = reopened.get_run(run_id)
        summary = run["summary"]
        assert run["status"] == "interrupted" and run["error"] == INTERRUPTED_ERROR
        assert summary["iterations"] == 700 == reopened.latency_count(run_id)
        assert summary["latency_ms"]["p50"] == pytest.approx(np.median(latency_ns) / 1e6)
        assert summary["batch"] == 2
        expected_s = (t_ns[-1] + latency_ns[-1] - t_ns[0]) / 1e9
        assert summary["throughput_per_s"] == pytest.approx(700 * 2 / expected_s)
        assert summary["valid"] is False and summary["invalid_reasons"][0]["rule"] == "interrupted"
        assert "700 iterations stored" in summary["invalid_reasons"][0]["detail"]
        assert summary["stored"]["complete"] is False and summary["stored"]["stored_iterations"] == 700
        row = next(r for r in reopened.run_rows() if r["run_id"] == run_id)  # the plain columns too
        assert row["p50_ms"] == pytest.approx(summary["latency_ms"]["p50"]) and row["valid"] == 0
        assert reopened.get_run(done)["summary"] == {"iterations": 0}  # a finished run is left alone


def test_an_interrupted_run_without_latencies_still_gets_an_honest_summary(db_path):
    store = HistoryStore(db_path)
    run_id = store.create_run(SPEC)
    store._abandon()
    with HistoryStore(db_path) as reopened:
        summary = reopened.get_run(run_id)["summary"]
        assert summary["iterations"] == 0 and summary["valid"] is False
        assert summary["stored"]["stored_iterations"] == 0


def test_a_summary_stored_with_what_the_history_lacked_under_storage_still_reads(db_path):
    """Before issue 24 summary["storage"] held either the findings' storage reads or what the history lacked; a
    row stored in the old shape reads with the latter under "stored", and a storage finding stays "storage"."""
    lacked = {"complete": False, "stored_iterations": 360, "missing_iterations": 40, "message": "40 missing"}
    finding = {"model_read_gbs": 1.2, "storage_read_gbs": 2.0, "model_read_of_ceiling": 0.6}
    with HistoryStore(db_path) as store:
        old = store.create_run(SPEC)
        store.finish_run(old, "failed", summary={"iterations": 400, "storage": dict(lacked)}, error="40 missing")
        read = store.create_run(SPEC)
        store.finish_run(read, "completed", summary={"iterations": 400, "storage": dict(finding)})
        both = store.create_run(SPEC)
        store.finish_run(both, "failed", summary={"iterations": 400, "storage": finding, "stored": lacked})
    with HistoryStore(db_path) as store:
        assert store.get_run(old)["summary"] == {"iterations": 400, "stored": lacked}
        assert store.get_run(read)["summary"] == {"iterations": 400, "storage": finding}
        assert store.get_run(both)["summary"] == {"iterations": 400, "storage": finding, "stored": lacked}
        listed = {run["run_id"]: run["summary"] for run in store.list_runs()}
        assert listed[old] == {"iterations": 400, "stored": lacked} and listed[read]["storage"] == finding
