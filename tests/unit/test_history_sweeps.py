"""Sweeps in the history (console.history: store, writer, schema v2): tables, tags, migration, and a
sweep record rebuilt from what was stored."""

from __future__ import annotations

import sqlite3

import old_history
import pytest
from sweep_samples import BASE

from console.history import HistoryStore, HistoryWriter, schema
from console.sweep import record_from_history


@pytest.fixture
def store(tmp_path):
    with HistoryStore(tmp_path / "history.db") as opened:
        yield opened


def test_sweeps_round_trip_in_the_store(store):
    grid = {"threads": [1, 2], "batch": [1, 2]}
    first = store.create_sweep("first", grid, base=BASE)
    second = store.create_sweep("", {"batch": [1]})
    runs = []
    for point in ({"threads": 1, "batch": 1}, {"threads": 1, "batch": 2}):
        run_id = store.create_run({**BASE, "batch": point["batch"], "threads": point["threads"]})
        store.tag_run(run_id, first, point)
        runs.append(run_id)
    store.finish_run(runs[0], "completed", summary={"throughput_per_s": 10.0, "latency_ms": {"p50": 1.0}})
    store.finish_run(runs[1], "failed", error="no such device")
    untagged = store.create_run(BASE)
    store.finish_sweep(first, "partial", summary={"knee": None, "impossible": []})

    listed = store.list_sweeps()
    assert [s["sweep_id"] for s in listed] == [second, first]  # newest first
    by_id = {s["sweep_id"]: s for s in listed}
    assert by_id[first]["grid"] == grid and by_id[first]["base"] == BASE and by_id[first]["name"] == "first"
    assert by_id[first]["status"] == "partial" and by_id[first]["ended_at"] >= by_id[first]["created_at"]
    assert (by_id[first]["runs"], by_id[first]["completed"]) == (2, 1)
    assert by_id[second]["status"] == "running" and by_id[second]["runs"] == 0
    assert by_id[first]["summary"] == {"knee": None, "impossible": []}
    assert store.list_sweeps(limit=1)[0]["sweep_id"] == second
    assert store.get_sweep(first[:6])["sweep_id"] == first and store.get_sweep("ffffffff") is None

    tagged = store.runs_of_sweep(first)
    assert [r["run_id"] for r in tagged] == runs
    assert tagged[0]["sweep_point"] == {"threads": 1, "batch": 1} and tagged[0]["sweep_id"] == first
    assert store.get_run(untagged)["sweep_id"] is None and store.get_run(untagged)["sweep_point"] is None
    assert store.runs_of_sweep(second) == []

    record = record_from_history(store.get_sweep(first), tagged)
    assert [p["status"] for p in record["points"]] == ["completed", "failed"]
    assert record["points"][0]["throughput_per_s"] == 10.0 and record["points"][1]["message"] == "no such device"
    assert [p["label"] for p in record["points"]] == ["1 thread · b1", "1 thread · b2"]  # labels from the grid


def test_sweep_writes_are_checked(store):
    with pytest.raises(ValueError, match="status must be one of"):
        store.finish_sweep("x", "done")
    with pytest.raises(Exception, match="no sweep"):
        store.finish_sweep("0" * 32, "completed")
    sweep_id = store.create_sweep("", {"batch": [1]})
    with pytest.raises(Exception, match="already exists"):
        store.create_sweep("", {"batch": [1]}, sweep_id=sweep_id)
    with pytest.raises(Exception, match="no run"):
        store.tag_run("0" * 32, sweep_id, {"batch": 1})


def test_a_running_sweep_becomes_interrupted_at_next_open(tmp_path):
    path = tmp_path / "history.db"
    with HistoryStore(path) as store:
        sweep_id = store.create_sweep("killed", {"batch": [1, 2]})
    with HistoryStore(path) as store:
        assert store.get_sweep(sweep_id)["status"] == "interrupted"


def test_a_version_1_history_gains_the_sweep_tables_and_keeps_its_runs(tmp_path, monkeypatch):
    path = tmp_path / "old.db"
    runs = [{"spec": BASE, "summary": {"throughput_per_s": 5.0}}]
    old_history.make(path, 1, runs)
    run_id = runs[0]["run_id"]
    with HistoryStore(path) as store:
        versions = [v for (v,) in store.db.execute("SELECT version FROM schema_version ORDER BY version")]
        assert versions == list(range(1, schema.LATEST_VERSION + 1))
        run = store.get_run(run_id)
        assert run["status"] == "completed" and run["summary"] == {"throughput_per_s": 5.0}
        assert run["sweep_id"] is None and run["sweep_point"] is None
        assert store.list_sweeps() == []
    conn = sqlite3.connect(path)
    try:
        indexes = {name for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type='index'")}
        assert {"idx_runs_sweep_id", "idx_sweeps_created_at"} <= indexes
    finally:
        conn.close()


def test_the_writer_records_sweeps_on_its_thread(tmp_path):
    path = tmp_path / "history.db"
    writer = HistoryWriter.open(path)
    try:
        sweep_id = writer.create_sweep("w", {"batch": [1, 2]}, base=BASE)
        run_id = writer.create_run({**BASE, "batch": 2})
        writer.tag_run(run_id, sweep_id, {"batch": 2})
        writer.finish_run(run_id, "completed", summary={"throughput_per_s": 3.0})
        writer.finish_sweep(sweep_id, "completed", summary={"knee": None})
        with pytest.raises(ValueError):
            writer.finish_sweep(sweep_id, "finished")
        assert writer.flush()
    finally:
        assert writer.close()
    with HistoryStore(path) as store:
        (sweep,) = store.list_sweeps()
        assert (sweep["sweep_id"], sweep["status"], sweep["runs"], sweep["completed"]) == (sweep_id, "completed", 1, 1)
        assert store.runs_of_sweep(sweep_id)[0]["sweep_point"] == {"batch": 2}
