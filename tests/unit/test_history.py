"""HistoryStore: schema, round-trips, and the files it must refuse without touching them."""

from __future__ import annotations

import dataclasses
import os
import sqlite3
import uuid

import numpy as np
import pytest

from console.history import INTERRUPTED_ERROR, LATEST_VERSION, HistoryError, HistoryStore, schema
from console.history.errors import translate

SPEC = {"model": "mlp", "engine": "torch", "target": "cpu", "batch": 8, "scenario": "single-stream",
        "name": "baseline", "limits": {"load_timeout_s": 300.0}, "threads": None}


@pytest.fixture
def db_path(tmp_path):
    return tmp_path / "nested" / "dir" / "history.db"


@pytest.fixture
def store(db_path):
    with HistoryStore(db_path) as opened:
        yield opened


def _bytes(path):
    return path.read_bytes()


# ---- runs
def test_create_finish_list_newest_first_and_json_round_trip(store):
    ids = [store.create_run({**SPEC, "name": f"run{i}"}) for i in range(3)]
    assert all(len(run_id) == 32 and uuid.UUID(hex=run_id).version == 4 for run_id in ids)
    summary = {"p50_ms": 1.25, "valid": True, "rules": ["p99 needs 662 samples"], "nested": {"cv": 0.03},
               "count": np.int64(7), "mean": np.float64(2.5)}
    store.finish_run(ids[1], "completed", summary=summary, environment={"torch": "2.3"})
    store.finish_run(ids[2], "failed", error="worker crashed: CUDA OOM")

    runs = store.list_runs()
    assert [run["run_id"] for run in runs] == ids[::-1]
    by_id = {run["run_id"]: run for run in runs}
    assert by_id[ids[0]]["status"] == "running" and by_id[ids[0]]["ended_at"] is None
    assert by_id[ids[0]]["summary"] is None and by_id[ids[0]]["environment"] is None
    done = by_id[ids[1]]
    assert done["status"] == "completed"
    assert done["summary"] == {"p50_ms": 1.25, "valid": True, "rules": ["p99 needs 662 samples"],
                               "nested": {"cv": 0.03}, "count": 7, "mean": 2.5}
    assert done["environment"] == {"torch": "2.3"}
    assert done["spec"] == {**SPEC, "name": "run1"}
    assert (done["model"], done["engine"], done["target"], done["batch"], done["scenario"], done["name"]) == (
        "mlp", "torch", "cpu", 8, "single-stream", "run1")
    assert done["host_id"] == store.host_id
    assert done["started_at"] <= done["ended_at"]
    assert done["started_at"].endswith("Z")
    assert by_id[ids[2]]["error"] == "worker crashed: CUDA OOM"

    assert [run["run_id"] for run in store.list_runs(limit=2)] == ids[:0:-1]
    assert [run["run_id"] for run in store.list_runs(status="failed")] == [ids[2]]
    assert store.list_runs(status="cancelled") == []
    with pytest.raises(ValueError, match="status must be one of"):
        store.list_runs(status="done")


def test_finish_keeps_stored_values_that_are_not_given(store):
    run_id = store.create_run(SPEC)
    store.set_environment(run_id, {"driver": "550.54"})
    store.finish_run(run_id, "cancelled")
    run = store.get_run(run_id)
    assert run["status"] == "cancelled" and run["environment"] == {"driver": "550.54"} and run["error"] is None


def test_finish_rejects_unknown_run_and_bad_status(store):
    with pytest.raises(HistoryError, match="no run nope") as info:
        store.finish_run("nope", "completed")
    assert info.value.fix
    run_id = store.create_run(SPEC)
    with pytest.raises(ValueError, match="status must be one of"):
        store.finish_run(run_id, "running")
    with pytest.raises(HistoryError, match="no run"):
        store.set_environment("nope", {})


def test_explicit_run_id_and_duplicate(store):
    assert store.create_run(SPEC, run_id="my-run-0001") == "my-run-0001"
    with pytest.raises(HistoryError, match="already exists") as info:
        store.create_run(SPEC, run_id="my-run-0001")
    assert "Fix:" in str(info.value)


