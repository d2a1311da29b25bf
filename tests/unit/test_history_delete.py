"""Deleting runs (HistoryStore.delete_runs, prunable): every row of a run goes in one transaction, nothing of
another run does, and a run a console is recording is refused."""

from __future__ import annotations

import sqlite3

import numpy as np
import pytest

from console.history import HistoryError, HistoryStore, open_reader

SPEC = {"model": "mlp", "engine": "torch", "target": "cpu", "batch": 1, "scenario": "single-stream"}
SUMMARY = {"valid": True, "latency_ms": {"p50": 1.0}}


def _full_run(store: HistoryStore, started_at: str | None = None, status: str = "completed") -> str:
    """A run with a row in every table that has a run_id column."""
    run_id = store.create_run(SPEC)
    store.add_latencies(run_id, np.arange(5) * 1000, np.full(5, 900))
    store.add_samples(run_id, [(1, "psutil", "cpu_percent", 12.0, "%", "measured")])
    store.add_ops(run_id, [{"op": "aten::mm", "calls": 3, "time_s": 0.001}])
    store.add_artifact(run_id, "trace", f"/tmp/{run_id}.json", 10)
    store.finish_run(run_id, status, summary=SUMMARY)
    store.set_tags(run_id, ["kept"])
    store.set_note(run_id, "a note")
    if started_at is not None:
        store.db.execute("UPDATE runs SET started_at = ? WHERE run_id = ?", [started_at, run_id])
        store.commit()
    return run_id


