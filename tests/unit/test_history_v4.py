"""Schema v4: compact latencies, fingerprints and series, baselines, tags and notes, strict JSON, read-only
readers, and the migration of a v3 file written the way the v3 build wrote it."""

from __future__ import annotations

import json
import sqlite3

import numpy as np
import old_history
import pytest

from console.analysis import fingerprint as fp
from console.history import LATEST_VERSION, HistoryError, HistoryStore, latency_codec

SPEC = {"model": "mlp", "engine": "torch", "target": "cpu", "batch": 8, "scenario": "single-stream",
        "precision": "fp32", "duration_s": 5.0, "name": "a"}
VALID = {"valid": True, "latency_ms": {"p50": 1.0, "p99": 2.0}, "throughput_per_s": 100.0}


@pytest.fixture
def store(tmp_path):
    with HistoryStore(tmp_path / "history.db") as opened:
        yield opened


def _run(store, spec=SPEC, status="completed", summary=VALID, latencies=(1000, 1100, 1200)):
    run_id = store.create_run(spec)
    store.add_latencies(run_id, np.arange(len(latencies)) * 10_000, list(latencies))
    store.finish_run(run_id, status, summary=summary)
    return run_id


# ---- compact latencies
@pytest.mark.parametrize("case", ["closed loop", "overlapping queries", "huge values", "one iteration"])
def test_latency_chunks_round_trip_exactly(case):
    rng = np.random.default_rng(1)
    lat = rng.integers(100_000, 200_000, 5000)
    t = np.cumsum(lat + rng.integers(100, 900, 5000))
    if case == "overlapping queries":
        t = np.sort(rng.integers(0, 10**9, 5000))
    if case == "huge values":
        lat = rng.integers(0, 1 << 50, 5000)
        t = np.cumsum(lat) + (1 << 60)
    if case == "one iteration":
        t, lat = t[:1], lat[:1]
    t0, blob = latency_codec.encode(t, lat)
    back_t, back_lat = latency_codec.decode(t0, blob)
    assert back_t.tolist() == t.tolist() and back_lat.tolist() == lat.tolist()


def test_a_store_keeps_latencies_in_order_across_batches_and_commits(store):
    run_id = store.create_run(SPEC)
    starts, durations = np.arange(0, 30_000) * 1000, np.arange(30_000) % 977 + 500
    for lo in range(0, 30_000, 7000):
        store.add_latencies(run_id, starts[lo:lo + 7000], durations[lo:lo + 7000])
        if lo == 14_000:
            store.commit()
    assert store.latency_count(run_id) == 30_000
    t_ns, latency_ns = store.latencies(run_id)
    assert t_ns.tolist() == starts.tolist() and latency_ns.tolist() == durations.tolist()
    chunks = store.db.execute("SELECT COUNT(*) FROM latency_chunks WHERE run_id = ?", [run_id]).fetchone()[0]
    assert chunks == 2  # one per commit, not one per batch


def test_real_looking_latencies_take_under_four_bytes_each(store):
    rng = np.random.default_rng(2)
    lat = (500_000 * rng.lognormal(0, 0.01, 100_000)).astype(np.int64)
    t = np.cumsum(lat + rng.integers(200, 400, lat.size))
    run_id = store.create_run(SPEC)
    for lo in range(0, lat.size, 2000):  # a second of batches at 2000 iterations/s, committed every second
        store.add_latencies(run_id, t[lo:lo + 2000], lat[lo:lo + 2000])
    store.commit()
    stored = store.db.execute("SELECT SUM(LENGTH(data)) FROM latency_chunks WHERE run_id = ?", [run_id]).fetchone()[0]
    assert stored / lat.size < 4


def test_a_damaged_chunk_is_a_clear_error_naming_the_run(store):
    run_id = _run(store)
    store.db.execute("UPDATE latency_chunks SET data = ? WHERE run_id = ?", [b"LC\x01\x04garbage", run_id])
    with pytest.raises(HistoryError, match=f"latencies of run {run_id} cannot be decoded"):
        store.latencies(run_id)