def test_dataclass_spec_is_stored_as_json(store):
    @dataclasses.dataclass
    class Limits:
        stall_timeout_s: float = 60.0

    @dataclasses.dataclass
    class Spec:
        model: str = "resnet"
        batch: int = 4
        limits: Limits = dataclasses.field(default_factory=Limits)

    run = store.get_run(store.create_run(Spec()))
    assert run["spec"] == {"model": "resnet", "batch": 4, "limits": {"stall_timeout_s": 60.0}}
    assert run["model"] == "resnet" and run["batch"] == 4 and run["engine"] is None


def test_unserialisable_spec_is_a_value_error(store):
    with pytest.raises(ValueError, match="spec cannot be stored as JSON"):
        store.create_run({"model": object()})
    assert store.list_runs() == []


def test_get_run_by_id_prefix_ambiguous_and_missing(store):
    a = store.create_run(SPEC, run_id="abcd1111" + "0" * 24)
    b = store.create_run(SPEC, run_id="abcd2222" + "0" * 24)
    assert store.get_run(a)["run_id"] == a
    assert store.get_run("abcd1")["run_id"] == a
    assert store.get_run(" abcd22 ")["run_id"] == b
    with pytest.raises(HistoryError) as info:
        store.get_run("abcd")
    assert a in str(info.value) and b in str(info.value) and "more characters" in info.value.fix
    with pytest.raises(HistoryError, match="too short"):
        store.get_run("abc")
    assert store.get_run("ffff") is None
    assert store.get_run("abcd9") is None


# ---- latencies and samples
def test_latencies_round_trip_in_arrival_order(store):
    """Speed is a benchmark's business (make bench), not this test's: a busy machine must not fail it."""
    run_id, other = store.create_run(SPEC), store.create_run(SPEC)
    n = 100_000
    rng = np.random.default_rng(1)
    t_ns = np.cumsum(rng.integers(1_000, 50_000, n)).astype(np.int64)
    lat = rng.integers(10_000, 5_000_000, n).astype(np.int64)
    store.add_latencies(run_id, t_ns, lat)
    store.commit()

    store.add_latencies(other, [5, 6], [7, 8])
    store.add_latencies(run_id, [30, 10, 20], [3, 1, 2])  # arrival order, not time order, is kept
    store.commit()
    got_t, got_lat = store.latencies(run_id)
    assert got_t.dtype == np.int64 and got_lat.dtype == np.int64
    assert len(got_t) == n + 3
    np.testing.assert_array_equal(got_t[:n], t_ns)
    np.testing.assert_array_equal(got_lat[:n], lat)
    assert got_t[n:].tolist() == [30, 10, 20] and got_lat[n:].tolist() == [3, 1, 2]
    assert [a.tolist() for a in store.latencies(other)] == [[5, 6], [7, 8]]
    empty_t, empty_lat = store.latencies("no-such-run")
    assert empty_t.shape == (0,) and empty_lat.shape == (0,) and empty_t.dtype == np.int64


def test_latencies_reject_mismatched_or_fractional_input(store):
    run_id = store.create_run(SPEC)
    with pytest.raises(ValueError, match="differ in length"):
        store.add_latencies(run_id, [1, 2], [1])
    with pytest.raises(ValueError, match="integer nanoseconds"):
        store.add_latencies(run_id, [1.5], [2.0])
    assert len(store.latencies(run_id)[0]) == 0


def test_data_for_an_unknown_run_is_refused(store):
    with pytest.raises(HistoryError, match="refused") as info:
        store.add_latencies("ghost", [1], [2])
    assert "create_run" in info.value.fix