def _run_tables(conn: sqlite3.Connection) -> list[str]:
    tables = [name for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
    return [t for t in tables if any(c[1] == "run_id" for c in conn.execute(f'PRAGMA table_info("{t}")'))]


def _rows_of(path, run_id: str) -> dict[str, int]:
    """How many rows each table with a run_id column holds for this run."""
    conn = sqlite3.connect(path)
    try:
        return {table: conn.execute(f'SELECT COUNT(*) FROM "{table}" WHERE run_id = ?', [run_id]).fetchone()[0]
                for table in _run_tables(conn)}
    finally:
        conn.close()


def _orphans(path) -> dict[str, int]:
    """Rows, in any table with a run_id column, whose run is not in `runs`."""
    conn = sqlite3.connect(path)
    try:
        return {table: n for table in _run_tables(conn) if table != "runs" and (n := conn.execute(
            f'SELECT COUNT(*) FROM "{table}" WHERE run_id NOT IN (SELECT run_id FROM runs)').fetchone()[0])}
    finally:
        conn.close()


@pytest.fixture
def db(tmp_path):
    return tmp_path / "history.db"


def test_a_deleted_run_leaves_no_row_in_any_table_and_the_others_keep_all_of_theirs(db):
    with HistoryStore(db) as store:
        gone, kept = _full_run(store), _full_run(store)
        store.set_baseline(gone)
        before_kept = _rows_of(db, kept)
        assert all(before_kept[t] for t in ("latency_chunks", "samples", "ops", "artifacts", "run_facts", "runs"))
        assert _rows_of(db, gone)["baselines"] == 1

        result = store.delete_runs([gone])

        assert result["runs"] == [gone]
        assert result["rows"]["baselines"] == 1 and result["rows"]["runs"] == 1
        assert result["artifact_files"] == [f"/tmp/{gone}.json"]  # named, not removed
        assert store.get_run(gone) is None and store.baselines() == []
        assert [r["run_id"] for r in store.list_runs()] == [kept]
    assert set(_rows_of(db, gone).values()) == {0}
    assert _rows_of(db, kept) == before_kept
    assert _orphans(db) == {}
    with open_reader(db) as reader:
        assert reader.integrity_check() == "ok"
        assert reader.get_run(kept)["tags"] == ["kept"] and len(reader.latencies(kept)[0]) == 5


def test_every_table_with_a_run_id_column_is_covered(db):
    """A table a later schema adds with a run_id column loses the run's rows too (tables are found, not listed)."""
    with HistoryStore(db) as store:
        run_id = _full_run(store)
        store.db.execute("CREATE TABLE extra (run_id TEXT REFERENCES runs(run_id), x INTEGER)")
        store.db.execute("INSERT INTO extra VALUES (?, 1)", [run_id])
        store.commit()
        assert store.delete_runs([run_id])["rows"]["extra"] == 1
    assert _orphans(db) == {} and set(_rows_of(db, run_id).values()) == {0}


def test_an_unknown_id_refuses_the_whole_call(db):
    with HistoryStore(db) as store:
        run_id = _full_run(store)
        with pytest.raises(HistoryError, match="no run nope.*nothing was deleted") as caught:
            store.delete_runs([run_id, "nope"])
        assert "labconsole history" in caught.value.fix
        assert store.get_run(run_id) is not None
    assert all(_rows_of(db, run_id)[t] for t in ("latency_chunks", "samples", "ops", "runs"))


def test_a_failure_half_way_rolls_everything_back(db):
    with HistoryStore(db) as store:
        run_id = _full_run(store)
        before = _rows_of(db, run_id)
        store.db.execute("CREATE TRIGGER no_delete BEFORE DELETE ON runs BEGIN SELECT RAISE(ABORT, 'held'); END")
        store.commit()
        with pytest.raises(HistoryError):
            store.delete_runs([run_id])  # the children go first, then `runs` refuses: all of it is undone
        assert store.get_run(run_id) is not None
    assert _rows_of(db, run_id) == before


def test_a_run_a_console_is_recording_is_refused_and_one_left_by_a_dead_console_is_not(db):
    recording = HistoryStore(db)
    other = HistoryStore(db)
    try:
        live = recording.create_run(SPEC)  # `recording` now holds the writer lock
        recording.add_latencies(live, [1, 2], [5, 5])
        recording.commit()
        with pytest.raises(HistoryError, match="still running") as caught:
            other.delete_runs([live])
        assert "wait for the run to end" in caught.value.fix
        assert other.get_run(live)["status"] == "running"
        recording.finish_run(live, "completed", summary=SUMMARY)
        assert other.delete_runs([live])["runs"] == [live]
    finally:
        recording.close()
        other.close()


def test_deleting_nothing_is_a_no_op_and_a_run_named_twice_goes_once(db):
    with HistoryStore(db) as store:
        run_id = _full_run(store)
        assert store.delete_runs([]) == {"runs": [], "rows": {}, "artifact_files": []}
        assert store.delete_runs([run_id, run_id])["rows"]["runs"] == 1


def test_prunable_selects_by_age_and_status_and_never_a_running_run(db):
    with HistoryStore(db) as store:
        old_ok = _full_run(store, "2020-01-01T00:00:00.000000Z")
        old_failed = _full_run(store, "2020-01-02T00:00:00.000000Z", status="failed")
        _full_run(store)  # today
        running = store.create_run(SPEC)
        store.db.execute("UPDATE runs SET started_at = '2019-01-01T00:00:00.000000Z' WHERE run_id = ?", [running])
        store.commit()
        assert [r["run_id"] for r in store.prunable(30)] == [old_failed, old_ok]
        assert [r["run_id"] for r in store.prunable(30, status="failed")] == [old_failed]
        assert len(store.prunable(0)) == 3
        for bad in (-1, float("nan"), float("inf")):
            with pytest.raises(ValueError, match="days"):
                store.prunable(bad)
        with pytest.raises(ValueError, match="running"):
            store.prunable(1, status="running")


def test_a_sweep_goes_with_its_last_run_and_a_running_one_stays(db):
    with HistoryStore(db) as store:
        done = store.create_sweep("done", {"batch": [1, 2]}, SPEC)
        live = store.create_sweep("live", {"batch": [1]}, SPEC)
        first, second, third = _full_run(store), _full_run(store), _full_run(store)
        store.tag_run(first, done, {"batch": 1})
        store.tag_run(second, done, {"batch": 2})
        store.tag_run(third, live, {"batch": 1})
        store.finish_sweep(done, "completed")
        assert store.delete_runs([first])["rows"].get("sweeps") is None  # one run left: the sweep stays
        assert store.get_sweep(done) is not None
        assert store.delete_runs([second, third])["rows"]["sweeps"] == 1
        assert store.get_sweep(done) is None
        assert store.get_sweep(live)["status"] == "running"  # still running: its next runs need the row


def test_prune_keeps_the_baselines_unless_asked(db):
    with HistoryStore(db) as store:
        old = _full_run(store, "2020-01-01T00:00:00.000000Z")
        baseline = _full_run(store, "2020-01-02T00:00:00.000000Z")
        store.set_baseline(baseline)
        assert [r["run_id"] for r in store.prunable(30)] == [old]
        assert [r["run_id"] for r in store.prunable(30, include_baselines=True)] == [baseline, old]