def test_latencies_for_an_unknown_run_are_refused_at_once(store):
    with pytest.raises(HistoryError, match="no such run"):
        store.add_latencies("ghost", [1], [2])


# ---- fingerprints and series
def test_the_fingerprint_ignores_how_long_a_run_measured_but_not_what_it_measured(store):
    a = _run(store)
    b = _run(store, {**SPEC, "duration_s": 60.0, "name": "longer", "iterations": 5000})
    c = _run(store, {**SPEC, "batch": 16})
    runs = {run_id: store.get_run(run_id) for run_id in (a, b, c)}
    assert runs[a]["fingerprint"] == runs[b]["fingerprint"] != runs[c]["fingerprint"]
    assert runs[a]["configuration"]["host_id"] == store.host_id
    assert [r["run_id"] for r in store.series(runs[a]["fingerprint"])] == [a, b]  # oldest first
    configs = {row["fingerprint"]: row for row in store.configurations()}
    assert configs[runs[a]["fingerprint"]]["runs"] == 2 and configs[runs[c]["fingerprint"]]["runs"] == 1


def test_a_model_file_is_known_by_its_content_once_loaded(store):
    spec = {**SPEC, "model": "/models/resnet.onnx", "engine": "onnxruntime"}
    first = store.create_run(spec)
    renamed = store.create_run({**spec, "model": "/elsewhere/copy.onnx"})
    for run_id in (first, renamed):
        store.set_environment(run_id, {"engine": {"model_file": {"sha256": "ab" * 32}}})
    assert store.get_run(first)["fingerprint"] == store.get_run(renamed)["fingerprint"]
    assert store.get_run(first)["configuration"]["model"] == "sha256:" + "ab" * 32


def test_differences_tell_configuration_from_environment():
    run_a = {"spec": SPEC, "hostname": "box", "environment": {"engine": {"versions": {"torch": "2.12.0"}}}}
    run_b = {"spec": {**SPEC, "batch": 4}, "hostname": "box",
             "environment": {"engine": {"versions": {"torch": "2.13.0"}, "device_name": "cpu"}}}
    found = {d["field"]: d for d in fp.differences(run_a, run_b)}
    assert found["batch"]["kind"] == "configuration" and (found["batch"]["a"], found["batch"]["b"]) == (8, 4)
    assert found["version.torch"]["kind"] == "environment" and found["version.torch"]["b"] == "2.13.0"
    assert found["engine.device_name"] == {"field": "engine.device_name", "a": None, "b": "cpu",
                                           "kind": "environment"}
    same = fp.configuration(run_a["spec"], run_a["environment"], "box")
    upgraded = fp.configuration(run_a["spec"], run_b["environment"], "box")
    assert fp.fingerprint(same) == fp.fingerprint(upgraded)  # a series spans an engine upgrade


# ---- filters, tags, notes
def test_list_runs_filters(store):
    old = _run(store)
    store.db.execute("UPDATE runs SET started_at = '2026-01-05T00:00:00.000000Z' WHERE run_id = ?", [old])
    onnx = _run(store, {**SPEC, "engine": "onnxruntime", "precision": "int8"})
    invalid = _run(store, summary={"valid": False})
    store.set_tags(onnx, ["driver-555", " nightly ", "nightly", ""])
    assert store.get_run(onnx)["tags"] == ["driver-555", "nightly"]
    ids = lambda **f: {r["run_id"] for r in store.list_runs(**f)}  # noqa: E731
    assert ids(engine="onnxruntime") == {onnx} and ids(precision="int8") == {onnx}
    assert ids(precision="fp32") == {old, invalid}
    assert ids(tag="nightly") == {onnx} and ids(tag="night") == set()
    assert ids(valid=False) == {invalid} and ids(valid=True) == {old, onnx}
    assert ids(since="2026-02-01") == {onnx, invalid} and ids(until="2026-02-01") == {old}
    assert ids(hostname=store.hostname) == {old, onnx, invalid}
    with pytest.raises(ValueError, match="unknown run filter colour"):
        store.list_runs(colour="red")