def test_samples_round_trip_ordered_by_time(store):
    run_id = store.create_run(SPEC)
    store.add_samples(run_id, [
        (300, "nvml", "gpu.power", 250.5, "W", "measured"),
        (100, "nvml", "gpu.power", 240.0, "W", "measured"),
        (200, "psutil", "cpu.util", np.float32(55.5), "%", "measured"),
        (400, "nvml", "gpu.energy", 12.0, "J", "integrated"),
        (500, "model", "gpu.power", 300.0, "W", "estimated"),
    ])
    store.commit()
    rows = store.samples(run_id)
    assert [row["t_ns"] for row in rows] == [100, 200, 300, 400, 500]
    assert rows[0] == {"t_ns": 100, "source": "nvml", "metric": "gpu.power", "value": 240.0, "unit": "W",
                       "method": "measured"}
    assert rows[1]["value"] == pytest.approx(55.5)
    power = store.samples(run_id, metric="gpu.power")
    assert [(row["t_ns"], row["value"], row["method"]) for row in power] == [
        (100, 240.0, "measured"), (300, 250.5, "measured"), (500, 300.0, "estimated")]
    assert store.metrics(run_id) == ["cpu.util", "gpu.energy", "gpu.power"]
    with pytest.raises(ValueError, match="method must be one of"):
        store.add_samples(run_id, [(1, "x", "y", 1.0, "W", "guessed")])


# ---- file settings
def test_wal_mode_synchronous_and_integrity(store, db_path):
    other = sqlite3.connect(db_path)
    try:
        assert other.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    finally:
        other.close()
    assert store.db.execute("PRAGMA synchronous").fetchone()[0] == 1  # NORMAL
    assert store.db.execute("PRAGMA busy_timeout").fetchone()[0] == 5000
    assert store.integrity_check() == "ok"
    assert store.path == db_path and db_path.parent.is_dir()


def test_schema_version_recorded(store, db_path):
    rows = store.db.execute("SELECT version, applied_at FROM schema_version").fetchall()
    assert [row[0] for row in rows] == list(range(1, LATEST_VERSION + 1))  # a new file: every step, in order
    assert set(store.db.table_names()) >= {"schema_version", "hosts", "runs", "latency_chunks", "samples", "baselines"}
    indexes = {name for (name,) in store.db.execute("SELECT name FROM sqlite_master WHERE type='index'")}
    assert {"idx_runs_listing", "idx_run_facts_fingerprint", "idx_samples_run_id_metric"} <= indexes


def test_host_registered_once_with_stable_id(db_path):
    with HistoryStore(db_path) as first:
        host_id = first.host_id
        host = first.db.execute("SELECT * FROM hosts").fetchall()
    with HistoryStore(db_path) as second:
        assert second.host_id == host_id
        assert second.db.execute("SELECT * FROM hosts").fetchall() == host  # first_seen kept
    assert uuid.UUID(host_id).version == 5


def test_empty_file_is_initialised(tmp_path):
    path = tmp_path / "empty.db"
    path.write_bytes(b"")
    with HistoryStore(path) as store:
        assert store.list_runs() == []
    assert path.read_bytes().startswith(b"SQLite format 3\x00")


# ---- files that must be refused, untouched
@pytest.mark.parametrize("content", [os.urandom(4096), b"just some notes\nnot a database\n",
                                     b"SQLite format 3\x00" + b"\xff" * 84 + os.urandom(4000)])
def test_not_an_sqlite_database_is_left_untouched(tmp_path, content):
    path = tmp_path / "foo.db"
    path.write_bytes(content)
    with pytest.raises(HistoryError) as info:
        HistoryStore(path)
    message = str(info.value)
    assert "not an SQLite database" in message and "Fix:" in message and str(path) in message
    assert "left untouched" in message
    assert "--db" in info.value.fix and info.value.problem
    assert _bytes(path) == content
    assert sorted(p.name for p in tmp_path.iterdir()) == ["foo.db"]


def test_unwritable_path_under_a_regular_file(tmp_path):
    blocker = tmp_path / "afile"
    blocker.write_text("I am a file")
    with pytest.raises(HistoryError) as info:
        HistoryStore(blocker / "x.db")
    assert "cannot write the history database" in str(info.value)
    assert str(blocker / "x.db") in str(info.value)
    assert "--db PATH" in info.value.fix and "LABCONSOLE_DB" in info.value.fix
    assert blocker.read_text() == "I am a file"


def test_a_directory_is_not_a_database_file(tmp_path):
    with pytest.raises(HistoryError, match="is a directory") as info:
        HistoryStore(tmp_path)
    assert "--db" in info.value.fix


def test_newer_schema_is_refused_and_file_untouched(db_path):
    with HistoryStore(db_path) as store:
        store.create_run(SPEC)
    conn = sqlite3.connect(db_path)
    conn.execute("INSERT INTO schema_version VALUES (?, '2099-01-01T00:00:00Z')", (LATEST_VERSION + 1,))
    conn.commit()
    conn.close()
    before = _bytes(db_path)
    with pytest.raises(HistoryError) as info:
        HistoryStore(db_path)
    assert "newer Lab Console" in str(info.value) and "upgrade Lab Console" in info.value.fix
    assert _bytes(db_path) == before


def test_foreign_sqlite_database_is_refused_untouched(tmp_path):
    path = tmp_path / "other.db"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE invoices (id INTEGER PRIMARY KEY, total REAL)")
    conn.commit()
    conn.close()
    before = _bytes(path)
    with pytest.raises(HistoryError, match="not a Lab Console history") as info:
        HistoryStore(path)
    assert "invoices" in str(info.value) and "--db" in info.value.fix
    assert _bytes(path) == before


# ---- migrations
def test_older_file_gets_missing_migrations_in_one_go(db_path, monkeypatch):
    with HistoryStore(db_path) as store:
        run_id = store.create_run(SPEC)

    def v2(db):
        db["verdicts"].create({"name": str, "run_id": str}, pk="name")

    def v3(db):
        db.execute("ALTER TABLE runs ADD COLUMN verdict TEXT")

    n = LATEST_VERSION
    monkeypatch.setattr(schema, "MIGRATIONS", [*schema.MIGRATIONS, (n + 1, v2), (n + 2, v3)])
    monkeypatch.setattr(schema, "LATEST_VERSION", n + 2)
    with HistoryStore(db_path) as store:
        versions = [row[0] for row in store.db.execute("SELECT version FROM schema_version ORDER BY version")]
        assert versions == list(range(1, n + 3))
        assert "verdicts" in store.db.table_names()
        assert store.get_run(run_id)["verdict"] is None


def test_failed_migration_leaves_the_file_at_its_old_version(db_path, monkeypatch):
    with HistoryStore(db_path):
        pass

    def v2(db):
        db.execute("CREATE TABLE verdicts (name TEXT)")

    def v3(db):
        db.execute("INSERT INTO no_such_table VALUES (1)")

    n = LATEST_VERSION
    monkeypatch.setattr(schema, "MIGRATIONS", [*schema.MIGRATIONS, (n + 1, v2), (n + 2, v3)])
    monkeypatch.setattr(schema, "LATEST_VERSION", n + 2)
    with pytest.raises(HistoryError):
        HistoryStore(db_path)
    conn = sqlite3.connect(db_path)
    try:
        assert conn.execute("SELECT MAX(version) FROM schema_version").fetchone()[0] == n
        assert conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'verdicts'").fetchone() is None
    finally:
        conn.close()


# ---- interrupted runs
def test_running_runs_become_interrupted_at_next_open(db_path):
    store = HistoryStore(db_path)
    run_id = store.create_run(SPEC)
    done = store.create_run(SPEC)
    store.add_latencies(run_id, [1, 2, 3], [10, 20, 30])
    store.finish_run(done, "completed")  # commits the latencies too
    store.close()
    with HistoryStore(db_path) as reopened:
        run = reopened.get_run(run_id)
        assert run["status"] == "interrupted"
        assert run["error"] == INTERRUPTED_ERROR
        assert run["ended_at"] is not None
        assert reopened.latencies(run_id)[1].tolist() == [10, 20, 30]
        assert reopened.get_run(done)["status"] == "completed"