def test_a_note_is_kept_and_cleared(store):
    run_id = _run(store)
    store.set_note(run_id, "  after the BIOS update ")
    assert store.get_run(run_id)["note"] == "after the BIOS update"
    store.set_note(run_id, "")
    assert store.get_run(run_id)["note"] is None
    with pytest.raises(HistoryError, match="no run"):
        store.set_note("0" * 32, "x")


# ---- baselines
def test_a_baseline_per_configuration(store):
    first, second = _run(store), _run(store)
    fingerprint = store.set_baseline(first)
    assert store.baseline_of(fingerprint)["run_id"] == first
    store.set_baseline(second)
    assert store.baseline_of(fingerprint)["run_id"] == second
    assert [b["run_id"] for b in store.baselines()] == [second]
    assert store.clear_baseline(fingerprint) and store.baseline_of(fingerprint) is None
    assert not store.clear_baseline(fingerprint)


@pytest.mark.parametrize("status, summary, why", [
    ("failed", VALID, "is failed"),
    ("completed", {"valid": False, "invalid_reasons": [{"detail": "only 12 iterations"}]}, "only 12 iterations"),
])
def test_a_failed_or_invalid_run_cannot_be_a_baseline(store, status, summary, why):
    run_id = _run(store, status=status, summary=summary)
    with pytest.raises(HistoryError, match=why) as info:
        store.set_baseline(run_id)
    assert info.value.fix
    assert store.baselines() == []


def test_a_summary_field_is_merged_in(store):
    run_id = _run(store)
    store.set_summary_field(run_id, "baseline", {"verdict": "slower", "ratio": 1.1})
    summary = store.get_run(run_id)["summary"]
    assert summary["baseline"]["verdict"] == "slower" and summary["throughput_per_s"] == 100.0


# ---- strict JSON and the view
def test_nan_is_stored_as_null_so_sqlite_json_functions_read_every_row(store):
    run_id = _run(store, summary={**VALID, "cv": float("nan"), "latency_ms": {"p50": 1.5, "p99": float("inf")}})
    text = store.db.execute("SELECT summary FROM runs WHERE run_id = ?", [run_id]).fetchone()[0]
    assert "NaN" not in text and "Infinity" not in text
    row = dict(zip(("p50_ms", "p99_ms", "valid"), store.db.execute(
        "SELECT p50_ms, p99_ms, valid FROM run_summary WHERE run_id = ?", [run_id]).fetchone(), strict=True))
    assert row == {"p50_ms": 1.5, "p99_ms": None, "valid": 1}


# ---- read-only readers
def test_a_read_only_reader_writes_nothing(tmp_path):
    path = tmp_path / "history.db"
    with HistoryStore(path) as writer:
        run_id = _run(writer)
        writer.create_run(SPEC)  # left running: a writing store would mark it interrupted
    before = path.read_bytes()
    with HistoryStore(path, read_only=True) as reader:
        assert reader.get_run(run_id)["status"] == "completed"
        assert {r["status"] for r in reader.list_runs()} == {"completed", "running"}
        assert reader.latencies(run_id)[1].tolist() == [1000, 1100, 1200]
        with pytest.raises(HistoryError):
            reader.set_note(run_id, "no")
    assert path.read_bytes() == before
    wal = tmp_path / "history.db-wal"  # SQLite's shared-memory index may appear; no page may be written
    assert not wal.exists() or wal.stat().st_size == 0


def test_a_read_only_reader_refuses_an_old_file_with_the_fix(tmp_path):
    path = tmp_path / "old.db"
    old_history.make(path, 3, [{}])
    before = path.read_bytes()
    with pytest.raises(HistoryError, match="schema version 3") as info:
        HistoryStore(path, read_only=True)
    assert "migrated" in info.value.fix and path.read_bytes() == before


# ---- migration of older files
@pytest.mark.parametrize("version", [1, 2, 3])
def test_an_older_history_migrates_with_every_latency_and_a_fingerprint(tmp_path, version):
    path = tmp_path / f"v{version}.db"
    rng = np.random.default_rng(3)
    lat = rng.integers(1000, 5000, 3000).tolist()
    runs = [{"spec": SPEC, "summary": {**VALID, "cv": float("nan")}, "latencies": list(zip(range(0, 3000 * 9000, 9000),
                                                                                             lat, strict=True)),
             "samples": [(5, "psutil", "cpu.util", 50.0, "%", "measured")]},
            {"spec": SPEC, "summary": VALID}, {"spec": {**SPEC, "batch": 2}, "status": "failed"}]
    old_history.make(path, version, runs)
    with HistoryStore(path) as store:
        assert store.db.execute("SELECT MAX(version) FROM schema_version").fetchone()[0] == LATEST_VERSION
        assert "latencies" not in store.db.table_names()
        first = store.get_run(runs[0]["run_id"])
        assert store.latencies(first["run_id"])[1].tolist() == lat
        assert store.latencies(first["run_id"])[0].tolist() == list(range(0, 3000 * 9000, 9000))
        assert first["summary"]["cv"] is None and first["tags"] == []
        assert first["configuration"]["host"] == "oldbox"
        assert [r["run_id"] for r in store.series(first["fingerprint"])] == [runs[0]["run_id"], runs[1]["run_id"]]
        assert store.samples(first["run_id"])[0]["metric"] == "cpu.util"
        assert store.db.execute("SELECT COUNT(*) FROM run_summary").fetchone()[0] == 3
    conn = sqlite3.connect(path)
    try:
        assert json.loads(conn.execute("SELECT json_extract(summary, '$.latency_ms') FROM runs WHERE run_id = ?",
                                       [runs[0]["run_id"]]).fetchone()[0]) == VALID["latency_ms"]
    finally:
        conn.close()


def test_run_rows_give_plain_columns_with_the_same_filters(store):
    run_id = _run(store, {**SPEC, "precision": "bf16"})
    _run(store)
    store.set_tags(run_id, ["x"])
    rows = store.run_rows(precision="bf16")
    assert [r["run_id"] for r in rows] == [run_id]
    assert rows[0]["p50_ms"] == 1.0 and rows[0]["throughput_per_s"] == 100.0 and rows[0]["tags"] == ["x"]
    assert rows[0]["hostname"] == store.hostname and rows[0]["valid"] == 1
    assert len(store.run_rows(limit=1)) == 1


def test_finishing_a_run_merges_its_per_commit_chunks(store, monkeypatch):
    from console.history import v4_upgrade
    monkeypatch.setattr(v4_upgrade, "CHUNK_MAX", 1000)
    run_id = store.create_run(SPEC)
    starts, durations = np.arange(2500) * 50, np.arange(2500) % 13 + 20
    for lo in range(0, 2500, 100):
        store.add_latencies(run_id, starts[lo:lo + 100], durations[lo:lo + 100])
        store.commit()
    store.finish_run(run_id, "completed", summary=VALID)
    sizes = [n for (n,) in store.db.execute("SELECT n FROM latency_chunks WHERE run_id = ? ORDER BY seq", [run_id])]
    assert sizes == [1000, 1000, 500]
    assert store.latencies(run_id)[1].tolist() == durations.tolist()
    assert store.get_run(run_id)["p50_ms"] == 1.0  # the summary's figures as plain columns


def test_open_reader_upgrades_an_old_file_once_then_reads_without_writing(tmp_path):
    from console.history import open_reader
    path = tmp_path / "old.db"
    old_history.make(path, 3, [{"summary": VALID, "latencies": [(0, 5), (10, 6)]}])
    with open_reader(path) as reader:
        assert reader.read_only and reader.list_runs()[0]["p50_ms"] == 1.0
    before = path.read_bytes()
    with open_reader(path) as reader:
        assert reader.latencies(reader.list_runs()[0]["run_id"])[1].tolist() == [5, 6]
    assert path.read_bytes() == before
    with pytest.raises(HistoryError, match="no history at") as info:
        open_reader(tmp_path / "missing.db")
    assert "run something first" in info.value.fix and not (tmp_path / "missing.db").exists()