def test_a_live_writer_keeps_its_running_runs(db_path):
    writer = HistoryStore(db_path)
    run_id = writer.create_run(SPEC)
    with HistoryStore(db_path) as reader:  # e.g. `labconsole history` while the window records
        assert reader.get_run(run_id)["status"] == "running"
    writer.finish_run(run_id, "completed")
    second = writer.create_run(SPEC)
    writer.close()
    with HistoryStore(db_path) as later:
        assert later.get_run(run_id)["status"] == "completed"
        assert later.get_run(second)["status"] == "interrupted"


def test_closed_store_raises_history_error(db_path):
    store = HistoryStore(db_path)
    store.close()
    store.close()
    with pytest.raises(HistoryError, match="closed"):
        store.list_runs()


def test_a_real_disk_full_error_names_the_fix_and_keeps_committed_data(store):
    run_id = store.create_run(SPEC)
    store.add_latencies(run_id, [1, 2], [3, 4])
    store.commit()
    pages = store.db.execute("PRAGMA page_count").fetchone()[0]
    store.db.execute(f"PRAGMA max_page_count = {pages}")  # SQLite answers SQLITE_FULL past this size
    with pytest.raises(HistoryError) as info:
        store.add_latencies(run_id, np.arange(200_000), np.arange(200_000))
        store.commit()
    assert "full" in info.value.problem and "free disk space" in info.value.fix and info.value.transient
    store.rollback()
    assert store.latencies(run_id)[1].tolist() == [3, 4]
    assert store.integrity_check() == "ok"


# ---- error messages
def test_history_error_names_problem_and_fix():
    err = HistoryError("the thing broke.", "do the other thing.")
    assert str(err) == "the thing broke. Fix: do the other thing."
    assert err.problem == "the thing broke" and err.fix == "do the other thing."


@pytest.mark.parametrize(("message", "expected", "transient"), [
    ("database or disk is full", "free disk space", True),
    ("disk I/O error", "mounted", True),
    ("attempt to write a readonly database", "writable path", True),
    ("database is locked", "close the other program", True),
    ("database disk image is malformed", ".recover", False),
])
def test_sqlite_errors_translate_to_a_fix(message, expected, transient, tmp_path):
    err = translate(sqlite3.OperationalError(message), tmp_path / "h.db", "recording latencies")
    assert expected in err.fix and "Fix:" in str(err) and str(tmp_path / "h.db") in str(err)
    assert err.transient is transient


def test_machine_cards_ops_and_artifacts_are_kept_and_read_back(tmp_path):
    """Schema v3: a target's ceilings per host, a run's per-op profile, files kept with a run."""
    from console.history import HistoryStore, HistoryWriter

    path = tmp_path / "h.db"
    writer = HistoryWriter.open(path)
    run_id = writer.create_run({"model": "mlp", "engine": "torch", "target": "cpu", "batch": 1})
    writer.add_machine_card({"target": "cpu", "host": "bench-a", "measured_at": "2026-01-01T00:00:00Z",
                             "peak_flops": {"fp32": 1e11}})
    writer.add_machine_card({"target": "cpu", "host": "bench-a", "measured_at": "2026-02-01T00:00:00Z",
                             "peak_flops": {"fp32": 2e11}})
    writer.add_ops(run_id, [{"op": "aten::addmm", "calls": 3, "time_s": 0.002, "flops": 6e6, "bytes": 1e5,
                             "shapes": [[1, 512]]}, {"op": "aten::gelu", "calls": 3, "time_s": 0.001}])
    writer.add_artifact(run_id, "trace", str(tmp_path / "t.json"), 10)
    writer.finish_run(run_id, "completed", {"iterations": 3})
    assert writer.close()
    with HistoryStore(path) as store:
        cards = store.machine_cards(hostname="bench-a", target="cpu")
        assert [c["peak_flops"]["fp32"] for c in cards] == [2e11, 1e11]
        assert len(store.machine_cards(latest_only=True)) == 1
        ops = store.ops(run_id)
        assert ops[0] == {"op": "aten::addmm", "calls": 3, "time_s": 0.002, "flops": 6e6, "bytes": 1e5,
                          "shapes": [[1, 512]]}
        assert ops[1]["flops"] is None
        assert [a["kind"] for a in store.artifacts(run_id)] == ["trace"]
